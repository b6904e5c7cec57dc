#include "collectives/buckets/backward_profile.hpp"

#include <sstream>

#include "common/atomic_file.hpp"
#include "common/text_input.hpp"
#include "common/usage_error.hpp"

namespace sb {

BackwardProfile read_backward_profile(const std::string& path) {
  return parse_backward_profile(read_text_input(path, "profile"), path);
}

BackwardProfile parse_backward_profile(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  BackwardProfile profile;
  std::string line;
  int number = 0;
  bool have_total = false;
  while (std::getline(in, line)) {
    ++number;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    auto bad = [&](const std::string& why) {
      return UsageError("profile '" + path + "' line " + std::to_string(number) + ": " + why);
    };
    double seconds = 0;
    if (!(words >> seconds) || seconds < 0) throw bad("expected a time in seconds after '" + name + "'");
    if (name == "backward") {
      profile.backward_s = seconds;
      have_total = true;
      continue;
    }
    if (name == "forward") {
      profile.forward_s = seconds;
      continue;
    }
    long long count = 0;
    if (!(words >> count) || count <= 0) throw bad("expected a positive element count for '" + name + "'");
    profile.tensors.push_back({name, static_cast<size_t>(count)});
    profile.ready_s.push_back(seconds);
  }
  if (!have_total) throw UsageError("profile '" + path + "' has no 'backward SECONDS' line");
  if (profile.tensors.empty()) throw UsageError("profile '" + path + "' lists no tensors");
  for (double t : profile.ready_s)
    if (t > profile.backward_s) throw UsageError("profile '" + path + "': a tensor is ready after backward ends");
  return profile;
}

void write_backward_profile(const std::string& path, const BackwardProfile& profile) {
  AtomicFile file(path);
  std::ostream& out = file.stream();
  out << "# scalebench backward profile: name, seconds after backward starts, fp32 elements\n";
  out << "backward " << profile.backward_s << "\n";
  if (profile.forward_s > 0) out << "forward " << profile.forward_s << "\n";
  for (size_t k = 0; k < profile.tensors.size(); ++k)
    out << profile.tensors[k].name << " " << profile.ready_s[k] << " " << profile.tensors[k].count << "\n";
  file.commit();
}

}  // namespace sb
