// SPDX-License-Identifier: Apache-2.0
// parallel_for(pool, team, max_threads, n, cost_per_unit, f): f(first, last) over blocks of [0, n),
// on the calling thread and up to max_threads - 1 helpers, taking nothing from the heap. This is
// thread_pool's parallel_for, which the host kernels split their work with. The helpers are a
// spin_team's (device/spin_team.hpp), which wait for the next region spinning; while another caller
// holds the team (or without one), tasks of an Eigen::ThreadPool.
//
// Eigen's ThreadPoolDevice::parallelFor, which it replaces, wraps every block it schedules in a
// std::function whose closure is larger than std::function's inline buffer: a heap allocation a
// block, dozens a step of a model. Here a region's state is on the caller's stack, each pool task
// captures one pointer (it fits the buffer), the helpers take blocks from a shared counter (a helper
// that starts late, or a thread that other work slows, leaves its blocks to the others), and the
// caller works too, then waits for the helpers spinning before it parks (device/spin_wait.hpp).
// Blocks are sized so that the threads get equal shares (parallel_block_size).
//
// How many threads: Eigen's cost model (TensorCostModel: 100,000 cycles to start, 100,000 a
// thread), so that the split is the one Eigen's device made. Called from a thread of the same pool
// (a kernel run by a task of this pool), the work runs on the caller: waiting there for tasks queued
// behind it could wait forever. Called from a team helper (a block that splits its own work), it
// runs there too: the other threads are busy with the outer region.
//   detail::parallel_for(pool, &team, 4, rows, row_cycles, [&](std::int64_t first, std::int64_t last) { ... });
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/spin_team.hpp>
#include <typeflow/device/spin_wait.hpp>

namespace typeflow::detail {

// Cycles below which one thread does the whole, and cycles each further thread must have to do
// (Eigen's kStartupCycles and kPerThreadCycles).
inline constexpr double parallel_startup_cycles = 100000;
inline constexpr double parallel_cycles_per_thread = 100000;
// Blocks a thread: enough for the fast threads to take over from a slow one.
inline constexpr std::int64_t parallel_blocks_per_thread = 4;

// The threads, 1 to max_threads, that n units of cost_per_unit cycles are worth.
inline int parallel_threads(std::int64_t n, double cost_per_unit, int max_threads) {
  if (!(cost_per_unit > 0)) return 1;  // also NaN
  const double total = static_cast<double>(n) * cost_per_unit;
  const double worth = (total - parallel_startup_cycles) / parallel_cycles_per_thread + 0.9;
  const double most = static_cast<double>(std::max<std::int64_t>(std::min<std::int64_t>(max_threads, n), 1));
  return static_cast<int>(std::clamp(worth, 1.0, most));
}

// Units a block: for at most 64 threads, the block count from threads to four blocks a thread whose
// slowest thread has the fewest units (ceil(blocks / threads) blocks of this size), the most blocks
// on a tie. 28 units on two threads are then 4 blocks of 7, not 7 blocks of 4 (one thread doing 16
// units while the other does 12): Eigen's parallelFor likewise prefers a count that divides evenly.
inline std::int64_t parallel_block_size(std::int64_t n, int threads) {
  const std::int64_t most = std::min(n, parallel_blocks_per_thread * threads);
  if (threads > 64) return (n + most - 1) / most;
  std::int64_t best_size = n, best_span = n;
  for (std::int64_t count = most; count >= std::min<std::int64_t>(n, threads); --count) {
    const std::int64_t size = (n + count - 1) / count;
    const std::int64_t span = ((n + size - 1) / size + threads - 1) / threads * size;
    if (span < best_span) {
      best_span = span;
      best_size = size;
    }
  }
  return best_size;
}

// f(first, last) through a pointer: the code that shares out the blocks is compiled once, not
// once per callable (every kernel's lambda, for every dtype): a callable adds only this thunk.
class block_function {
 public:
  // Not for a block_function itself (F& would be a better match than the copy constructor, and
  // the copy would call the original through a pointer to it).
  template <class F>
    requires(!std::is_same_v<std::remove_cv_t<F>, block_function>)
  explicit block_function(F& f) noexcept
      : f_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* p, std::int64_t first, std::int64_t last) { (*static_cast<F*>(p))(first, last); }) {}
  void operator()(std::int64_t first, std::int64_t last) const { call_(f_, first, last); }

 private:
  void* f_;
  void (*call_)(void*, std::int64_t, std::int64_t);
};

