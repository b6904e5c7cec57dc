#include "models/onednn_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/check.hpp"
#include "models/loss_math.hpp"
#include "models/lru_cache.hpp"
#include "models/onednn_tensors.hpp"
#include "models/scratch_buffer.hpp"
#include "models/zeroed_host_block.hpp"

namespace sb::models {
namespace {

using onednn::f;
using onednn::require_same;
using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

memory::dims dims_of(const Shape& s) { return {s.n, s.c, s.h, s.w}; }

// Every tensor of this backend: logical NCHW dims, physical channels-last.
memory::desc channels_last(const Shape& s) { return memory::desc(dims_of(s), kF32, Tag::nhwc); }
memory::desc any_layout(const Shape& s) { return memory::desc(dims_of(s), kF32, Tag::any); }
memory::desc vector_desc(int64_t c) { return memory::desc({c}, kF32, Tag::a); }
memory::desc matrix_desc(int64_t rows, int64_t cols) { return memory::desc({rows, cols}, kF32, Tag::ab); }

std::string key(const char* op, std::initializer_list<int64_t> values) {
  std::string k(op);
  for (int64_t v : values) {
    k.push_back(':');
    k.append(std::to_string(v));
  }
  return k;
}

// Weights kept in the plain (O, H, W, I) layout of the tensor, and, when the primitive wants
// another, the reorders to and from it. The reordered copy lives in the state's shared scratch
// (weights_scratch), not here: it is remade on every call, so one buffer serves every convolution.
struct WeightsView {
  memory::desc wanted;
  bool needs_reorder = false;
  dnnl::reorder to_wanted, from_wanted;

  void init(const dnnl::engine& engine, const memory::desc& plain, const memory::desc& want) {
    wanted = want;
    needs_reorder = want != plain;
    if (!needs_reorder) return;
    to_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, plain, engine, want));
    from_wanted = dnnl::reorder(dnnl::reorder::primitive_desc(engine, want, engine, plain));
  }
};

struct ConvPrimitives {
  memory::desc src, weights, dst;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  WeightsView forward_weights, backward_data_weights, diff_weights;
};

struct BatchnormPrimitives {
  dnnl::batch_normalization_forward::primitive_desc pd;
  dnnl::batch_normalization_forward forward;
};

struct BatchnormBackward {
  dnnl::batch_normalization_backward backward;
  memory unused_shift;  // oneDNN asks for the shift (beta), which no gradient depends on
};

struct PoolPrimitives {
  dnnl::pooling_forward inference;
  dnnl::pooling_forward training;  // rerun in backward for its workspace (argmax)
  dnnl::pooling_backward backward;
  dnnl::pooling_forward::primitive_desc training_pd;  // for the rerun's output and workspace layouts
};

struct FcPrimitives {
  dnnl::inner_product_forward forward;
  dnnl::inner_product_backward_data backward_data;
  dnnl::inner_product_backward_weights backward_weights;
};

}  // namespace

struct OnednnState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  LruCache primitives{OnednnBackend::kPrimitivesKept};
  // Memory that no call's result depends on after it returns, shared by all shapes (every call
  // waits for its primitives to finish, so no two calls overlap on one): the weights' reordered
  // copy; batch norm's fused-ReLU mask, which oneDNN writes and our backward never reads (it masks
  // by y > 0); the max-pool forward that backward reruns, its output and argmax workspace. Held per
  // cached primitive instead, they were three copies of the weights and an activation-sized mask
  // per layer, for every batch size kept.
  ScratchBuffer weights_scratch, batchnorm_mask_scratch, pool_output_scratch, pool_workspace_scratch;

  // The cached value under key, built by make() the first time (or again, once dropped).
  template <class T, class Make>
  T& cached(const std::string& k, Make&& make) {
    return primitives.get<T>(k, std::forward<Make>(make));
  }

  memory wrap(const memory::desc& desc, const Tensor& t) const { return memory(desc, engine, t.data()); }
  memory scratch(ScratchBuffer& buffer, const memory::desc& desc) const {
    return memory(desc, engine, buffer.at_least(desc.get_size()));
  }

  void run(dnnl::primitive& p, const std::unordered_map<int, memory>& args) {
    p.execute(stream, args);
    stream.wait();
  }

  // Brings w (plain) into the view's layout and returns the memory the primitive should use.
  memory weights_in(WeightsView& view, const memory::desc& plain, const Tensor& w) {
    memory plain_memory = wrap(plain, w);
    if (!view.needs_reorder) return plain_memory;
    memory reordered = scratch(weights_scratch, view.wanted);
    view.to_wanted.execute(stream, plain_memory, reordered);
    return reordered;
  }
};

