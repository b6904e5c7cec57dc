#include "models/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "common/check.hpp"
#include "common/content_checksum.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "results/checksummed_group.hpp"
#include "results/results_file.hpp"

// Each entry point below holds h5::library_lock(): in sb-train, rank 0's fault handler may save
// the results on another thread while a checkpoint is being written or read.

namespace sb::models {
namespace {

std::vector<hsize_t> dims_of(const Shape& s) {
  return {static_cast<hsize_t>(s.n), static_cast<hsize_t>(s.c), static_cast<hsize_t>(s.h), static_cast<hsize_t>(s.w)};
}

void save_tensor(Backend& backend, const h5::ChecksummedGroup& group, const std::string& name, const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.count()));
  backend.read(t, host);
  group.write(name, host, dims_of(t.shape()));
}

void load_tensor(Backend& backend, const h5::ChecksummedGroup& group, const std::string& path, const std::string& name,
                 Tensor& t) {
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
  require(std::isnan(s.momentum_lr) || (std::isfinite(s.momentum_lr) && s.momentum_lr >= 0), "momentum_lr");
  require(time(s.run_start_unix_s), "run_start_unix_s");
  require(s.resumes >= 0, "resumes");
  require(time(s.resume_gap_s), "resume_gap_s");
}

// The curve's datasets, in the order they are written.
constexpr const char* kCurveColumns[] = {"epoch", "wall_s", "train_loss", "images_per_s", "evaluated", "top1", "top5",
                                         "clock_s"};

std::vector<std::vector<double>> curve_columns(const std::vector<EpochRecord>& curve) {
  std::vector<double> top1 = column(curve, &EpochRecord::top1), top5 = column(curve, &EpochRecord::top5);
  for (size_t i = 0; i < curve.size(); ++i)
    if (!curve[i].evaluated) top1[i] = top5[i] = std::nan("");
  return {column(curve, &EpochRecord::epoch),      column(curve, &EpochRecord::wall_s),
          column(curve, &EpochRecord::train_loss), column(curve, &EpochRecord::images_per_s),
          column(curve, &EpochRecord::evaluated),  top1,
          top5,                                    column(curve, &EpochRecord::clock_s)};
}

// The columns in kCurveColumns' order; a checkpoint from before clock_s was kept has none, and
// its epochs' clock is their run time.
std::vector<EpochRecord> curve_from_columns(std::vector<std::vector<double>> c) {
  if (c[7].empty()) c[7] = c[1];
  const size_t epochs = c[0].size();
  for (const std::vector<double>& field : c)
    if (field.size() != epochs) throw LibraryError("the curve's datasets differ in length");
  std::vector<EpochRecord> curve;
  for (size_t i = 0; i < epochs; ++i) {
    const bool evaluated = c[4][i] != 0;
    curve.push_back({static_cast<int64_t>(c[0][i]), c[1][i], c[2][i], c[3][i], evaluated, evaluated ? c[5][i] : 0,
                     evaluated ? c[6][i] : 0, c[7][i]});
  }
  return curve;
}

template <class Group>
void write_curve_into(const Group& group, const std::vector<EpochRecord>& curve) {
  const std::vector<std::vector<double>> columns = curve_columns(curve);
  for (size_t i = 0; i < columns.size(); ++i) group.write(kCurveColumns[i], columns[i]);
}

std::vector<EpochRecord> read_curve_from(const h5::ChecksummedGroup& group) {
  std::vector<std::vector<double>> columns;
  for (const char* name : kCurveColumns) {
    const bool absent = std::string_view(name) == "clock_s" && !group.has(name);
    columns.push_back(absent ? std::vector<double>{} : group.read_doubles(name));
  }
  return curve_from_columns(std::move(columns));
}

// The file's schema_version, on its root outside the sealed group, is summed too: a flipped one
// had loaded (it says which fields a file must have, the checksum among them).
constexpr const char* kVersionPiece = "/schema_version";

void seal_with_version(const h5::ChecksummedGroup& group, ContentChecksum sum) {
  sum.add_int(kVersionPiece, kSchemaVersion);
  h5::seal(group.node(), sum);
}

// Damage found once everything was read: the stored sum and the one of what was read differ.
void require_sealed(const ResultsReader& file, const h5::Node& group, ContentChecksum read, const std::string& what) {
  read.add_int(kVersionPiece, file.schema_version());
  const std::string damage = h5::verify_seal(group, read, file.schema_version() >= kFirstChecksummedSchemaVersion);
  if (!damage.empty()) throw UsageError(what + " is damaged: " + damage);
}

}  // namespace

void write_curve(const h5::Node& group, const std::vector<EpochRecord>& curve) { write_curve_into(group, curve); }

