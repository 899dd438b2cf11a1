// SPDX-License-Identifier: Apache-2.0
// The device-policy concept, and `devices<...>`, a compile-time list of policies.
// A policy says where kernels run and gives them what they need there; memory lives in the
// allocator the policy names (memory/), so the two stay separate.
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow {

// Satisfied by typeflow::cpu and typeflow::thread_pool; not by Eigen::DefaultDevice (no name,
// no allocation of tensors).
template <class D>
concept device_policy = requires(D& d, dtype t, const shape& s) {
  { D::device_type } -> std::convertible_to<std::string_view>;  // "CPU", "GPU"
  { d.name() } -> std::convertible_to<std::string_view>;        // "/job:localhost/replica:0/task:0/device:CPU:0"
  { d.allocate(t, s) } -> std::same_as<result<tensor>>;
  { d.num_threads() } -> std::convertible_to<int>;
};

// A host policy whose kernels run on an Eigen CPU device: what the Eigen CPU kernels need.
// cpu and thread_pool satisfy it.
template <class D>
concept eigen_host_device = device_policy<D> && requires(D& d) {
  d.eigen();
  d.eigen_with_scratch();  // for contractions: temporaries from the scratch cache
  d.parallel_for(std::int64_t{}, double{}, [](std::int64_t, std::int64_t) {});
};

template <class... Ds>
struct devices {
  template <class D>
  static constexpr bool contains = (std::is_same_v<D, Ds> || ...);
};

} // namespace typeflow
