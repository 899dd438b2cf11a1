// SPDX-License-Identifier: Apache-2.0
// pool_mutex: the lock of a memory pool, whose critical sections are a few dozen instructions.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <atomic>
#include <cstdint>

namespace typeflow::detail {

// A mutex in one atomic word (Drepper's "Futexes Are Tricky", mutex 2): 0 free, 1 locked, 2 locked
// and a thread may be asleep on it. Without contention, lock is one compare-exchange and unlock one
// exchange, inline, where std::mutex calls into the C library for the same two instructions
// (measured on bfc_allocator's step traces: about 15 instructions of 150 per allocate or free). A
// thread that finds it locked spins a little, since the holder leaves within nanoseconds, then
// sleeps in std::atomic::wait (a futex on Linux) until unlock wakes one sleeper. Not recursive; no
// fairness beyond what the futex gives. Satisfies Lockable, so std::lock_guard takes it.
class pool_mutex {
 public:
  pool_mutex() noexcept = default;
  pool_mutex(const pool_mutex&) = delete;
  pool_mutex& operator=(const pool_mutex&) = delete;

  void lock() noexcept {
    std::uint32_t expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
      lock_contended();
  }
  bool try_lock() noexcept {
    std::uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  static constexpr int spins = 64;

  void lock_contended() noexcept {
    for (int i = 0; i < spins; ++i) {
      relax();
      if (state_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
    }
    // Marks the lock as having a sleeper before sleeping, so that the holder's unlock wakes one; a
    // thread that takes it this way leaves it marked, which costs at most one needless wake-up.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }

  static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  std::atomic<std::uint32_t> state_{0};
};

}  // namespace typeflow::detail
