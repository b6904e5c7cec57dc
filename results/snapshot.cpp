#include "results/snapshot.hpp"

#include <cstdio>
#include <exception>

namespace sb {

std::string Snapshots::status(const std::string& after) {
  return "snapshot after " + after + ": the run had not ended (a later save would have replaced this)";
}

bool Snapshots::save(const ResultsFile& final_file, const std::string& after,
                     const std::function<void(ResultsFile&, const std::string& status)>& write) {
  if (refused_) return false;
  try {
    // Its own temporary name: the final file's temporary is still open beside it.
    ResultsFile snapshot(final_file.final_path(), ResultsFile::Build::on_disk, ".snapshot");
    write(snapshot, status(after));
    snapshot.commit();
    last_after_ = after;
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: the results after %s were not saved, nor will later ones be (the run goes on): %s\n",
                 program_.c_str(), after.c_str(), e.what());
    refused_ = true;
    return false;
  }
}

void Snapshots::plan_breaks(size_t count, std::string unit) {
  breaks_ = count;
  breaks_done_ = 0;
  unit_ = std::move(unit);
}

bool Snapshots::save_at_break(const ResultsFile& final_file, const std::string& what,
                              const std::function<void(ResultsFile&, const std::string& status)>& write) {
  if (++breaks_done_ >= breaks_) return false;  // the last: the final save comes next
  return save(final_file,
              what + " (" + std::to_string(breaks_done_) + " of " + std::to_string(breaks_) + " " + unit_ + ")", write);
}

std::string Snapshots::left_on_disk() const {
  return any() ? "the file there is the snapshot after " + last_after_ : "";
}

std::string join_clauses(const std::string& first, const std::string& second) {
  if (first.empty()) return second;
  if (second.empty()) return first;
  return first + "; " + second;
}

}  // namespace sb
