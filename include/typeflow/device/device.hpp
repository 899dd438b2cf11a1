// SPDX-License-Identifier: Apache-2.0
// The device-policy concept, device families, and `devices<...>`, a compile-time list of policies.
// A policy says where kernels run and gives them what they need there; memory lives in the
// allocator the policy names (its allocator_type, held in a device_memory: memory/), so the two
// stay separate. A policy also says where its tensors live (a memory_space), copies tensors between
// that space and the host asynchronously (completion through a callback), and synchronizes.
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/memory_space.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/device/device_name.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

// What an asynchronous copy calls, exactly once and from any thread, when the bytes have arrived.
using copy_done = std::function<void(status)>;

// Satisfied by typeflow::cpu, typeflow::thread_pool and basic_cpu<bfc_allocator<host_sub_allocator>>;
// not by Eigen::DefaultDevice (no name, no allocator, no allocation of tensors).
// allocate(dtype, shape) takes the tensor's memory from allocator(), and returns the allocator's
// status (resource_exhausted when it is full) with the dtype, shape and device in the message.
template <class D>
concept device_policy = requires(D& d, dtype t, const shape& s) {
  { D::device_type } -> std::convertible_to<std::string_view>;  // "CPU", "GPU"
  { d.name() } -> std::convertible_to<std::string_view>;        // "/job:localhost/replica:0/task:0/device:CPU:0"
  typename D::allocator_type;                                   // where its tensors' memory comes from
  requires allocator<typename D::allocator_type>;
  { d.allocator() } -> std::same_as<typename D::allocator_type&>;
  { d.allocate(t, s) } -> std::same_as<result<tensor>>;
  { d.num_threads() } -> std::convertible_to<int>;
  // Where its tensors live; allocate() marks them so.
  { std::as_const(d).space() } -> std::same_as<memory_space>;
  // Asynchronous copies between tensors of equal dtype and shape, allocated by the caller:
  // host (or pinned host) -> this device, this device -> host, and within this device. Each calls
  // done(status) once, from any thread, when the destination holds the data (host policies: at
  // once, with memcpy). The tensors stay valid until then.
  d.copy_from_host(std::declval<const tensor&>(), std::declval<tensor&>(), std::declval<copy_done>());
  d.copy_to_host(std::declval<const tensor&>(), std::declval<tensor&>(), std::declval<copy_done>());
  d.copy_within(std::declval<const tensor&>(), std::declval<tensor&>(), std::declval<copy_done>());
  // Waits until the work queued on the device has finished; its first error.
  { d.synchronize() } -> std::same_as<status>;
};

// A policy's place among the devices of a process: its ordinal among the devices of its type and
// the full name that follows ("/job:localhost/replica:0/task:0/device:CPU:1"). A device_set sets
// the ordinal of the instances it is given (set_ordinal); a policy used alone is ordinal 0.
class device_identity {
 public:
  explicit device_identity(std::string_view type, int ordinal = 0) : type_(type) { set_ordinal(ordinal); }

  std::string_view name() const noexcept { return name_; }
  int ordinal() const noexcept { return ordinal_; }
  void set_ordinal(int ordinal) {
    ordinal_ = ordinal;
    name_ = device_name::full(type_, ordinal);
  }

 private:
  std::string_view type_;
  int ordinal_ = 0;
  std::string name_;
};

// TensorFlow's DeviceFactory priority: where a node with no device constraint goes, among the
// device types that have a kernel for it (higher first). D::priority where the policy declares one,
// else 50 (TensorFlow's CPU device).
template <class D>
inline constexpr int device_priority = [] {
  if constexpr (requires { D::priority; }) return static_cast<int>(D::priority);
  else return 50;
}();

// Whether a static plan may group elementwise nodes placed on device type D into one
// fused_elementwise step: D::fuses_elementwise where the policy declares it (its kernel lists have
// fused_elementwise's kernel; the host policies do), else false. Nodes that are not placed
// (default_device) are grouped as before, on whatever device the session runs them.
template <class D>
inline constexpr bool fuses_elementwise = [] {
  if constexpr (requires { D::fuses_elementwise; }) return static_cast<bool>(D::fuses_elementwise);
  else return false;
}();

// A host policy whose kernels run on an Eigen CPU device: what the Eigen CPU kernels need.
// Every basic_cpu and basic_thread_pool satisfies it, whatever its allocator.
template <class D>
concept eigen_host_device = device_policy<D> && requires(D& d) {
  d.eigen();
  d.parallel_for(std::int64_t{}, double{}, [](std::int64_t, std::int64_t) {});
};

namespace detail {
template <class D>
struct device_family {
  using type = D;
};
template <class D>
  requires requires { typename D::family_type; }
struct device_family<D> {
  using type = typename D::family_type;
};
}  // namespace detail

// The policy that names a policy's kernels: D::family_type where D declares one, else D itself.
// Policies that differ only in where their memory lives run the same code, so they are one family:
// device_family_t<basic_cpu<bfc_allocator<host_sub_allocator>>> is cpu, and a kernel registered for
// cpu serves it.
template <class D>
using device_family_t = typename detail::device_family<D>::type;

// A list of policies a kernel family is written for. contains<D>: D is listed, or D's family is
// (devices<cpu>::contains<basic_cpu<my_allocator>> holds; devices<basic_cpu<my_allocator>> names
// that policy alone).
template <class... Ds>
struct devices {
  template <class D>
  static constexpr bool contains = ((std::is_same_v<D, Ds> || std::is_same_v<device_family_t<D>, Ds>) || ...);
};

} // namespace typeflow