OnednnBackend::OnednnBackend(int threads) : state_(std::make_unique<OnednnState>()) {
  if (threads > 0) omp_set_num_threads(threads);
}
OnednnBackend::~OnednnBackend() = default;

size_t OnednnBackend::cached_primitives() const { return state_->primitives.size(); }

size_t OnednnBackend::scratch_bytes() const {
  const OnednnState& s = *state_;
  return s.weights_scratch.bytes() + s.batchnorm_mask_scratch.bytes() + s.pool_output_scratch.bytes() +
         s.pool_workspace_scratch.bytes();
}

std::string OnednnBackend::library_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

double OnednnBackend::matmul_gflops(int64_t n, int reps) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc square({n, n}, kF32, Tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(square, square, square), engine);
  dnnl::matmul matmul(pd);
  memory a(square, engine), b(square, engine), c(square, engine);
  for (memory* m : {&a, &b}) {
    float* p = static_cast<float*>(m->get_data_handle());
    for (int64_t i = 0; i < n * n; ++i) p[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  }
  std::vector<double> seconds;
  for (int r = 0; r <= reps; ++r) {  // the first run warms up and is not counted
    const auto start = std::chrono::steady_clock::now();
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
    if (r > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * static_cast<double>(n) * n * n / seconds[seconds.size() / 2] / 1e9;
}

Tensor OnednnBackend::allocate(Shape shape) {
  SB_CHECK(shape.count() >= 0, "negative shape " + shape.str());
  std::shared_ptr<void> block = zeroed_host_block(static_cast<size_t>(shape.count()) * sizeof(float));
  SB_CHECK(block != nullptr, "out of memory allocating " + shape.str());
  return Tensor(shape, std::move(block));
}

void OnednnBackend::write(Tensor& t, std::span<const float> nchw) {
  SB_CHECK(static_cast<int64_t>(nchw.size()) == t.count(), "write size");
  const Shape& s = t.shape();
  float* out = f(t);
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.h * s.w; ++i) out[(n * s.h * s.w + i) * s.c + c] = nchw[(n * s.c + c) * s.h * s.w + i];
}

void OnednnBackend::read(const Tensor& t, std::span<float> nchw) {
  SB_CHECK(static_cast<int64_t>(nchw.size()) == t.count(), "read size");
  const Shape& s = t.shape();
  const float* in = f(t);
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.h * s.w; ++i) nchw[(n * s.c + c) * s.h * s.w + i] = in[(n * s.h * s.w + i) * s.c + c];
}

void OnednnBackend::fill(Tensor& t, float value) {
  float* p = f(t);
  const int64_t count = t.count();
#pragma omp parallel for simd
  for (int64_t i = 0; i < count; ++i) p[i] = value;
}

void OnednnBackend::copy(const Tensor& from, Tensor& to) {
  require_same(from, to, "copy");
  std::memcpy(to.data(), from.data(), static_cast<size_t>(from.count()) * sizeof(float));
}

// ---- convolution -----------------------------------------------------------------------------

