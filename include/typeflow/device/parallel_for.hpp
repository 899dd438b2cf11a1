// SPDX-License-Identifier: Apache-2.0
// parallel_for(pool, max_threads, n, cost_per_unit, f): f(first, last) over blocks of [0, n), on
// the calling thread and up to max_threads - 1 threads of an Eigen::ThreadPool, taking nothing from
// the heap. This is thread_pool's parallel_for, which the host kernels split their work with.
//
// Eigen's ThreadPoolDevice::parallelFor, which it replaces, wraps every block it schedules in a
// std::function whose closure is larger than std::function's inline buffer: a heap allocation a
// block, dozens a step of a model. Here each helper's task captures one pointer (it
// fits the buffer), the helpers take blocks from a shared counter (a helper that starts late, or a
// thread that other work slows, leaves its blocks to the others), and the caller works too. Blocks
// are sized so that the threads get equal shares (parallel_block_size).
//
// How many threads: Eigen's cost model (TensorCostModel: 100,000 cycles to start, 100,000 a
// thread), so that the split is the one Eigen's device made. Called from a thread of the same pool
// (a kernel run by a task of this pool), the work runs on the caller: waiting there for tasks queued
// behind it could wait forever.
//   detail::parallel_for(pool, 4, rows, row_cycles, [&](std::int64_t first, std::int64_t last) { ... });
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>

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

// The shared state of one call: the next block to take, and the helpers still to finish.
class parallel_blocks {
 public:
  parallel_blocks(std::int64_t n, std::int64_t block, unsigned helpers, block_function f)
      : n_(n), block_(block), blocks_((n + block - 1) / block), f_(f), done_(helpers) {}

  // Takes blocks until none is left.
  void work() {
    for (std::int64_t b = next_.fetch_add(1, std::memory_order_relaxed); b < blocks_;
         b = next_.fetch_add(1, std::memory_order_relaxed)) {
      const std::int64_t first = b * block_;
      f_(first, std::min(n_, first + block_));
    }
  }

  // A helper's task: its blocks, then the notification the caller waits for. An exception is kept
  // for the caller (the first one), and stops the others from taking more blocks.
  void help() noexcept {
    try {
      work();
    } catch (...) {
      keep(std::current_exception());
    }
    done_.Notify();
  }

  // The caller's share; then it waits for every helper, whose task reads this object, and throws
  // what a helper threw.
  void run_and_wait() {
    try {
      work();
    } catch (...) {
      keep(std::current_exception());
    }
    done_.Wait();
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
  Eigen::Barrier done_;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// n units in blocks on `threads` threads (the caller and threads - 1 of the pool).
inline void parallel_blocks_on(Eigen::ThreadPool& pool, int threads, std::int64_t n, block_function f) {
  parallel_blocks state(n, parallel_block_size(n, threads), static_cast<unsigned>(threads - 1), f);
  for (int i = 1; i < threads; ++i) pool.Schedule([s = &state] { s->help(); });
  state.run_and_wait();
}

template <class F>
void parallel_for(Eigen::ThreadPool& pool, int max_threads, std::int64_t n, double cost_per_unit, F&& f) {
  if (n <= 0) return;
  const int threads = parallel_threads(n, cost_per_unit, max_threads);
  if (threads == 1 || pool.CurrentThreadId() >= 0) {
    f(std::int64_t{0}, n);
    return;
  }
  parallel_blocks_on(pool, threads, n, block_function(f));
}

}  // namespace typeflow::detail
