#include "models/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/results_file.hpp"

// Each entry point below holds h5::library_lock(): in sb-train, rank 0's fault handler may save
// the results on another thread while a checkpoint is being written or read.

namespace sb::models {
namespace {

std::vector<hsize_t> dims_of(const Shape& s) {
  return {static_cast<hsize_t>(s.n), static_cast<hsize_t>(s.c), static_cast<hsize_t>(s.h), static_cast<hsize_t>(s.w)};
}

void save_tensor(Backend& backend, const h5::Node& group, const std::string& name, const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.count()));
  backend.read(t, host);
  group.write(name, host, dims_of(t.shape()));
}

void load_tensor(Backend& backend, const h5::Node& group, const std::string& path, const std::string& name, Tensor& t) {
  if (!group.has(name)) throw UsageError("checkpoint '" + path + "' has no tensor '" + name + "'");
  std::vector<hsize_t> dims;
  std::vector<float> host = group.read_floats(name, &dims);
  if (dims != dims_of(t.shape()))
    throw UsageError("checkpoint '" + path + "': tensor '" + name + "' has another shape than the model's " +
                     t.shape().str());
  // Training stops when its loss stops being finite, so a saved tensor never holds an inf or NaN:
  // one here is damage, said as such rather than as a diverging loss after the resume.
  if (!std::all_of(host.begin(), host.end(), [](float v) { return std::isfinite(v); }))
    throw UsageError("checkpoint '" + path + "' is damaged: tensor '" + name + "' holds a value that is not finite");
  backend.write(t, host);
}

template <class Field>
std::vector<double> column(const std::vector<EpochRecord>& curve, Field field) {
  std::vector<double> out;
  for (const EpochRecord& r : curve) out.push_back(static_cast<double>(r.*field));
  return out;
}

// A state that sb-train never writes (a damaged or edited file) would index epochs, batches and
// steps out of range (a negative epoch crashed the resumed run): refused, naming the field.
void require_plausible(const TrainingState& s, const std::string& path) {
  const auto require = [&](bool plausible, const char* field) {
    if (!plausible) throw UsageError("checkpoint '" + path + "' is damaged: its " + field + " is out of range");
  };
  const auto time = [](double seconds) { return std::isfinite(seconds) && seconds >= 0; };
  require(s.epoch >= 0 && s.epoch < (int64_t{1} << 31), "epoch");
  require(s.next_batch >= 0 && s.next_batch < (int64_t{1} << 40), "next_batch");
  require(s.step >= 0 && s.step < (int64_t{1} << 50), "step");
  require(std::isfinite(s.epoch_loss_sum), "epoch_loss_sum");
  require(s.epoch_samples >= 0, "epoch_samples");
  require(time(s.elapsed_s), "elapsed_s");
  require(s.ranks >= 1 && s.ranks <= (1 << 20), "ranks");
  require(time(s.loss_scale), "loss_scale");
  require(s.loss_scale_clean_steps >= 0, "loss_scale_clean_steps");
  require(time(s.run_start_unix_s), "run_start_unix_s");
  require(s.resumes >= 0, "resumes");
  require(time(s.resume_gap_s), "resume_gap_s");
}

}  // namespace

void write_curve(const h5::Node& group, const std::vector<EpochRecord>& curve) {
  std::vector<double> top1 = column(curve, &EpochRecord::top1), top5 = column(curve, &EpochRecord::top5);
  for (size_t i = 0; i < curve.size(); ++i)
    if (!curve[i].evaluated) top1[i] = top5[i] = std::nan("");
  group.write("epoch", column(curve, &EpochRecord::epoch));
  group.write("wall_s", column(curve, &EpochRecord::wall_s));
  group.write("train_loss", column(curve, &EpochRecord::train_loss));
  group.write("images_per_s", column(curve, &EpochRecord::images_per_s));
  group.write("evaluated", column(curve, &EpochRecord::evaluated));
  group.write("top1", top1);
  group.write("top5", top5);
  group.write("clock_s", column(curve, &EpochRecord::clock_s));
}

std::vector<EpochRecord> read_curve(const h5::Node& group) {
  const std::vector<double> epoch = group.read_doubles("epoch"), wall = group.read_doubles("wall_s"),
                            loss = group.read_doubles("train_loss"), rate = group.read_doubles("images_per_s"),
                            evaluated = group.read_doubles("evaluated"), top1 = group.read_doubles("top1"),
                            top5 = group.read_doubles("top5");
  // Checkpoints from before clock_s was kept: their epochs' clock is their run time.
  const std::vector<double> clock = group.has("clock_s") ? group.read_doubles("clock_s") : wall;
  std::vector<EpochRecord> curve;
  for (size_t i = 0; i < epoch.size(); ++i)
    curve.push_back({static_cast<int64_t>(epoch[i]), wall[i], loss[i], rate[i], evaluated[i] != 0,
                     evaluated[i] != 0 ? top1[i] : 0, evaluated[i] != 0 ? top5[i] : 0, clock.at(i)});
  return curve;
}

