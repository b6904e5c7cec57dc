#include "models/recording_backend.hpp"

#include <stdexcept>

#include "common/check.hpp"

namespace sb::models {

Tensor RecordingBackend::Held::get() const {
  std::shared_ptr<void> alive = storage.lock();
  if (!alive)
    throw std::logic_error("a recorded step was replayed after one of its tensors (" + shape.str() +
                           ") was freed: it should have been recorded afresh");
  return Tensor(shape, std::move(alive));
}

void RecordingBackend::run(std::function<void()> op) {
  if (capturing_) pending_.push_back(std::move(op));
  else op();
}

void RecordingBackend::refuse_while_capturing(const char* what) const {
  if (capturing_) throw std::logic_error(std::string(what) + " while capturing a step");
}

// ---- what a capture cannot hold ---------------------------------------------------------------------

Tensor RecordingBackend::allocate(Shape shape) {
  refuse_while_capturing("allocating a tensor");
  return inner_->allocate(shape);
}

void RecordingBackend::write(Tensor& t, std::span<const float> nchw) {
  refuse_while_capturing("writing a tensor from the host");
  inner_->write(t, nchw);
}

void RecordingBackend::read(const Tensor& t, std::span<float> nchw) {
  refuse_while_capturing("reading a tensor back");
  inner_->read(t, nchw);
}

double RecordingBackend::read_scalar(const Tensor& scalar) {
  refuse_while_capturing("reading a tensor back");
  return inner_->read_scalar(scalar);
}

double RecordingBackend::sum_of_squares(const Tensor& t) {
  refuse_while_capturing("reading a sum back");
  return inner_->sum_of_squares(t);
}

std::vector<double> RecordingBackend::sums_of_squares(std::span<const Tensor* const> tensors) {
  refuse_while_capturing("reading sums back");
  return inner_->sums_of_squares(tensors);
}

void RecordingBackend::keep_fp32_master(Tensor& t) {
  refuse_while_capturing("allocating a master copy");
  inner_->keep_fp32_master(t);
}

void RecordingBackend::synchronize() {
  refuse_while_capturing("waiting for the device");
  inner_->synchronize();
}

// ---- recording ----------------------------------------------------------------------------------------

void RecordingBackend::begin_capture() {
  SB_CHECK(!capturing_, "begin_capture() while a capture is open");
  pending_.clear();
  capturing_ = true;
}

void RecordingBackend::end_capture(bool keep) {
  if (!capturing_) {
    if (keep) throw std::logic_error("end_capture() without begin_capture()");
    return;
  }
  capturing_ = false;
  if (keep) recording_ = std::move(pending_);
  pending_.clear();
}

void RecordingBackend::replay() {
  if (capturing_) throw std::logic_error("replay() while capturing");
  if (recording_.empty()) throw std::logic_error("replay() before a step was captured");
  for (const std::function<void()>& op : recording_) op();
}

// ---- the ops: run now, or kept with their tensors held by address ----------------------------------------

void RecordingBackend::fill(Tensor& t, float value) {
  run([this, t = hold(t), value] {
    Tensor out = t.get();
    inner_->fill(out, value);
  });
}

void RecordingBackend::copy(const Tensor& from, Tensor& to) {
  run([this, from = hold(from), to = hold(to)] {
    Tensor out = to.get();
    inner_->copy(from.get(), out);
  });
}

void RecordingBackend::conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) {
  run([this, x = hold(x), w = hold(w), y = hold(y), g] {
    Tensor out = y.get();
    inner_->conv_forward(x.get(), w.get(), out, g);
  });
}

void RecordingBackend::conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) {
  run([this, dy = hold(dy), w = hold(w), dx = hold(dx), g] {
    Tensor out = dx.get();
    inner_->conv_backward_data(dy.get(), w.get(), out, g);
  });
}

void RecordingBackend::conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) {
  run([this, x = hold(x), dy = hold(dy), dw = hold(dw), g] {
    Tensor out = dw.get();
    inner_->conv_backward_weights(x.get(), dy.get(), out, g);
  });
}

