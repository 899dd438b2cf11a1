// SPDX-License-Identifier: Apache-2.0
// registry<Lists...>: finds the kernel for (op, device, dtype) at compile time. The lists are
// searched in order and the first family that provides the triple wins, so a user's list placed
// first overrides or extends the ones after it. Nothing is registered at start-up.
#pragma once

#include <typeflow/fwd.hpp>

#include <boost/hana/concat.hpp>
#include <boost/hana/find_if.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/optional.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/kernels/kernel.hpp>

namespace typeflow {

namespace detail {

// Stands in for the kernel type after a compile_error has been reported, so that the error
// is the only one the compiler prints.
template <class Op, class Device, class T>
struct missing_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  static status compute(const Op&, kernel_context<Device>&) { return errors::internal("missing kernel"); }
};

}  // namespace detail

template <class... KernelLists>
struct registry {
  // Every family of every list, in search order.
  static constexpr auto families = boost::hana::fold_left(
      boost::hana::make_tuple(kernel_families_t<KernelLists>{}...), boost::hana::make_tuple(),
      [](auto acc, auto list) { return boost::hana::concat(acc, list); });

  // hana::just(type_c<Family>) for the first family providing (Op, Device, T), else nothing.
  template <class Op, class Device, class T>
  static constexpr auto find_family() {
    return boost::hana::find_if(families, [](auto family) {
      return boost::hana::bool_c<decltype(family)::type::template provides<Op, Device, T>>;
    });
  }

  template <class Op, class Device, class T>
  static constexpr bool has_kernel =
      decltype(boost::hana::is_just(find_family<Op, Device, T>()))::value;

  // "no kernel for op exp on device CPU with dtype bool; this op has kernels on
  //  this device for: f32, f64"
  template <class Op, class Device, class T>
  static constexpr detail::text missing_kernel_message() {
    detail::text t = detail::cat("no kernel for op ", Op::name, " on device ", Device::device_type,
                                 " with dtype ", name_of(dtype_of<T>));
    detail::text available;
    boost::hana::for_each(element_types, [&](auto u) {
      using U = typename decltype(u)::type;
      if constexpr (has_kernel<Op, Device, U>) {
        if (!available.empty()) available.append(", ");
        available.append(name_of(dtype_of<U>));
      }
    });
    if (available.empty())
      t.append("; this op has no kernel on this device for any dtype in this registry. If it is an op of your own, "
               "give the session a registry that lists its kernels first: tf::session<Graph, Device, "
               "tf::registry<my_kernels, tf::cpu_kernel_list>> (README: \"Add an op and a kernel\")");
    else detail::append(t, "; this op has kernels on this device for: "), t.append(available.view());
    return t;
  }

  template <class Op, class Device, class T>
  static constexpr auto pick() {
    constexpr auto found = find_family<Op, Device, T>();
    if constexpr (decltype(boost::hana::is_just(found))::value) {
      using family = typename std::remove_cvref_t<decltype(found.value())>::type;
      return boost::hana::type_c<typename family::template kernel_type<Op, Device, T>>;
    } else {
      // The compiler prints the message as compile_error's template argument.
      static_assert(compile_error<detail::text_constant<[] { return missing_kernel_message<Op, Device, T>(); }>::value>::value,
                    "typeflow: no kernel for this (op, device, dtype); see compile_error<...> above");
      return boost::hana::type_c<detail::missing_kernel<Op, Device, T>>;
    }
  }

  // Whether the dispatch tables of this registry hold the kernel for (Op, Device, T): those of a
  // family for one op type do; a kernel template family's (one family for many op types: the fused
  // groups) do not.
  template <class Op, class Device, class T>
  static constexpr bool in_dispatch_tables() {
    constexpr auto found = find_family<Op, Device, T>();
    if constexpr (decltype(boost::hana::is_just(found))::value)
      return one_op_family<typename std::remove_cvref_t<decltype(found.value())>::type>;
    else
      return false;
  }

  // The kernel for (Op, Device, T); a compile error naming all three when there is none.
  template <class Op, class Device, class T>
  using kernel = typename decltype(pick<Op, Device, T>())::type;
};

} // namespace typeflow