void save_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer, const TrainingState& state) {
  const std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  Backend& backend = model.backend();
  ResultsFile file(path);
  const h5::Node root = file.root().create_group("checkpoint");
  root.set_attr("model", model.config().name);
  root.set_attr("seed", static_cast<int64_t>(model.config().seed));
  root.set_attr("optimizer", optimizer_name(optimizer.config().kind));
  root.set_attr("epoch", state.epoch);
  root.set_attr("next_batch", state.next_batch);
  root.set_attr("step", state.step);
  root.set_attr("epoch_loss_sum", state.epoch_loss_sum);
  root.set_attr("epoch_samples", state.epoch_samples);
  root.set_attr("elapsed_s", state.elapsed_s);
  root.set_attr("ranks", state.ranks);
  root.set_attr("loss_scale", state.loss_scale);
  root.set_attr("loss_scale_clean_steps", state.loss_scale_clean_steps);
  root.set_attr("run_start_unix_s", state.run_start_unix_s);
  root.set_attr("resumes", state.resumes);
  root.set_attr("resume_gap_s", state.resume_gap_s);
  const h5::Node parameters = root.create_group("parameters");
  for (const Parameter* p : model.parameters()) save_tensor(backend, parameters, p->name, p->value);
  const h5::Node buffers = root.create_group("buffers");
  for (const Buffer* b : model.buffers()) save_tensor(backend, buffers, b->name, b->value);
  const h5::Node momentum = root.create_group("optimizer");
  for (const Buffer& b : optimizer.state()) save_tensor(backend, momentum, b.name, b.value);
  write_curve(root.create_group("curve"), state.curve);
  backend.synchronize();
  file.commit();
}

TrainingState load_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer) {
  const std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  Backend& backend = model.backend();
  ResultsReader file(path);
  try {
    if (!file.root().has("checkpoint")) throw UsageError("'" + path + "' is not a scalebench checkpoint");
    const h5::Node root = file.root().open_group("checkpoint");
    if (root.attr_string("model") != model.config().name)
      throw UsageError("checkpoint '" + path + "' is of model " + root.attr_string("model") + ", not " +
                       model.config().name);
    if (root.attr_int("seed") != static_cast<int64_t>(model.config().seed))
      throw UsageError("checkpoint '" + path + "' was made with --seed " + std::to_string(root.attr_int("seed")));
    if (root.attr_string("optimizer") != optimizer_name(optimizer.config().kind))
      throw UsageError("checkpoint '" + path + "' was made with --optimizer " + root.attr_string("optimizer"));
    const h5::Node parameters = root.open_group("parameters");
    for (Parameter* p : model.parameters()) load_tensor(backend, parameters, path, p->name, p->value);
    const h5::Node buffers = root.open_group("buffers");
    for (Buffer* b : model.buffers()) load_tensor(backend, buffers, path, b->name, b->value);
    const h5::Node momentum = root.open_group("optimizer");
    for (Buffer& b : optimizer.state()) load_tensor(backend, momentum, path, b.name, b.value);
    TrainingState state;
    state.epoch = root.attr_int("epoch");
    state.next_batch = root.attr_int("next_batch");
    state.step = root.attr_int("step");
    state.epoch_loss_sum = root.attr_double("epoch_loss_sum");
    state.epoch_samples = root.attr_int("epoch_samples");
    state.elapsed_s = root.attr_double("elapsed_s");
    state.ranks = root.attr_int("ranks");
    if (root.has_attr("loss_scale")) {  // checkpoints before fp16 training have none
      state.loss_scale = root.attr_double("loss_scale");
      state.loss_scale_clean_steps = root.attr_int("loss_scale_clean_steps");
    }
    if (root.has_attr("run_start_unix_s")) {  // checkpoints before schema 9 have none
      state.run_start_unix_s = root.attr_double("run_start_unix_s");
      state.resumes = root.attr_int("resumes");
      state.resume_gap_s = root.attr_double("resume_gap_s");
    }
    state.curve = read_curve(root.open_group("curve"));
    require_plausible(state, path);
    return state;
  } catch (const LibraryError& e) {
    throw UsageError("checkpoint '" + path + "' is incomplete or damaged: " + e.what());
  }
}

std::string exchange_state_path(const std::string& checkpoint_path, int rank) {
  const std::string stem = checkpoint_path.size() > 3 && checkpoint_path.ends_with(".h5")
                               ? checkpoint_path.substr(0, checkpoint_path.size() - 3)
                               : checkpoint_path;
  return stem + ".exchange-rank" + std::to_string(rank) + ".h5";
}

void save_exchange_state(const std::string& path, const std::vector<NamedFloats>& state, int64_t step, int ranks) {
  const std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  ResultsFile file(path);
  const h5::Node root = file.root().create_group("exchange");
  root.set_attr("step", step);
  root.set_attr("ranks", static_cast<int64_t>(ranks));
  for (const auto& [name, values] : state) root.write(name, values);
  file.commit();
}

std::optional<std::vector<NamedFloats>> load_exchange_state(const std::string& path, int64_t step, int ranks,
                                                            std::string& why) {
  const std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  if (!std::filesystem::exists(path)) {
    why = path + " is missing";
    return std::nullopt;
  }
  try {
    ResultsReader file(path);
    const h5::Node root = file.root().open_group("exchange");
    if (root.attr_int("step") != step || root.attr_int("ranks") != ranks) {
      why = path + " is of step " + std::to_string(root.attr_int("step")) + " with " +
            std::to_string(root.attr_int("ranks")) + " ranks";
      return std::nullopt;
    }
    std::vector<NamedFloats> state;
    for (const std::string& name : root.children()) state.emplace_back(name, root.read_floats(name));
    return state;
  } catch (const LibraryError& e) {
    throw UsageError("'" + path + "' is not a readable exchange state: " + e.what());
  }
}

}  // namespace sb::models