void RecordingBackend::batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                                  Tensor& mean, Tensor& variance, float epsilon, bool relu,
                                                  const Tensor* residual) {
  run([this, x = hold(x), gamma = hold(gamma), beta = hold(beta), y = hold(y), mean = hold(mean),
       variance = hold(variance), epsilon, relu, with_residual = residual != nullptr,
       residual = residual ? hold(*residual) : Held{}] {
    Tensor out = y.get(), m = mean.get(), v = variance.get(), r;
    if (with_residual) r = residual.get();
    inner_->batchnorm_forward_training(x.get(), gamma.get(), beta.get(), out, m, v, epsilon, relu,
                                       with_residual ? &r : nullptr);
  });
}

void RecordingBackend::batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                   const Tensor& mean, const Tensor& variance, Tensor& y,
                                                   float epsilon, bool relu, const Tensor* residual) {
  run([this, x = hold(x), gamma = hold(gamma), beta = hold(beta), mean = hold(mean), variance = hold(variance),
       y = hold(y), epsilon, relu, with_residual = residual != nullptr,
       residual = residual ? hold(*residual) : Held{}] {
    Tensor out = y.get(), r;
    if (with_residual) r = residual.get();
    inner_->batchnorm_forward_inference(x.get(), gamma.get(), beta.get(), mean.get(), variance.get(), out, epsilon,
                                        relu, with_residual ? &r : nullptr);
  });
}

void RecordingBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                                          const Tensor& variance, const Tensor* y, Tensor& dx, Tensor& dgamma,
                                          Tensor& dbeta, float epsilon) {
  const bool masked = y != nullptr;  // a fused ReLU's forward output masks dy
  const Held forward_y = masked ? hold(*y) : Held{};
  run([this, x = hold(x), dy = hold(dy), gamma = hold(gamma), mean = hold(mean), variance = hold(variance), masked,
       forward_y, dx = hold(dx), dgamma = hold(dgamma), dbeta = hold(dbeta), epsilon] {
    const Tensor y_now = masked ? forward_y.get() : Tensor();
    Tensor out = dx.get(), dg = dgamma.get(), db = dbeta.get();
    inner_->batchnorm_backward(x.get(), dy.get(), gamma.get(), mean.get(), variance.get(), masked ? &y_now : nullptr,
                               out, dg, db, epsilon);
  });
}

void RecordingBackend::relu_forward(const Tensor& x, Tensor& y) {
  run([this, x = hold(x), y = hold(y)] {
    Tensor out = y.get();
    inner_->relu_forward(x.get(), out);
  });
}

void RecordingBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  run([this, y = hold(y), dy = hold(dy), dx = hold(dx)] {
    Tensor out = dx.get();
    inner_->relu_backward(y.get(), dy.get(), out);
  });
}

void RecordingBackend::maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) {
  run([this, x = hold(x), y = hold(y), g] {
    Tensor out = y.get();
    inner_->maxpool_forward(x.get(), out, g);
  });
}

void RecordingBackend::maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) {
  run([this, x = hold(x), dy = hold(dy), dx = hold(dx), g] {
    Tensor out = dx.get();
    inner_->maxpool_backward(x.get(), dy.get(), out, g);
  });
}

void RecordingBackend::global_avgpool_forward(const Tensor& x, Tensor& y) {
  run([this, x = hold(x), y = hold(y)] {
    Tensor out = y.get();
    inner_->global_avgpool_forward(x.get(), out);
  });
}

void RecordingBackend::global_avgpool_backward(const Tensor& dy, Tensor& dx) {
  run([this, dy = hold(dy), dx = hold(dx)] {
    Tensor out = dx.get();
    inner_->global_avgpool_backward(dy.get(), out);
  });
}

void RecordingBackend::fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  run([this, x = hold(x), w = hold(w), b = hold(b), y = hold(y)] {
    Tensor out = y.get();
    inner_->fc_forward(x.get(), w.get(), b.get(), out);
  });
}

