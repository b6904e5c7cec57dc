#pragma once
// Bounds the time a job can hang. The main thread reports progress (a heartbeat after every
// collective); a watchdog thread ends the process when no progress was made for `timeout`
// seconds, or when SIGINT or SIGTERM arrives (as the launcher sends when a peer dies). Before
// ending, it calls the program's fault handler, which on rank 0 saves the finished results. While
// it lives, a fatal library error (die(), common/check.hpp) calls the same handler, with
// "failed: <what> while <phase>". The handler runs once, whichever fault comes first (the
// launcher's SIGTERM often follows a fatal error); a later fault waits for it to finish.
//
// Ranks other than 0 wait `grace` seconds longer, so that when everybody is stuck rank 0, which
// holds the results, is the one that reports and saves first.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sb {

// Blocks SIGINT and SIGTERM in this thread and in every thread created after it (MPI's own
// included), so that they reach the watchdog's sigtimedwait. Call first thing in main().
void block_termination_signals();

class Watchdog {
 public:
  using FaultHandler = std::function<void(const std::string& reason)>;

  // timeout_seconds <= 0: no deadline, signals are still handled.
  Watchdog(double timeout_seconds, double grace_seconds, FaultHandler on_fault);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // What the main thread is doing now, for the message; also counts as progress.
  void phase(const std::string& what);
  // Progress: cheap enough to call after every iteration.
  void beat() { beats_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void watch();
  std::string current_phase();
  void handle_fault(const std::string& reason);

  double deadline_seconds_;
  FaultHandler on_fault_;
  std::atomic<uint64_t> beats_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string phase_ = "starting";
  std::once_flag fault_handled_;
  std::thread thread_;  // last: it starts watching at once
};

}  // namespace sb
