// SPDX-License-Identifier: Apache-2.0
// The kernel concept, the context a kernel runs in, and kernel families: the entries of the
// kernel lists (Boost.Hana type lists) that registries search at compile time.
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <span>
#include <type_traits>

#include <boost/hana/flatten.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow {

// What a kernel sees: the device policy it runs on, its inputs, and its outputs, which the
// caller has already allocated with the shapes that inference gave.
template <class Device>
struct kernel_context {
  Device& device;
  std::span<const tensor> inputs;
  std::span<tensor> outputs;
};

// A kernel: one (op, device, dtype) implementation.
// Satisfied by eigen_unary_kernel<ops::exp, cpu, float>; not by ops::exp (no compute).
template <class K>
concept kernel = requires(const typename K::op_type& o, kernel_context<typename K::device_type>& ctx) {
  requires op<typename K::op_type>;
  requires element_type<typename K::value_type>;
  { K::expensive } -> std::convertible_to<bool>;  // worth a thread hand-off in a parallel executor
  { K::compute(o, ctx) } -> std::same_as<status>;
};

// Whether a parallel executor hands a kernel to the inter-op pool (expensive) or runs it inline
// on the thread that made it ready (cheap): the kernel's own `expensive`, unless specialised here
// for that kernel type. The rule the built-in kernels follow: cheap for one streaming pass in
// memory order (elementwise ops, fused groups, bias_add, batch_norm, reshape and identity copies,
// fill), whose cost on small tensors is below a thread hand-off (~200 ns); expensive for the rest
// (matmul, conv2d, pooling, reductions, softmax, transpose, concat, slice, pad, gather).
template <class Kernel>
inline constexpr bool is_expensive = static_cast<bool>(Kernel::expensive);

// A kernel family: the class template Kernel<Op, Device, T> instantiated for one op, a list of
// devices<...> and a list of dtypes<...>. Kernel lists hold families, so one line registers an
// implementation for every device and dtype it covers.
template <template <class, class, class> class Kernel, class Op, class Devices, class Dtypes>
struct kernel_family {
  using op_type = Op;
  using devices_type = Devices;
  using dtypes_type = Dtypes;

  template <class O, class D, class T>
  static constexpr bool provides = std::is_same_v<O, Op> && Devices::template contains<D> &&
                                   Dtypes::template contains<T>;

  template <class O, class D, class T>
  using kernel_type = Kernel<O, D, T>;
};

namespace detail {
template <class T, template <class> class Template>
inline constexpr bool is_instance_of = false;
template <class Arg, template <class> class Template>
inline constexpr bool is_instance_of<Template<Arg>, Template> = true;
}  // namespace detail

// A kernel family for every op made from one op template, such as the fused elementwise op
// fused_elementwise<Tree> that a static graph generates: one line gives a device a kernel for
// every fusion it will ever see.
template <template <class, class, class> class Kernel, template <class> class OpTemplate, class Devices, class Dtypes>
struct kernel_template_family {
  template <class O, class D, class T>
  static constexpr bool provides = detail::is_instance_of<O, OpTemplate> && Devices::template contains<D> &&
                                   Dtypes::template contains<T>;

  template <class O, class D, class T>
  using kernel_type = Kernel<O, D, T>;
};

// A kernel list: a Hana type list of kernel families, searched in order.
template <class... Families>
using kernel_list = std::remove_cv_t<decltype(boost::hana::tuple_t<Families...>)>;

// Several kernel lists joined into one, in order.
template <class... Lists>
using concat_kernel_lists = std::remove_cv_t<decltype(boost::hana::flatten(boost::hana::make_tuple(Lists{}...)))>;

} // namespace typeflow
