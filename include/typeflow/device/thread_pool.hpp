// SPDX-License-Identifier: Apache-2.0
// thread_pool: kernels split their work over an Eigen::ThreadPool (the pool TensorFlow uses for
// intra-op parallelism) through Eigen's ThreadPoolDevice, whose temporary memory (GEMM packing
// blocks) comes from the threads' scratch caches (device/scratch.hpp).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/scratch.hpp>

namespace typeflow {

class thread_pool {
 public:
  // threads <= 0 means one per hardware thread.
  explicit thread_pool(int threads = 0)
      : threads_(threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(std::make_unique<Eigen::ThreadPool>(threads_)),
        eigen_(std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(), threads_, &scratch_)) {}

  static constexpr std::string_view device_type = "CPU";
  std::string_view name() const noexcept { return "/job:localhost/replica:0/task:0/device:CPU:0"; }
  int num_threads() const noexcept { return threads_; }

  const Eigen::ThreadPoolDevice& eigen() const noexcept { return *eigen_; }
  // The device for contractions: the same one, since its allocations already use the cache.
  const Eigen::ThreadPoolDevice& eigen_with_scratch() const noexcept { return *eigen_; }
  Eigen::ThreadPool& pool() noexcept { return *pool_; }

  result<tensor> allocate(dtype type, const shape& s) { return tensor::allocate(type, s); }

  // Runs f(first, last) over blocks of [0, n), in parallel when the work is worth it.
  // cost_per_unit is the cost of one index in cycles; Eigen sizes the blocks from it.
  template <class F>
  void parallel_for(std::int64_t n, double cost_per_unit, F&& f) const {
    if (n <= 0) return;
    eigen_->parallelFor(static_cast<Eigen::Index>(n), Eigen::TensorOpCost(0, 0, cost_per_unit),
                        [&f](Eigen::Index first, Eigen::Index last) {
                          f(static_cast<std::int64_t>(first), static_cast<std::int64_t>(last));
                        });
  }

 private:
  int threads_;
  eigen_scratch_allocator scratch_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_;
};

} // namespace typeflow