namespace {
ConvPrimitives* make_conv(const dnnl::engine& engine, const Shape& xs, const Shape& ws, const Shape& ys, ConvGeometry g) {
  auto conv = new ConvPrimitives;
  conv->src = channels_last(xs);
  conv->dst = channels_last(ys);
  conv->weights = channels_last(ws);  // (O, I, H, W) logical, O H W I physical
  const memory::dims strides{g.stride, g.stride}, pad{g.pad, g.pad};
  const auto algo = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, algo, conv->src, any_layout(ws), conv->dst,
                                     strides, pad, pad);
  dnnl::convolution_forward::primitive_desc fpd(fd, engine);
  dnnl::convolution_backward_data::desc bdd(algo, conv->src, any_layout(ws), conv->dst, strides, pad, pad);
  dnnl::convolution_backward_data::primitive_desc bdpd(bdd, engine, fpd);
  dnnl::convolution_backward_weights::desc bwd(algo, conv->src, any_layout(ws), conv->dst, strides, pad, pad);
  dnnl::convolution_backward_weights::primitive_desc bwpd(bwd, engine, fpd);
  // The activations must stay channels-last; a primitive that insisted otherwise would be a bug here.
  SB_CHECK(fpd.src_desc() == conv->src && fpd.dst_desc() == conv->dst, "oneDNN convolution changed the activation layout");
  conv->forward = dnnl::convolution_forward(fpd);
  conv->backward_data = dnnl::convolution_backward_data(bdpd);
  conv->backward_weights = dnnl::convolution_backward_weights(bwpd);
  conv->forward_weights.init(engine, conv->weights, fpd.weights_desc());
  conv->backward_data_weights.init(engine, conv->weights, bdpd.weights_desc());
  conv->diff_weights.init(engine, conv->weights, bwpd.diff_weights_desc());
  return conv;
}

ConvPrimitives& conv_primitives(OnednnState& state, const Shape& xs, const Shape& ws, const Shape& ys, ConvGeometry g) {
  SB_CHECK(xs.c == ws.c && ys.c == ws.n && ys.n == xs.n &&
               ys.h == window_output(xs.h, static_cast<int>(ws.h), g.stride, g.pad) &&
               ys.w == window_output(xs.w, static_cast<int>(ws.w), g.stride, g.pad),
           "conv shapes " + xs.str() + " " + ws.str() + " " + ys.str());
  return state.cached<ConvPrimitives>(key("conv", {xs.n, xs.c, xs.h, xs.w, ws.n, ws.h, ws.w, g.stride, g.pad}),
                                      [&] { return std::shared_ptr<ConvPrimitives>(make_conv(state.engine, xs, ws, ys, g)); });
}
}  // namespace

void OnednnBackend::conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) {
  auto& c = conv_primitives(*state_, x.shape(), w.shape(), y.shape(), g);
  memory weights = state_->weights_in(c.forward_weights, c.weights, w);
  state_->run(c.forward, {{DNNL_ARG_SRC, state_->wrap(c.src, x)},
                          {DNNL_ARG_WEIGHTS, weights},
                          {DNNL_ARG_DST, state_->wrap(c.dst, y)}});
}

void OnednnBackend::conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) {
  auto& c = conv_primitives(*state_, dx.shape(), w.shape(), dy.shape(), g);
  memory weights = state_->weights_in(c.backward_data_weights, c.weights, w);
  state_->run(c.backward_data, {{DNNL_ARG_DIFF_DST, state_->wrap(c.dst, dy)},
                                {DNNL_ARG_WEIGHTS, weights},
                                {DNNL_ARG_DIFF_SRC, state_->wrap(c.src, dx)}});
}

void OnednnBackend::conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) {
  auto& c = conv_primitives(*state_, x.shape(), dw.shape(), dy.shape(), g);
  memory plain = state_->wrap(c.weights, dw);
  memory diff_weights =
      c.diff_weights.needs_reorder ? state_->scratch(state_->weights_scratch, c.diff_weights.wanted) : plain;
  state_->run(c.backward_weights, {{DNNL_ARG_SRC, state_->wrap(c.src, x)},
                                   {DNNL_ARG_DIFF_DST, state_->wrap(c.dst, dy)},
                                   {DNNL_ARG_DIFF_WEIGHTS, diff_weights}});
  if (c.diff_weights.needs_reorder) {
    c.diff_weights.from_wanted.execute(state_->stream, diff_weights, plain);
    state_->stream.wait();
  }
}

