#pragma once
// What a run has finished, saved under its final name while the run goes on. The watchdog's fault
// handler saves the finished results on a timeout, SIGINT/SIGTERM or a fatal error, but a process
// killed outright (SIGKILL: the OOM killer, Slurm after KillWait, mpirun after its grace) runs no
// handler: then the last snapshot is what is left. The run's own final save replaces it.
#include <functional>
#include <string>
#include <utility>

#include "results/results_file.hpp"

namespace sb {

class Snapshots {
 public:
  explicit Snapshots(std::string program) : program_(std::move(program)) {}

  // The status a snapshot carries: "snapshot after <after>: the run had not ended (...)".
  static std::string status(const std::string& after);

  // Writes a second file for `final_file`'s final name (a temporary of its own, then a rename over
  // whatever is there), filled by `write` with status(after). The final file stays open. A
  // snapshot is insurance, not the result: when it cannot be written, one line on stderr says so
  // and the run goes on (returns false), without more snapshots (a disk that refused one, full or
  // failing, would refuse the next, each with its own line; the snapshot before stays). The caller
  // serialises snapshots with its final save.
  bool save(const ResultsFile& final_file, const std::string& after,
            const std::function<void(ResultsFile&, const std::string& status)>& write);

  // A run with `count` natural breaks (its sweeps, its steps), named `unit`: save_at_break() saves
  // after each but the last, which the final save follows, and numbers them in the status
  // ("snapshot after ring@mpi (1 of 4 sweeps): ...").
  void plan_breaks(size_t count, std::string unit);
  bool save_at_break(const ResultsFile& final_file, const std::string& what,
                     const std::function<void(ResultsFile&, const std::string& status)>& write);

  // Whether a snapshot is on disk, and for the message of a final save that failed: which one is
  // left there ("" when none).
  bool any() const { return !last_after_.empty(); }
  std::string left_on_disk() const;

 private:
  std::string program_;
  std::string last_after_;  // what the last snapshot on disk was taken after
  bool refused_ = false;    // one failed: no more are tried
  size_t breaks_ = 0, breaks_done_ = 0;
  std::string unit_;
};

// Joins two clauses of an error message's tail with "; ", either of which may be empty.
std::string join_clauses(const std::string& first, const std::string& second);

}  // namespace sb
