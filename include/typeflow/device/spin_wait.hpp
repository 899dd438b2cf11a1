// SPDX-License-Identifier: Apache-2.0
// Waiting that spins for a bounded time before it parks: spin_until(condition, budget) and
// completion, a count of helpers still to finish that a caller waits on.
//
// A thread that parks on a futex and is woken by another takes the scheduler's wake-up path: on a
// virtual machine whose idle vCPU is halted, 15-70 us (measured on the 2-vCPU machine of the
// benchmarks: a parallel region of 2 x 0.2 us of work took 14-72 us through a parking pool, 1.9 us
// with both sides spinning). A kernel of tens of microseconds split over two threads then gains
// nothing or loses. So the side that waits spins first (pausing the core between reads), and parks
// only when the budget runs out: the budget bounds what a wait costs a core when the other side is
// slow, and an idle program still parks.
//   detail::completion done(helpers);  // each helper: done.arrive();  the caller: done.wait(spin);
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace typeflow::detail {

// Tells the core that this is a spin loop (x86 pause, ARM yield): the sibling hyperthread runs,
// and leaving the loop does not flush the pipeline.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  std::this_thread::yield();
#endif
}

// Reads condition() until it is true (true) or `budget` (at most an hour) has passed (false); a
// budget of zero or less reads it once. The clock is read every 64 reads, not on each.
template <class Condition>
bool spin_until(Condition&& condition, std::chrono::nanoseconds budget) {
  if (condition()) return true;
  if (budget <= std::chrono::nanoseconds::zero()) return false;
  // At most an hour: the deadline must not overflow the clock.
  const auto deadline = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(budget, std::chrono::hours(1));
  for (unsigned i = 1;; ++i) {
    cpu_relax();
    if (condition()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// `count` helpers to finish: each calls arrive() once; the caller's wait(spin) returns once all
// have. wait() spins up to `spin`, then parks; it returns only after the last arrive() has left
// its critical section, so the caller may then destroy the completion while no helper touches it.
// That is why arrive() always takes the lock: spin_team, which outlives its regions, has helpers
// arrive without it unless its caller parked.
class completion {
 public:
  explicit completion(int count) noexcept : count_(count) {}
  completion(const completion&) = delete;
  completion& operator=(const completion&) = delete;

  void arrive() noexcept {
    std::lock_guard lock(mutex_);
    if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
  }

  void wait(std::chrono::nanoseconds spin) noexcept {
    spin_until([this] { return count_.load(std::memory_order_acquire) == 0; }, spin);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return count_.load(std::memory_order_acquire) == 0; });
  }

 private:
  std::atomic<int> count_;
  std::mutex mutex_;
  std::condition_variable done_;
};

}  // namespace typeflow::detail
