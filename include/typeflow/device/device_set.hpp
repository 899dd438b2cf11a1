// SPDX-License-Identifier: Apache-2.0
// device_set<Ds...>: the device instances a process runs on, as TensorFlow's DeviceMgr and
// DeviceSet. Device *types* are compile-time (Ds, the policy types whose kernels and dispatch tables
// exist); device *instances* are run-time: several of one type are allowed (TensorFlow's
// device_count={"CPU": 2}).
//   tf::cpu c0; tf::thread_pool c1(2);
//   tf::device_set<tf::cpu, tf::thread_pool> devices;
//   devices.add(c0);   // /job:localhost/replica:0/task:0/device:CPU:0
//   devices.add(c1);   // .../device:CPU:1 (ordinals count per device type: c1.name() says so too)
// Instances are not owned: each must outlive the set and every session that uses it. Lookup by full
// or short name ("CPU:1", "/device:CPU:1"), by partial name (every match), count by type, the
// client device (where feeds come from and fetches go: the first host-memory CPU), and the
// prioritized order the placer picks from (device_priority, higher first, then the order added).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/memory_space.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/device_name.hpp>

namespace typeflow {

namespace detail {
template <class T, class... Ts>
inline constexpr std::size_t index_of = [] {
  std::size_t i = 0;
  (void)((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);  // (void): Clang 19 -Wunused-value
  return i;
}();
template <class... Ts>
inline constexpr bool distinct_types = [] {
  bool ok = true;
  std::size_t i = 0;
  ((ok = ok && index_of<Ts, Ts...> == i++), ...);
  return ok;
}();
}  // namespace detail

template <device_policy... Ds>
class device_set {
  static_assert(sizeof...(Ds) > 0, "device_set<Ds...> needs at least one device policy type");
  static_assert(detail::distinct_types<Ds...>,
                "device_set<Ds...> lists each device policy type once (add several instances of a type instead)");

 public:
  struct entry {
    std::string name;            // the full name
    device_name parsed;          // the same, parsed
    std::string_view type;       // "CPU"
    int ordinal = 0;             // among the devices of its type
    int priority = 0;
    std::size_t type_index = 0;  // the index of its policy type in Ds...
    std::uint64_t incarnation = 0;  // random per instance, part of rendezvous keys
    memory_space space;
    void* device = nullptr;
  };

  template <class D>
  static constexpr bool holds = (std::is_same_v<D, Ds> || ...);
  template <class D>
  static constexpr std::size_t type_index_of = detail::index_of<D, Ds...>;

  // Adds an instance and gives it the next ordinal of its device type. Returns its index.
  template <class D>
  std::size_t add(D& device) {
    static_assert(holds<D>, "device_set<Ds...>::add(d): the type of d is not one of Ds");
    const int ordinal = count(D::device_type);
    if constexpr (requires { device.set_ordinal(ordinal); }) device.set_ordinal(ordinal);
    entry e;
    e.name = device_name::full(D::device_type, ordinal);
    e.parsed = *device_name::parse(e.name);
    e.type = D::device_type;
    e.ordinal = ordinal;
    e.priority = device_priority<D>;
    e.type_index = type_index_of<D>;
    e.incarnation = std::random_device{}() * 0x100000001ull ^ std::random_device{}();
    e.space = device.space();
    e.device = &device;
    entries_.push_back(std::move(e));
    return entries_.size() - 1;
  }

  std::size_t size() const noexcept { return entries_.size(); }
  const entry& operator[](std::size_t i) const { return entries_[i]; }

  // The device with this full or short name ("CPU:1", "/device:CPU:1", "/job:localhost/.../device:CPU:1").
  result<std::size_t> find(std::string_view name) const {
    auto parsed = device_name::parse(name);
    if (!parsed.ok()) return parsed.status();
    if (!parsed->type || !parsed->id)
      return errors::invalid_argument("device name '", name, "' does not name one device (give a type and an id, e.g. CPU:0)");
    auto found = matching(*parsed);
    if (found.empty()) return errors::not_found("no device '", name, "' among ", list());
    return found.front();
  }
  // Every device a (partial) name matches, in the order added.
  std::vector<std::size_t> matching(const device_name& name) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (name.matches(entries_[i].parsed)) out.push_back(i);
    return out;
  }
  int count(std::string_view type) const {
    return static_cast<int>(std::count_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.type == type; }));
  }
  // The device feeds come from and fetches go to: the first CPU in host memory, else the first.
  std::size_t client() const {
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].type == "CPU" && entries_[i].space.host_accessible()) return i;
    return 0;
  }
  // Indices by priority (higher first), then in the order added.
  std::vector<std::size_t> prioritized() const {
    std::vector<std::size_t> out(entries_.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = i;
    // std::sort with the index as the tie-break: std::stable_sort's temporary buffer draws a
    // deprecation warning from Clang 19 with libstdc++ 12 in every program that includes this.
    std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
      return entries_[a].priority != entries_[b].priority ? entries_[a].priority > entries_[b].priority : a < b;
    });
    return out;
  }
  // "CPU:0, CPU:1, TEST:0"
  std::string list() const {
    detail::text t;
    for (std::size_t i = 0; i < entries_.size(); ++i) detail::append(t, detail::cat(i ? ", " : "", entries_[i].type, ":", entries_[i].ordinal));
    return entries_.empty() ? std::string("no devices") : t.str();
  }

  // Calls f(device) with device i as its own policy type.
  template <class F>
  decltype(auto) visit(std::size_t i, F&& f) const {
    return visit_impl<0, Ds...>(entries_[i], f);
  }

 private:
  template <std::size_t I, class D, class... Rest, class F>
  static decltype(auto) visit_impl(const entry& e, F& f) {
    if constexpr (sizeof...(Rest) == 0) return f(*static_cast<D*>(e.device));
    else {
      if (e.type_index == I) return f(*static_cast<D*>(e.device));
      return visit_impl<I + 1, Rest...>(e, f);
    }
  }

  std::vector<entry> entries_;
};

} // namespace typeflow