void save_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer, const TrainingState& state) {
  const std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  Backend& backend = model.backend();
  ResultsFile file(path);
  ContentChecksum sum;
  const h5::ChecksummedGroup root(file.root().create_group("checkpoint"), sum);
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
  root.set_attr("momentum_lr", state.momentum_lr);
  root.set_attr("run_start_unix_s", state.run_start_unix_s);
  root.set_attr("resumes", state.resumes);
  root.set_attr("resume_gap_s", state.resume_gap_s);
  if (state.settings) {
    const h5::ChecksummedGroup settings = root.create_group("settings");
    for (const auto& [name, value] : *state.settings) settings.set_attr(name, value);
    root.set_attr("setting_changes", join_list(state.setting_changes, "\n"));  // each one line
  }
  const h5::ChecksummedGroup parameters = root.create_group("parameters");
  for (const Parameter* p : model.parameters()) save_tensor(backend, parameters, p->name, p->value);
  const h5::ChecksummedGroup buffers = root.create_group("buffers");
  for (const Buffer* b : model.buffers()) save_tensor(backend, buffers, b->name, b->value);
  const h5::ChecksummedGroup momentum = root.create_group("optimizer");
  for (const Buffer& b : optimizer.state()) save_tensor(backend, momentum, b.name, b.value);
  write_curve_into(root.create_group("curve"), state.curve);
  seal_with_version(root, sum);
  backend.synchronize();
  file.commit();
}

TrainingState load_checkpoint(const std::string& path, ResNet& model, Optimizer& optimizer, uint64_t* content) {
  const std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  Backend& backend = model.backend();
  try {
    const ResultsReader file(path);
    if (!file.root().has("checkpoint")) throw UsageError("'" + path + "' is not a scalebench checkpoint");
    ContentChecksum sum;
    const h5::ChecksummedGroup root(file.root().open_group("checkpoint"), sum);
    const h5::Node& group = root.node();
    if (root.attr_string("model") != model.config().name)
      throw UsageError("checkpoint '" + path + "' is of model " + group.attr_string("model") + ", not " +
                       model.config().name);
    if (root.attr_int("seed") != static_cast<int64_t>(model.config().seed))
      throw UsageError("checkpoint '" + path + "' was made with --seed " + std::to_string(group.attr_int("seed")));
    if (root.attr_string("optimizer") != optimizer_name(optimizer.config().kind))
      throw UsageError("checkpoint '" + path + "' was made with --optimizer " + group.attr_string("optimizer"));
    const h5::ChecksummedGroup parameters = root.open_group("parameters");
    for (Parameter* p : model.parameters()) load_tensor(backend, parameters, path, p->name, p->value);
    const h5::ChecksummedGroup buffers = root.open_group("buffers");
    for (Buffer* b : model.buffers()) load_tensor(backend, buffers, path, b->name, b->value);
    const h5::ChecksummedGroup momentum = root.open_group("optimizer");
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
    state.momentum_lr = root.has_attr("momentum_lr") ? root.attr_double("momentum_lr")  // none before schema 15
                                                     : std::numeric_limits<double>::quiet_NaN();
    if (root.has_attr("run_start_unix_s")) {  // checkpoints before schema 9 have none
      state.run_start_unix_s = root.attr_double("run_start_unix_s");
      state.resumes = root.attr_int("resumes");
      state.resume_gap_s = root.attr_double("resume_gap_s");
    }
    if (root.has("settings")) {  // checkpoints before schema 24 have none
      const h5::ChecksummedGroup settings = root.open_group("settings");
      std::vector<std::string> names = settings.node().attr_names();
      std::sort(names.begin(), names.end());  // the order they were written and summed in
      state.settings.emplace();
      for (const std::string& name : names) (*state.settings)[name] = settings.attr_string(name);
      const std::string changes = root.attr_string("setting_changes");
      if (!changes.empty()) state.setting_changes = split_list(changes, '\n');
    }
    state.curve = read_curve_from(root.open_group("curve"));
    require_sealed(file, group, sum, "checkpoint '" + path + "'");
    require_plausible(state, path);
    if (content) *content = sum.value();
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
  ContentChecksum sum;
  const h5::ChecksummedGroup root(file.root().create_group("exchange"), sum);
  root.set_attr("step", step);
  root.set_attr("ranks", static_cast<int64_t>(ranks));
  for (const auto& [name, values] : state) root.write(name, values);
  seal_with_version(root, sum);
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
    ContentChecksum sum;
    const h5::ChecksummedGroup root(file.root().open_group("exchange"), sum);
    const int64_t saved_step = root.attr_int("step"), saved_ranks = root.attr_int("ranks");
    if (saved_step != step || saved_ranks != ranks) {
      why = path + " is of step " + std::to_string(saved_step) + " with " + std::to_string(saved_ranks) + " ranks";
      return std::nullopt;
    }
    std::vector<NamedFloats> state;
    for (const std::string& name : root.node().children()) state.emplace_back(name, root.read_floats(name));
    require_sealed(file, root.node(), sum, "'" + path + "'");
    return state;
  } catch (const LibraryError& e) {
    throw UsageError("'" + path + "' is not a readable exchange state: " + e.what());
  }
}

}  // namespace sb::models