void RecordingBackend::fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  run([this, dy = hold(dy), w = hold(w), dx = hold(dx)] {
    Tensor out = dx.get();
    inner_->fc_backward_data(dy.get(), w.get(), out);
  });
}

void RecordingBackend::fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  run([this, x = hold(x), dy = hold(dy), dw = hold(dw), db = hold(db)] {
    Tensor weights = dw.get(), bias = db.get();
    inner_->fc_backward_weights(x.get(), dy.get(), weights, bias);
  });
}

void RecordingBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  run([this, a = hold(a), b = hold(b), y = hold(y)] {
    Tensor out = y.get();
    inner_->add(a.get(), b.get(), out);
  });
}

void RecordingBackend::scale(Tensor& t, float factor) {
  run([this, t = hold(t), factor] {
    Tensor out = t.get();
    inner_->scale(out, factor);
  });
}

// The factor by its tensor, read at each replay.
void RecordingBackend::scale_by(Tensor& t, const Tensor& factors, int64_t index) {
  run([this, t = hold(t), factors = hold(factors), index] {
    Tensor out = t.get();
    inner_->scale_by(out, factors.get(), index);
  });
}

void RecordingBackend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  run([this, a, x = hold(x), b, y = hold(y)] {
    Tensor out = y.get();
    inner_->axpby(a, x.get(), b, out);
  });
}

// The labels by address, as a graph's copy from pinned memory reads them at each replay.
void RecordingBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                             float label_smoothing, Tensor& dlogits, Tensor& loss) {
  run([this, logits = hold(logits), labels, label_smoothing, dlogits = hold(dlogits), loss = hold(loss)] {
    Tensor gradient = dlogits.get(), mean = loss.get();
    inner_->softmax_cross_entropy(logits.get(), labels, label_smoothing, gradient, mean);
  });
}

namespace {
// A list of tensors as a recording holds them, and as the op takes them at replay.
template <class Held>
struct HeldList {
  std::vector<Held> held;
  // Alive while the op runs: the tensors of `held`, and pointers to them.
  struct Now {
    std::vector<Tensor> tensors;
    std::vector<const Tensor*> pointers;
  };
  Now get() const {
    Now now;
    for (const Held& h : held) now.tensors.push_back(h.get());
    for (const Tensor& t : now.tensors) now.pointers.push_back(&t);
    return now;
  }
};
}  // namespace

void RecordingBackend::sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) {
  HeldList<Held> list;
  for (const Tensor* t : tensors) list.held.push_back(hold(*t));
  run([this, list, sums = hold(sums)] {
    const auto now = list.get();
    Tensor out = sums.get();
    inner_->sums_of_squares_into(now.pointers, out);
  });
}

void RecordingBackend::all_finite_into(std::span<const Tensor* const> tensors, Tensor& flags, int64_t index) {
  HeldList<Held> list;
  for (const Tensor* t : tensors) list.held.push_back(hold(*t));
  run([this, list, flags = hold(flags), index] {
    const auto now = list.get();
    Tensor out = flags.get();
    inner_->all_finite_into(now.pointers, out, index);
  });
}

// The rates and trust norms, when given, are held like the other tensors (the step points at the
// caller's).
void RecordingBackend::momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) {
  const Held rates = step.rates ? hold(*step.rates) : Held{};
  const Held norms = step.trust_norms ? hold(*step.trust_norms) : Held{};
  run([this, w = hold(w), g = hold(g), v = hold(v), step, rates, norms] {
    Tensor weights = w.get(), velocity = v.get(), rates_now, norms_now;
    MomentumStep now = step;
    if (step.rates) rates_now = rates.get(), now.rates = &rates_now;
    if (step.trust_norms) norms_now = norms.get(), now.trust_norms = &norms_now;
    inner_->momentum_update(weights, g.get(), velocity, now);
  });
}

}  // namespace sb::models
