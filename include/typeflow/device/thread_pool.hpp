// SPDX-License-Identifier: Apache-2.0
// basic_thread_pool<Allocator>: kernels split their work over an Eigen::ThreadPool (the pool
// TensorFlow uses for intra-op parallelism) with parallel_for (device/parallel_for.hpp, no heap
// allocation), most of them running the cpu kernel's own Eigen evaluation block by block
// (device/parallel_assign.hpp); reductions and layout changes go through Eigen's ThreadPoolDevice,
// whose temporary memory comes from the threads' scratch caches (device/scratch.hpp). Tensors come
// from Allocator. thread_pool = basic_thread_pool<heap_allocator>.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/host_copies.hpp>
#include <typeflow/device/parallel_for.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/device/spin_team.hpp>
#include <typeflow/memory/device_memory.hpp>
#include <typeflow/memory/heap_allocator.hpp>

namespace typeflow {

// Every basic_thread_pool is of the thread_pool family: kernels registered for thread_pool run on
// it unchanged. The allocator is owned as device_memory says (tensors keep it alive), and must be
// thread-safe: kernels on the pool's threads allocate nothing from it, but the parallel executors
// allocate outputs from several threads at once.
//   tf::thread_pool device(4);
//   tf::basic_thread_pool<tf::bfc_allocator<tf::host_sub_allocator>> pooled(4, std::in_place, tf::bfc_options{...});
template <class Allocator>
class basic_thread_pool : public host_copies {
 public:
  using allocator_type = Allocator;
  using family_type = thread_pool;

  // threads <= 0 means one per hardware thread.
  explicit basic_thread_pool(int threads = 0) requires std::default_initializable<Allocator>
      : basic_thread_pool(threads, std::in_place) {}
  // The allocator built from `allocator_args`. parallel_for runs a kernel on the caller and up to
  // threads - 1 helpers of a spin_team, which wait for the next kernel spinning for spin_wait()
  // before they park (device/spin_team.hpp). The Eigen pool's threads park when they find no work
  // instead of spinning first (Eigen's allow_spinning): with a kernel on the caller and at most
  // threads - 1 of them, the spinning idle one took CPU from the threads that worked (on 2 cores,
  // the transformer at batch 1: 4.1 s of CPU spinning, 3.5-3.7 s parked, for the same runs).
  template <class... Args>
  basic_thread_pool(int threads, std::in_place_t, Args&&... allocator_args)
      : threads_(threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(std::make_unique<Eigen::ThreadPool>(threads_, /*allow_spinning=*/false)),
        eigen_(std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(), threads_, &scratch_)),
        team_(std::make_unique<detail::spin_team>(std::min(threads_ - 1, detail::spin_team::max_helpers), default_spin_wait)),
        memory_(std::in_place, std::forward<Args>(allocator_args)...) {}
  // Eigen's device points at this object's scratch_ allocator, so the policy stays where it is.
  basic_thread_pool(const basic_thread_pool&) = delete;
  basic_thread_pool& operator=(const basic_thread_pool&) = delete;

  static constexpr std::string_view device_type = "CPU";
  static constexpr bool fuses_elementwise = true;  // fused_elementwise has a kernel here (kernels/cpu/fused.hpp)
  static constexpr int priority = 60;  // above basic_cpu: intra-op threads, as TensorFlow's ThreadPoolDevice
  // "/job:localhost/replica:0/task:0/device:CPU:0"; a device_set gives each instance its ordinal.
  std::string_view name() const noexcept { return identity_.name(); }
  int ordinal() const noexcept { return identity_.ordinal(); }
  void set_ordinal(int ordinal) { identity_.set_ordinal(ordinal); }
  int num_threads() const noexcept { return threads_; }

  // How long parallel_for's helpers wait for the next region spinning before they park, and its
  // caller for the helpers (device/spin_team.hpp): zero parks at once, at most one second (a longer
  // one is one second). An idle pool parks after this long; a program that runs other threads
  // beside the pool's may want it shorter.
  static constexpr std::chrono::microseconds default_spin_wait{200};
  std::chrono::microseconds spin_wait() const noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(team_->spin());
  }
  void set_spin_wait(std::chrono::microseconds spin) noexcept { team_->set_spin(spin); }

  const Eigen::ThreadPoolDevice& eigen() const noexcept { return *eigen_; }
  Eigen::ThreadPool& pool() noexcept { return *pool_; }

  Allocator& allocator() noexcept { return memory_.allocator(); }
  const Allocator& allocator() const noexcept { return memory_.allocator(); }
  const device_memory<Allocator>& memory() const noexcept { return memory_; }

  result<tensor> allocate(dtype type, const shape& s) { return memory_.allocate(type, s, name(), space()); }

  // Runs f(first, last) over blocks of [0, n), on the calling thread and as many threads as the
  // work is worth (Eigen's cost model), taking nothing from the heap: the spinning helpers
  // (spin_wait()), or the pool's threads while another caller has those. cost_per_unit is the cost
  // of one index in cycles. From one of the pool's own threads it runs on that thread.
  template <class F>
  void parallel_for(std::int64_t n, double cost_per_unit, F&& f) const {
    detail::parallel_for(*pool_, team_.get(), threads_, n, cost_per_unit, f);
  }

 private:
  int threads_;
  eigen_scratch_allocator scratch_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_;
  std::unique_ptr<detail::spin_team> team_;  // threads_ - 1 helpers for parallel_for
  device_memory<Allocator> memory_;
  device_identity identity_{device_type};
};

static_assert(device_policy<thread_pool>, "typeflow::thread_pool must satisfy typeflow::device_policy");

} // namespace typeflow
