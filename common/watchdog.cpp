#include "common/watchdog.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>

#include "common/check.hpp"

namespace sb {
namespace {

sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void block_termination_signals() {
  sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Watchdog::Watchdog(double timeout_seconds, double grace_seconds, FaultHandler on_fault)
    : deadline_seconds_(timeout_seconds > 0 ? timeout_seconds + grace_seconds : 0),
      on_fault_(std::move(on_fault)),
      thread_([this] { watch(); }) {
  if (on_fault_) {
    set_fatal_error_handler(
        [this](const std::string& what) { handle_fault("failed: " + what + " while " + current_phase()); });
  }
}

Watchdog::~Watchdog() {
  if (on_fault_) set_fatal_error_handler({});
  stop_ = true;
  thread_.join();
}

void Watchdog::phase(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = what;
  }
  beat();
}

void Watchdog::handle_fault(const std::string& reason) {
  std::call_once(fault_handled_, [&] {
    try {
      on_fault_(reason);
    } catch (const std::exception& e) {  // saving what there is failed too (a full disk)
      std::fprintf(stderr, "%s: %s\n", process_label().c_str(), e.what());
    }
  });
}

std::string Watchdog::current_phase() {
  std::lock_guard<std::mutex> lock(mutex_);
  return phase_;
}

void Watchdog::watch() {
  using clock = std::chrono::steady_clock;
  const sigset_t signals = termination_signals();
  uint64_t seen = beats_.load();
  auto last_progress = clock::now();
  while (!stop_) {
    // Wake up every 100 ms: to see a signal at once, and to notice the end of the run.
    timespec poll{0, 100'000'000};
    const int signal = sigtimedwait(&signals, nullptr, &poll);
    std::string reason;
    if (signal > 0) {
      reason = std::string("interrupted by ") + (signal == SIGINT ? "SIGINT" : "SIGTERM");
    } else if (deadline_seconds_ > 0) {
      const uint64_t now_beats = beats_.load(std::memory_order_relaxed);
      if (now_beats != seen) {
        seen = now_beats;
        last_progress = clock::now();
      } else if (std::chrono::duration<double>(clock::now() - last_progress).count() >
                 deadline_seconds_) {
        reason = "timed out: no progress for " + std::to_string(static_cast<int>(deadline_seconds_)) +
                 " s (a peer may be dead or stuck; see -T)";
      }
    }
    if (reason.empty()) continue;
    reason += " while " + current_phase();
    std::fprintf(stderr, "%s: %s\n", process_label().c_str(), reason.c_str());
    std::fflush(stderr);
    if (on_fault_) {
      handle_fault(reason);
    } else if (signal > 0) {
      // The launcher signals every rank at once; a rank without results to save lingers a
      // moment, so that its exit does not get rank 0 killed before rank 0 has saved.
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::fflush(stdout);
    _exit(signal > 0 ? 128 + signal : kExitFault);
  }
}

}  // namespace sb
