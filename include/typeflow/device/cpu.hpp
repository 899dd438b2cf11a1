// SPDX-License-Identifier: Apache-2.0
// basic_cpu<Allocator>: the calling thread, Eigen's DefaultDevice, tensors from Allocator.
// cpu = basic_cpu<heap_allocator>.
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstdint>
#include <string_view>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/host_copies.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/memory/device_memory.hpp>
#include <typeflow/memory/heap_allocator.hpp>

namespace typeflow {

// Every basic_cpu is of the cpu family: kernels registered for cpu run on it unchanged, and only
// where tensors live differs. The allocator is owned as device_memory says: copies of the policy
// share it, and tensors keep it alive after the policy is gone.
//   tf::cpu device;                                                    // heap_allocator
//   tf::basic_cpu<tf::bfc_allocator<tf::host_sub_allocator>> pooled(std::in_place, tf::bfc_options{...});
// Kernel scratch (GEMM packing blocks, im2col patches) comes from the thread's scratch cache
// (device/scratch.hpp), not from the allocator: it never outlives a kernel call.
template <class Allocator>
class basic_cpu : public host_copies {
 public:
  using allocator_type = Allocator;
  using family_type = cpu;

  static constexpr std::string_view device_type = "CPU";
  static constexpr bool fuses_elementwise = true;  // fused_elementwise has a kernel here (kernels/cpu/fused.hpp)
  static constexpr int priority = 50;  // TensorFlow's CPU device

  basic_cpu() requires std::default_initializable<Allocator> = default;
  // The allocator built from `allocator_args`.
  template <class... Args>
  explicit basic_cpu(std::in_place_t, Args&&... allocator_args) : memory_(std::in_place, std::forward<Args>(allocator_args)...) {}

  // "/job:localhost/replica:0/task:0/device:CPU:0"; a device_set gives each instance its ordinal.
  std::string_view name() const noexcept { return identity_.name(); }
  int ordinal() const noexcept { return identity_.ordinal(); }
  void set_ordinal(int ordinal) { identity_.set_ordinal(ordinal); }
  int num_threads() const noexcept { return 1; }

  const Eigen::DefaultDevice& eigen() const noexcept { return eigen_; }

  Allocator& allocator() noexcept { return memory_.allocator(); }
  const Allocator& allocator() const noexcept { return memory_.allocator(); }
  const device_memory<Allocator>& memory() const noexcept { return memory_; }

  result<tensor> allocate(dtype type, const shape& s) { return memory_.allocate(type, s, name(), space()); }

  // Runs f(first, last) over [0, n) on the calling thread; cost_per_unit (cycles) is ignored.
  template <class F>
  void parallel_for(std::int64_t n, double /*cost_per_unit*/, F&& f) const {
    if (n > 0) f(std::int64_t{0}, n);
  }

 private:
  Eigen::DefaultDevice eigen_;
  device_memory<Allocator> memory_;
  device_identity identity_{device_type};
};

static_assert(device_policy<cpu>, "typeflow::cpu must satisfy typeflow::device_policy");

} // namespace typeflow
