#include "results/environment_agreement.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <set>
#include <span>

#include "common/check.hpp"
#include "common/content_checksum.hpp"

namespace sb {
namespace {

// Open MPI's launcher exports these to each process for its own use; they name the job, the
// process, its node and the daemon it reports to, so they differ between ranks by design.
bool set_by_open_mpi_launcher(const std::string& name) {
  for (const char* prefix : {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                             "OMPI_MCA_shmem_RUNTIME_QUERY_hint"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// NAME \0 value \0 ..., which any value survives (one may hold a newline).
std::string serialise(const Settings& settings) {
  std::string text;
  for (const auto& [name, value] : settings) {
    text += name;
    text += '\0';
    text += value;
    text += '\0';
  }
  return text;
}

Settings deserialise(std::string_view text) {
  Settings settings;
  while (!text.empty()) {
    const size_t name_end = text.find('\0');
    const size_t value_end = text.find('\0', name_end + 1);
    if (name_end == std::string_view::npos || value_end == std::string_view::npos) break;
    settings[std::string(text.substr(0, name_end))] = std::string(text.substr(name_end + 1, value_end - name_end - 1));
    text.remove_prefix(value_end + 1);
  }
  return settings;
}

// A value as it can stand in one line of a warning or a report: newlines written as \n.
std::string one_line(const std::string& value) {
  std::string text;
  for (char c : value) text += c == '\n' ? std::string("\\n") : std::string(1, c);
  return text;
}

// Every rank's text on rank 0 (empty elsewhere). Collective over comm.
std::vector<std::string> gather_texts_on_root(const std::string& mine, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  SB_CHECK(mine.size() < static_cast<size_t>(INT_MAX), "an environment of 2 GiB or more");
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? static_cast<size_t>(nranks) : 0), offsets(lengths.size());
  SB_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm));
  long long total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    SB_CHECK(total + lengths[r] < INT_MAX, "the ranks' environments add up to 2 GiB or more");
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  SB_MPI_CHECK(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm));
  std::vector<std::string> texts;
  for (size_t r = 0; r < lengths.size(); ++r)
    texts.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  return texts;
}

}  // namespace

bool is_compared_setting(const std::string& name) {
  for (const char* prefix : {"OMPI_MCA_", "NCCL_", "UCX_", "OMP_"})
    if (name.rfind(prefix, 0) == 0) return !set_by_open_mpi_launcher(name);
  return false;
}

Settings compared_settings(const Settings& recorded) {
  Settings compared;
  for (const auto& [name, value] : recorded)
    if (is_compared_setting(name)) compared.emplace(name, value);
  return compared;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t last = i;
    while (last + 1 < ranks.size() && ranks[last + 1] == ranks[last] + 1) ++last;
    if (!text.empty()) text += ',';
    text += std::to_string(ranks[i]);
    if (last > i) text += '-' + std::to_string(ranks[last]);
    i = last + 1;
  }
  return text;
}

std::vector<std::string> setting_differences(const std::vector<Settings>& by_rank) {
  std::set<std::string> names;
  for (const Settings& settings : by_rank)
    for (const auto& entry : settings) names.insert(entry.first);
  std::vector<std::string> lines;
  for (const std::string& name : names) {
    // Each value met (unset as a null pointer) with the ranks that have it, in order of first rank.
    std::vector<std::pair<const std::string*, std::vector<int>>> groups;
    for (size_t r = 0; r < by_rank.size(); ++r) {
      const auto it = by_rank[r].find(name);
      const std::string* value = it == by_rank[r].end() ? nullptr : &it->second;
      auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
        return (g.first == nullptr) == (value == nullptr) && (value == nullptr || *g.first == *value);
      });
      if (group == groups.end()) group = groups.insert(groups.end(), {value, {}});
      group->second.push_back(static_cast<int>(r));
    }
    if (groups.size() < 2) continue;
    std::string line = name + ": ";
    for (size_t g = 0; g < groups.size(); ++g) {
      if (g) line += "; ";
      line += groups[g].first ? one_line(*groups[g].first) : std::string("unset");
      line += groups[g].second.size() == 1 ? " on rank " : " on ranks ";
      line += rank_ranges(groups[g].second);
    }
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> setting_changes(const Settings& then, const Settings& now) {
  std::set<std::string> names;
  for (const Settings* settings : {&then, &now})
    for (const auto& entry : *settings) names.insert(entry.first);
  const auto value = [](const Settings& settings, const std::string& name) {
    const auto it = settings.find(name);
    return it == settings.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  };
  std::vector<std::string> lines;
  for (const std::string& name : names) {
    const std::optional<std::string> before = value(then, name), after = value(now, name);
    if (before == after) continue;
    lines.push_back(name + ": " + (before ? one_line(*before) : "unset") + " then, " +
                    (after ? one_line(*after) : "unset") + " now");
  }
  return lines;
}

void compare_environments(RunMetadata& metadata) {
  int rank = 0;
  SB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  const std::string mine = serialise(compared_settings(metadata.environment));
  const uint64_t hash = hash_bytes(std::as_bytes(std::span(mine)), 0);
  uint64_t low = 0, high = 0;
  SB_MPI_CHECK(MPI_Allreduce(&hash, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD));
  SB_MPI_CHECK(MPI_Allreduce(&hash, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
  if (low == high) return;  // every rank has the same, bar a hash collision
  const std::vector<std::string> texts = gather_texts_on_root(mine, MPI_COMM_WORLD);
  if (rank != 0) return;
  std::vector<Settings> by_rank;
  for (const std::string& text : texts) by_rank.push_back(deserialise(text));
  metadata.environment_differences = setting_differences(by_rank);
  for (const std::string& line : metadata.environment_differences)
    std::fprintf(stderr, "%s: warning: the ranks' settings differ: %s\n", metadata.program.c_str(), line.c_str());
}

}  // namespace sb