// ---- batch norm ------------------------------------------------------------------------------

namespace {
using dnnl::normalization_flags;
const auto kScaleShift = normalization_flags::use_scale | normalization_flags::use_shift;

dnnl::batch_normalization_forward::primitive_desc batchnorm_pd(const dnnl::engine& engine, const Shape& s,
                                                                dnnl::prop_kind prop, normalization_flags flags,
                                                                float epsilon) {
  dnnl::batch_normalization_forward::desc desc(prop, channels_last(s), epsilon, flags);
  return dnnl::batch_normalization_forward::primitive_desc(desc, engine);
}
}  // namespace

void OnednnBackend::batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                               Tensor& mean, Tensor& variance, float epsilon, bool relu,
                                               const Tensor* residual) {
  require_same(x, y, "batchnorm y");
  if (residual) {
    batchnorm_forward_training(x, gamma, beta, y, mean, variance, epsilon, false, nullptr);
    add_residual(y, *residual, relu);
    return;
  }
  const Shape& s = x.shape();
  auto& bn = state_->cached<BatchnormPrimitives>(key("bn_train", {s.n, s.c, s.h, s.w, relu, std::bit_cast<int32_t>(epsilon)}), [&] {
    auto p = std::make_shared<BatchnormPrimitives>();
    auto flags = relu ? kScaleShift | normalization_flags::fuse_norm_relu : kScaleShift;
    p->pd = batchnorm_pd(state_->engine, s, dnnl::prop_kind::forward_training, flags, epsilon);
    p->forward = dnnl::batch_normalization_forward(p->pd);
    return p;
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, state_->wrap(bn.pd.src_desc(), x)},
                                       {DNNL_ARG_DST, state_->wrap(bn.pd.dst_desc(), y)},
                                       {DNNL_ARG_SCALE, state_->wrap(vector_desc(s.c), gamma)},
                                       {DNNL_ARG_SHIFT, state_->wrap(vector_desc(s.c), beta)},
                                       {DNNL_ARG_MEAN, state_->wrap(bn.pd.mean_desc(), mean)},
                                       {DNNL_ARG_VARIANCE, state_->wrap(bn.pd.variance_desc(), variance)}};
  if (relu) args[DNNL_ARG_WORKSPACE] = state_->scratch(state_->batchnorm_mask_scratch, bn.pd.workspace_desc());
  state_->run(bn.forward, args);
}

void OnednnBackend::batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                const Tensor& mean, const Tensor& variance, Tensor& y,
                                                float epsilon, bool relu, const Tensor* residual) {
  require_same(x, y, "batchnorm y");
  if (residual) {
    batchnorm_forward_inference(x, gamma, beta, mean, variance, y, epsilon, false, nullptr);
    add_residual(y, *residual, relu);
    return;
  }
  const Shape& s = x.shape();
  auto& bn = state_->cached<BatchnormPrimitives>(key("bn_infer", {s.n, s.c, s.h, s.w, relu, std::bit_cast<int32_t>(epsilon)}), [&] {
    auto p = std::make_shared<BatchnormPrimitives>();
    auto flags = kScaleShift | normalization_flags::use_global_stats;
    if (relu) flags = flags | normalization_flags::fuse_norm_relu;
    p->pd = batchnorm_pd(state_->engine, s, dnnl::prop_kind::forward_inference, flags, epsilon);
    p->forward = dnnl::batch_normalization_forward(p->pd);
    return p;
  });
  state_->run(bn.forward, {{DNNL_ARG_SRC, state_->wrap(bn.pd.src_desc(), x)},
                           {DNNL_ARG_DST, state_->wrap(bn.pd.dst_desc(), y)},
                           {DNNL_ARG_SCALE, state_->wrap(vector_desc(s.c), gamma)},
                           {DNNL_ARG_SHIFT, state_->wrap(vector_desc(s.c), beta)},
                           {DNNL_ARG_MEAN, state_->wrap(bn.pd.mean_desc(), mean)},
                           {DNNL_ARG_VARIANCE, state_->wrap(bn.pd.variance_desc(), variance)}});
}

void OnednnBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                                       const Tensor& variance, const Tensor* y, Tensor& dx, Tensor& dgamma,
                                       Tensor& dbeta, float epsilon) {
  require_same(x, dy, "batchnorm dy");
  require_same(x, dx, "batchnorm dx");
  const Shape& s = x.shape();
  auto& bn = state_->cached<BatchnormBackward>(key("bn_backward", {s.n, s.c, s.h, s.w, std::bit_cast<int32_t>(epsilon)}), [&] {
    auto hint = batchnorm_pd(state_->engine, s, dnnl::prop_kind::forward_training, kScaleShift, epsilon);
    dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, channels_last(s), channels_last(s),
                                                  epsilon, kScaleShift);
    auto p = std::make_shared<BatchnormBackward>();
    p->backward = dnnl::batch_normalization_backward(
        dnnl::batch_normalization_backward::primitive_desc(desc, state_->engine, hint));
    p->unused_shift = memory(vector_desc(s.c), state_->engine);
    return p;
  });
  // A fused ReLU's backward is a mask of dy by y > 0, done into dx; oneDNN's batch-norm backward
  // may then run in place on dx (diff_dst and diff_src the same memory).
  const Tensor* grad = &dy;
  if (y) {
    relu_backward(*y, dy, dx);
    grad = &dx;
  }
  const memory::desc data = channels_last(s);
  state_->run(bn.backward, {{DNNL_ARG_SRC, state_->wrap(data, x)},
                            {DNNL_ARG_DIFF_DST, state_->wrap(data, *grad)},
                            {DNNL_ARG_MEAN, state_->wrap(vector_desc(s.c), mean)},
                            {DNNL_ARG_VARIANCE, state_->wrap(vector_desc(s.c), variance)},
                            {DNNL_ARG_SCALE, state_->wrap(vector_desc(s.c), gamma)},
                            {DNNL_ARG_SHIFT, bn.unused_shift},
                            {DNNL_ARG_DIFF_SRC, state_->wrap(data, dx)},
                            {DNNL_ARG_DIFF_SCALE, state_->wrap(vector_desc(s.c), dgamma)},
                            {DNNL_ARG_DIFF_SHIFT, state_->wrap(vector_desc(s.c), dbeta)}});
}

// ---- pooling ---------------------------------------------------------------------------------

namespace {
PoolPrimitives& maxpool_primitives(OnednnState& state, const Shape& xs, const Shape& ys, PoolGeometry g) {
  SB_CHECK(ys.n == xs.n && ys.c == xs.c && ys.h == window_output(xs.h, g.kernel, g.stride, g.pad) &&
               ys.w == window_output(xs.w, g.kernel, g.stride, g.pad),
           "maxpool shapes " + xs.str() + " " + ys.str());
  return state.cached<PoolPrimitives>(key("maxpool", {xs.n, xs.c, xs.h, xs.w, g.kernel, g.stride, g.pad}), [&] {
    auto p = std::make_shared<PoolPrimitives>();
    const memory::dims strides{g.stride, g.stride}, kernel{g.kernel, g.kernel}, pad{g.pad, g.pad};
    const auto src = channels_last(xs), dst = channels_last(ys);
    const auto algo = dnnl::algorithm::pooling_max;
    dnnl::pooling_forward::primitive_desc inference(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, algo, src, dst, strides, kernel, pad, pad),
        state.engine);
    dnnl::pooling_forward::primitive_desc training(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algo, src, dst, strides, kernel, pad, pad),
        state.engine);
    dnnl::pooling_backward::primitive_desc backward(
        dnnl::pooling_backward::desc(algo, src, dst, strides, kernel, pad, pad), state.engine, training);
    p->inference = dnnl::pooling_forward(inference);
    p->training = dnnl::pooling_forward(training);
    p->backward = dnnl::pooling_backward(backward);
    p->training_pd = training;
    return p;
  });
}
}  // namespace

