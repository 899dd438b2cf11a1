// SPDX-License-Identifier: Apache-2.0
// cpu: the calling thread, Eigen's DefaultDevice, the default aligned allocator.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <string_view>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/scratch.hpp>

namespace typeflow {

class cpu {
 public:
  static constexpr std::string_view device_type = "CPU";
  std::string_view name() const noexcept { return "/job:localhost/replica:0/task:0/device:CPU:0"; }
  int num_threads() const noexcept { return 1; }

  const Eigen::DefaultDevice& eigen() const noexcept { return eigen_; }
  // The device for contractions: its GEMM packing blocks come from the thread's scratch cache
  // (device/scratch.hpp), so a repeated matmul takes nothing from the heap. Not for elementwise
  // expressions, which Eigen vectorises only on DefaultDevice itself.
  const eigen_scratch_device& eigen_with_scratch() const noexcept { return scratch_; }

  result<tensor> allocate(dtype type, const shape& s) { return tensor::allocate(type, s); }

  // Runs f(first, last) over [0, n) on the calling thread; cost_per_unit (cycles) is ignored.
  template <class F>
  void parallel_for(std::int64_t n, double /*cost_per_unit*/, F&& f) const {
    if (n > 0) f(std::int64_t{0}, n);
  }

 private:
  Eigen::DefaultDevice eigen_;
  eigen_scratch_device scratch_;
};

} // namespace typeflow
