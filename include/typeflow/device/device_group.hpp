// SPDX-License-Identifier: Apache-2.0
// device_group<Ds...>: the devices a static session runs on, one instance of each policy type. A
// static graph places nodes on device *types* (tf::on<D>(expr)); the group says which instance of
// each type runs them, and its first device runs every node that is not placed.
//   tf::cpu host;
//   tf::thread_pool pool(2);
//   tf::session s(g, tf::device_group(host, pool));     // unplaced nodes on host
// A session given one policy runs on device_group<that policy>.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/graph/node.hpp>

namespace typeflow {

template <device_policy... Ds>
class device_group {
  static_assert(sizeof...(Ds) > 0, "typeflow::device_group: give it at least one device");

  template <class D>
  static constexpr std::size_t count = (std::size_t{0} + ... + std::is_same_v<D, Ds>);
  static constexpr bool distinct = ((count<Ds> == 1) && ...);
  static_assert(distinct,
                "typeflow::device_group: one device of each policy type: a static graph places its nodes on types "
                "(tf::on<D>), so two devices of one type could not be told apart");

 public:
  static constexpr std::size_t size = sizeof...(Ds);
  template <std::size_t I>
  using type = std::tuple_element_t<I, std::tuple<Ds...>>;

  // The position of device type D in the group; 0 for default_device (the first device), size
  // when the group has no device of that type.
  template <class D>
  static constexpr std::size_t index_of = [] {
    if constexpr (std::is_same_v<D, default_device>) {
      return std::size_t{0};
    } else {
      std::size_t i = 0, found = size;
      ((found = found == size && std::is_same_v<D, Ds> ? i : found, ++i), ...);
      return found;
    }
  }();

  // The position of the device that runs nodes of type D: index_of<D>, or the first device when the
  // group has none (a static executor reports that as a compile error naming the node).
  template <class D>
  static constexpr std::size_t runs = index_of<D> < size ? index_of<D> : 0;

  explicit device_group(Ds&... devices) noexcept : devices_{&devices...} {}

  template <std::size_t I>
  type<I>& get() const noexcept {
    return *std::get<I>(devices_);
  }

  // "CPU (typeflow::cpu), CPU (typeflow::thread_pool)": for messages.
  static constexpr auto describe() {
    detail::text t;
    ((t.append(t.empty() ? "" : ", "), t.append(Ds::device_type), t.append(" ("), t.append(detail::type_name<Ds>()),
      t.push_back(')')),
     ...);
    return t;
  }

 private:
  std::tuple<Ds*...> devices_;
};

namespace detail {
template <class D>
struct as_group {
  using type = device_group<D>;
  static type make(D& d) noexcept { return type(d); }
};
template <class... Ds>
struct as_group<device_group<Ds...>> {
  using type = device_group<Ds...>;
  static type make(const type& g) noexcept { return g; }
};
template <class T>
inline constexpr bool is_device_group = false;
template <class... Ds>
inline constexpr bool is_device_group<device_group<Ds...>> = true;
}  // namespace detail

// What a static session or executor runs on: one device policy, or a device_group of several.
template <class D>
concept static_devices = device_policy<D> || detail::is_device_group<D>;

// The group of a policy (device_group<D>) or of a group (itself).
template <static_devices D>
using device_group_t = typename detail::as_group<D>::type;
template <static_devices D>
device_group_t<D> as_device_group(D& d) noexcept {
  return detail::as_group<D>::make(d);
}

} // namespace typeflow