void OnednnBackend::maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) {
  auto& pool = maxpool_primitives(*state_, x.shape(), y.shape(), g);
  state_->run(pool.inference, {{DNNL_ARG_SRC, state_->wrap(channels_last(x.shape()), x)},
                               {DNNL_ARG_DST, state_->wrap(channels_last(y.shape()), y)}});
}

void OnednnBackend::maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) {
  require_same(x, dx, "maxpool dx");
  auto& pool = maxpool_primitives(*state_, x.shape(), dy.shape(), g);
  // The interface carries no workspace between the passes, so the forward runs again here for
  // oneDNN's argmax workspace: one extra pooling forward, once per step in a ResNet.
  const memory workspace = state_->scratch(state_->pool_workspace_scratch, pool.training_pd.workspace_desc());
  state_->run(pool.training, {{DNNL_ARG_SRC, state_->wrap(channels_last(x.shape()), x)},
                              {DNNL_ARG_DST, state_->scratch(state_->pool_output_scratch, pool.training_pd.dst_desc())},
                              {DNNL_ARG_WORKSPACE, workspace}});
  state_->run(pool.backward, {{DNNL_ARG_DIFF_DST, state_->wrap(channels_last(dy.shape()), dy)},
                              {DNNL_ARG_DIFF_SRC, state_->wrap(channels_last(x.shape()), dx)},
                              {DNNL_ARG_WORKSPACE, workspace}});
}

void OnednnBackend::global_avgpool_forward(const Tensor& x, Tensor& y) {
  const Shape& s = x.shape();
  SB_CHECK(y.shape() == (Shape{s.n, s.c, 1, 1}), "avgpool y");
  const float* in = f(x);
  float* out = f(y);
  const int64_t plane = s.h * s.w;
#pragma omp parallel for
  for (int64_t n = 0; n < s.n; ++n) {
    float* row = out + n * s.c;
    std::fill(row, row + s.c, 0.0f);
    for (int64_t i = 0; i < plane; ++i) {
      const float* pixel = in + (n * plane + i) * s.c;
      for (int64_t c = 0; c < s.c; ++c) row[c] += pixel[c];
    }
    for (int64_t c = 0; c < s.c; ++c) row[c] /= static_cast<float>(plane);
  }
}

void OnednnBackend::global_avgpool_backward(const Tensor& dy, Tensor& dx) {
  const Shape& s = dx.shape();
  SB_CHECK(dy.shape() == (Shape{s.n, s.c, 1, 1}), "avgpool dy");
  const float* grad = f(dy);
  float* out = f(dx);
  const int64_t plane = s.h * s.w;
  const float inv = 1.0f / static_cast<float>(plane);
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t i = 0; i < plane; ++i)
      for (int64_t c = 0; c < s.c; ++c) out[(n * plane + i) * s.c + c] = grad[n * s.c + c] * inv;
}

// ---- fully connected -------------------------------------------------------------------------

namespace {
// The layer's input must be (N, K, 1, 1): channels-last and NCHW flatten it the same way only then.
void require_flat(const Tensor& x) {
  SB_CHECK(x.shape().h == 1 && x.shape().w == 1, "fully connected input must be (N, K, 1, 1), got " + x.shape().str());
}
}  // namespace