// The shared state of one call: the next block to take, and the first exception a block threw.
class parallel_blocks {
 public:
  parallel_blocks(std::int64_t n, std::int64_t block, block_function f)
      : n_(n), block_(block), blocks_((n + block - 1) / block), f_(f) {}

  // Takes blocks until none is left. An exception is kept for the caller (the first one), and stops
  // the others from taking more blocks.
  void take_blocks() noexcept {
    try {
      for (std::int64_t b = next_.fetch_add(1, std::memory_order_relaxed); b < blocks_;
           b = next_.fetch_add(1, std::memory_order_relaxed)) {
        const std::int64_t first = b * block_;
        f_(first, std::min(n_, first + block_));
      }
    } catch (...) {
      keep(std::current_exception());
    }
  }
  static void take_blocks_of(void* state) noexcept { static_cast<parallel_blocks*>(state)->take_blocks(); }

  // Once every thread has finished: what a block threw.
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void keep(std::exception_ptr e) noexcept {
    next_.store(blocks_, std::memory_order_relaxed);
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::move(e);
  }

  const std::int64_t n_, block_, blocks_;
  block_function f_;
  std::atomic<std::int64_t> next_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// n units in blocks on `threads` threads: the caller and threads - 1 tasks of the pool, which the
// caller waits for spinning up to `spin`, then parked.
inline void parallel_blocks_on(Eigen::ThreadPool& pool, int threads, std::int64_t n, block_function f,
                               std::chrono::nanoseconds spin) {
  parallel_blocks state(n, parallel_block_size(n, threads), f);
  completion done(threads - 1);
  // Each task captures one pointer, inside std::function's buffer.
  struct region {
    parallel_blocks& state;
    completion& done;
  } r{state, done};
  for (int i = 1; i < threads; ++i)
    pool.Schedule([p = &r] {
      p->state.take_blocks();
      p->done.arrive();
    });
  state.take_blocks();
  done.wait(spin);
  state.rethrow();
}

// The same on threads - 1 helpers of a spin_team, which wait for it spinning (device/spin_team.hpp),
// when the team has that many and is free; false (nothing run) otherwise.
inline bool parallel_blocks_on(spin_team& team, int threads, std::int64_t n, block_function f) {
  parallel_blocks state(n, parallel_block_size(n, threads), f);
  if (!team.try_run(threads - 1, &parallel_blocks::take_blocks_of, &state, [&]() noexcept { state.take_blocks(); }))
    return false;
  state.rethrow();
  return true;
}

// On the pool's threads (team: nullptr), or on the team's where it is free.
template <class F>
void parallel_for(Eigen::ThreadPool& pool, spin_team* team, int max_threads, std::int64_t n, double cost_per_unit,
                  F&& f) {
  if (n <= 0) return;
  const int threads = parallel_threads(n, cost_per_unit, max_threads);
  if (threads == 1 || pool.CurrentThreadId() >= 0 || on_spin_team_helper) {
    f(std::int64_t{0}, n);
    return;
  }
  const block_function blocks(f);
  if (team != nullptr && parallel_blocks_on(*team, threads, n, blocks)) return;
  parallel_blocks_on(pool, threads, n, blocks, team != nullptr ? team->spin() : std::chrono::nanoseconds{});
}

}  // namespace typeflow::detail
