// SPDX-License-Identifier: Apache-2.0
// spin_team: helper threads that a caller hands a parallel region to, and that wait for the next
// one spinning before they park (device/spin_wait.hpp). thread_pool's parallel_for runs its regions
// on one (device/parallel_for.hpp), the caller plus threads - 1 helpers, so that the helpers and the
// caller spin on as many cores as the pool was given and no more.
//
// Why not the pool's own threads: Eigen's ThreadPool parks a thread that finds no work (typeflow's
// intra-op pool has its spinning off: its threads - 1 busy helpers and the spinning idle one would
// be one thread more than cores), and a region's helper then starts, and its caller learns that it
// has finished, each through a wake-up of a parked thread: 15-70 us apiece on a virtual machine,
// against regions of a few to a few hundred microseconds in a model at batch 1. ONNX Runtime's
// intra-op threads spin between regions for the same reason.
//
// One caller at a time: a region that finds the team busy (another thread's region, or one started
// from inside a region's block on the caller) is not queued behind it; try_run says false and the
// caller runs it elsewhere (parallel_for: on the Eigen pool's threads; on a helper, inline). The helpers then spinning and the Eigen
// pool's working threads can outnumber the cores for up to the spin budget. A region names how
// many helpers take part (the first k): the others see it go by and neither run it nor are waited for.
//   detail::spin_team team(1, std::chrono::microseconds(200));
//   team.try_run(1, &help, &state, [&]() noexcept { caller_share(); });
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <typeflow/device/spin_wait.hpp>

namespace typeflow::detail {

// True on a spin_team's helper threads (of any team): a region started from one of its blocks runs
// there (parallel_for), as one started on a thread of the Eigen pool does, instead of asking more
// threads, which are busy with the outer region.
inline thread_local bool on_spin_team_helper = false;

class spin_team {
 public:
  // `helpers` threads (0 to 65535), which spin up to `spin` waiting for a region before they park,
  // as the caller spins waiting for them. Throws std::system_error when a thread cannot start (the
  // ones started are stopped first), std::invalid_argument for more than 65535 helpers.
  spin_team(int helpers, std::chrono::nanoseconds spin) : spin_ns_(clamp_spin(spin)) {
    if (helpers > max_helpers) throw std::invalid_argument("spin_team: more than 65535 helpers");
    threads_.reserve(static_cast<std::size_t>(helpers > 0 ? helpers : 0));
    try {
      for (int i = 0; i < helpers; ++i) threads_.emplace_back([this, i] { loop(i); });
    } catch (...) {
      stop();
      throw;
    }
  }
  spin_team(const spin_team&) = delete;
  spin_team& operator=(const spin_team&) = delete;
  // Not while a region runs (the team's owner is being destroyed then).
  ~spin_team() { stop(); }

  int helpers() const noexcept { return static_cast<int>(threads_.size()); }
  static constexpr int max_helpers = 0xffff;

  // How long the helpers and the caller spin before they park: zero parks at once, and a longer
  // spin than max_spin is max_spin.
  static constexpr std::chrono::nanoseconds max_spin = std::chrono::seconds(1);
  std::chrono::nanoseconds spin() const noexcept {
    return std::chrono::nanoseconds(spin_ns_.load(std::memory_order_relaxed));
  }
  template <class Rep, class Period>
  void set_spin(std::chrono::duration<Rep, Period> spin) noexcept {
    spin_ns_.store(clamp_spin(spin), std::memory_order_relaxed);
  }
  // Compared in the caller's units, converted only below max_spin: microseconds::max() does not
  // overflow nanoseconds (in units coarser than a second, any positive spin is max_spin).
  template <class Rep, class Period>
  static std::int64_t clamp_spin(std::chrono::duration<Rep, Period> spin) noexcept {
    using D = std::chrono::duration<Rep, Period>;
    if (!(spin > D::zero())) return 0;
    if (spin >= std::chrono::duration_cast<D>(max_spin)) return max_spin.count();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(spin).count();
  }

  // Runs help(context) on the first `helpers` helpers (1 to helpers()) and caller() on the calling
  // thread, and returns true once all have returned; false, having run nothing, when the team has
  // fewer helpers or another region holds it. Neither may throw (a region's blocks keep their
  // exceptions for the caller).
  template <class Caller>
  bool try_run(int helpers, void (*help)(void*) noexcept, void* context, Caller&& caller) noexcept {
    static_assert(noexcept(caller()), "spin_team::try_run: the caller's share must not throw");
    if (helpers < 1 || helpers > this->helpers() || busy_.exchange(true, std::memory_order_acquire)) return false;
    remaining_.store(helpers, std::memory_order_relaxed);
    help_ = help;
    context_ = context;
    // One value publishes the region and its helper count: (region number << 16) | helpers, so a
    // helper that sat out earlier regions reads the count of the one it takes part in. A helper that
    // parks counts itself in sleepers_ before it reads the generation again; the caller stores the
    // generation before it reads sleepers_. Both sequentially consistent: at least one of the two
    // reads sees the other side's write, so a parked helper is always woken.
    const std::uint64_t region = (generation_.load(std::memory_order_relaxed) >> 16) + 1;
    generation_.store(region << 16 | static_cast<std::uint64_t>(helpers), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard lock(mutex_); }
      wake_.notify_all();
    }
    caller();
    // The helpers' arrivals, the same way: the last one notifies only a caller that said it parks.
    if (!spin_until([this] { return remaining_.load(std::memory_order_acquire) == 0; }, spin())) {
      std::unique_lock lock(mutex_);
      caller_parked_.store(true, std::memory_order_seq_cst);
      done_.wait(lock, [this] { return remaining_.load(std::memory_order_seq_cst) == 0; });
      caller_parked_.store(false, std::memory_order_relaxed);
    }
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  void loop(int index) noexcept {
    // Regions are numbered from 1; one starts only when its helpers have finished the last, so a
    // helper taking part in a region has seen every region before it that it took part in.
    on_spin_team_helper = true;
    std::uint64_t seen = 0;
    for (;;) {
      const auto published = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      if (!spin_until(published, spin())) {
        std::unique_lock lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stopping_.load(std::memory_order_acquire)) return;
      // Not one of this region's helpers: it spins for the next one again (on a pool of many
      // threads running regions of few, the others spin through each region's budget).
      if (static_cast<int>(seen & max_helpers) <= index) continue;
      help_(context_);
      // The team outlives its regions: a notification that comes late finds the next region's
      // caller re-checking its count, which is harmless.
      if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_parked_.load(std::memory_order_seq_cst)) {
        std::lock_guard lock(mutex_);
        done_.notify_one();
      }
    }
  }

  void stop() noexcept {
    stopping_.store(true, std::memory_order_release);
    generation_.fetch_add(std::uint64_t{1} << 16, std::memory_order_seq_cst);
    { std::lock_guard lock(mutex_); }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  std::atomic<std::int64_t> spin_ns_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  // The region: written by its caller before the generation that publishes it.
  void (*help_)(void*) noexcept = nullptr;
  void* context_ = nullptr;
  std::atomic<int> remaining_{0};  // this region's helpers still to finish
  std::atomic<bool> caller_parked_{false};
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
};

}  // namespace typeflow::detail