namespace {
FcPrimitives& fc_primitives(OnednnState& state, int64_t batch, int64_t inputs, int64_t outputs) {
  return state.cached<FcPrimitives>(key("fc", {batch, inputs, outputs}), [&] {
    auto p = std::make_shared<FcPrimitives>();
    const auto src = matrix_desc(batch, inputs), weights = matrix_desc(outputs, inputs), dst = matrix_desc(batch, outputs);
    dnnl::inner_product_forward::primitive_desc fpd(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src, weights, vector_desc(outputs), dst),
        state.engine);
    p->forward = dnnl::inner_product_forward(fpd);
    p->backward_data = dnnl::inner_product_backward_data(dnnl::inner_product_backward_data::primitive_desc(
        dnnl::inner_product_backward_data::desc(src, weights, dst), state.engine, fpd));
    p->backward_weights = dnnl::inner_product_backward_weights(dnnl::inner_product_backward_weights::primitive_desc(
        dnnl::inner_product_backward_weights::desc(src, weights, vector_desc(outputs), dst), state.engine, fpd));
    return p;
  });
}
}  // namespace

void OnednnBackend::fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  require_flat(x);
  const int64_t batch = x.shape().n, inputs = x.shape().c, outputs = w.shape().n;
  SB_CHECK(w.count() == outputs * inputs && b.count() == outputs && y.shape() == (Shape{batch, outputs, 1, 1}), "fc shapes");
  auto& fc = fc_primitives(*state_, batch, inputs, outputs);
  state_->run(fc.forward, {{DNNL_ARG_SRC, state_->wrap(matrix_desc(batch, inputs), x)},
                           {DNNL_ARG_WEIGHTS, state_->wrap(matrix_desc(outputs, inputs), w)},
                           {DNNL_ARG_BIAS, state_->wrap(vector_desc(outputs), b)},
                           {DNNL_ARG_DST, state_->wrap(matrix_desc(batch, outputs), y)}});
}

void OnednnBackend::fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  require_flat(dx);
  const int64_t batch = dx.shape().n, inputs = dx.shape().c, outputs = w.shape().n;
  SB_CHECK(w.count() == outputs * inputs && dy.shape() == (Shape{batch, outputs, 1, 1}), "fc shapes");
  auto& fc = fc_primitives(*state_, batch, inputs, outputs);
  state_->run(fc.backward_data, {{DNNL_ARG_DIFF_DST, state_->wrap(matrix_desc(batch, outputs), dy)},
                                 {DNNL_ARG_WEIGHTS, state_->wrap(matrix_desc(outputs, inputs), w)},
                                 {DNNL_ARG_DIFF_SRC, state_->wrap(matrix_desc(batch, inputs), dx)}});
}

void OnednnBackend::fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  require_flat(x);
  const int64_t batch = x.shape().n, inputs = x.shape().c, outputs = dw.shape().n;
  SB_CHECK(dw.count() == outputs * inputs && db.count() == outputs && dy.shape() == (Shape{batch, outputs, 1, 1}), "fc shapes");
  auto& fc = fc_primitives(*state_, batch, inputs, outputs);
  state_->run(fc.backward_weights, {{DNNL_ARG_SRC, state_->wrap(matrix_desc(batch, inputs), x)},
                                    {DNNL_ARG_DIFF_DST, state_->wrap(matrix_desc(batch, outputs), dy)},
                                    {DNNL_ARG_DIFF_WEIGHTS, state_->wrap(matrix_desc(outputs, inputs), dw)},
                                    {DNNL_ARG_DIFF_BIAS, state_->wrap(vector_desc(outputs), db)}});
}

// ---- loss ------------------------------------------------------------------------------------

void OnednnBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                          float label_smoothing, Tensor& dlogits, Tensor& loss) {
  require_same(logits, dlogits, "cross entropy");
  const int64_t batch = logits.shape().n, classes = logits.count() / batch;
  SB_CHECK(static_cast<int64_t>(labels.size()) == batch, "one label per sample");
  SB_CHECK(loss.count() == 1, "the loss is one element");
  *f(loss) = static_cast<float>(
      softmax_cross_entropy_rows(f(logits), labels.data(), batch, classes, label_smoothing, f(dlogits)));
}

}  // namespace sb::models
