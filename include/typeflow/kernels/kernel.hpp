// SPDX-License-Identifier: Apache-2.0
// The kernel concept, the context a kernel runs in, and kernel families: the entries of the
// kernel lists (Boost.Hana type lists) that registries search at compile time.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <type_traits>
#include <utility>

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

// What an asynchronous kernel calls, exactly once and from any thread, when it has finished.
using kernel_done = std::function<void(status)>;

// A kernel: one (op, device, dtype) implementation, synchronous (compute returns the status when
// the work is done) or asynchronous (compute_async starts the work and returns; the work calls
// done(status) when it ends, and the context with its inputs and outputs stays valid until then:
// TensorFlow's AsyncOpKernel, for kernels that wait on something other than the CPU).
// Satisfied by eigen_unary_kernel<ops::exp, cpu, float>; not by ops::exp (no compute).
template <class K>
concept sync_kernel = requires(const typename K::op_type& o, kernel_context<typename K::device_type>& ctx) {
  requires op<typename K::op_type>;
  requires element_type<typename K::value_type>;
  { K::expensive } -> std::convertible_to<bool>;  // worth a thread hand-off in a parallel executor
  { K::compute(o, ctx) } -> std::same_as<status>;
};
template <class K>
concept async_kernel = requires(const typename K::op_type& o, kernel_context<typename K::device_type>& ctx,
                                kernel_done done) {
  requires op<typename K::op_type>;
  requires element_type<typename K::value_type>;
  { K::expensive } -> std::convertible_to<bool>;
  { K::compute_async(o, ctx, std::move(done)) } -> std::same_as<void>;
};
template <class K>
concept kernel = sync_kernel<K> || async_kernel<K>;

// Calls start(done) and waits until the work it started calls done(status); that status.
template <class Start>
status wait_for_done(Start&& start) {
  std::mutex m;
  std::condition_variable cv;
  bool finished = false;
  status result;
  start(kernel_done([&](status st) {
    std::lock_guard lock(m);  // notified under the lock: the waiter cannot return (and destroy cv) first
    result = std::move(st);
    finished = true;
    cv.notify_one();
  }));
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return finished; });
  return result;
}

// The check made where a kernel type is first run (runtime/launch.hpp, the dispatch tables): a type that
// has neither compute nor compute_async is refused with what it needs instead of an error deep in
// the executor.
template <class K>
constexpr void require_kernel() {
  static_assert(kernel<K>,
                "typeflow: a kernel type needs op_type, device_type, value_type, a static constexpr bool "
                "`expensive` and either `static status compute(const op_type&, kernel_context<device_type>&)` "
                "or `static void compute_async(const op_type&, kernel_context<device_type>&, kernel_done)`");
}

// Whether a parallel executor hands a kernel to the inter-op pool (expensive) or runs it inline
// on the thread that made it ready (cheap): the kernel's own `expensive`, unless specialised here
// for that kernel type. The rule the built-in kernels follow: cheap for one streaming pass in
// memory order (elementwise ops, fused groups, bias_add, batch_norm, reshape and identity copies,
// fill), whose cost on small tensors is below a thread hand-off (~200 ns); expensive for the rest
// (matmul, conv2d, pooling, reductions, softmax, transpose, concat, slice, pad, gather).
template <class Kernel>
inline constexpr bool is_expensive = static_cast<bool>(Kernel::expensive);

// A kernel of an elementwise op that also runs on bare data, when every one of its Arity inputs
// holds as many elements as its one output (nothing broadcasts) and there are at most
// small_elementwise_elements of them: compute_elements(op, inputs, output, n), the inputs' and the
// output's data in the kernel's dtypes. The static executor calls it for such nodes, whose shapes
// it knows at compile time, and so builds no tensors and no context for them; at one element that
// set-up cost more than the work (bench_schedule's unfused nodes). Its answer, status included, is
// compute's on the same tensors.
inline constexpr std::int64_t small_elementwise_elements = 16;
template <class Kernel, std::size_t Arity>
concept elementwise_data_kernel = requires(const typename Kernel::op_type& o, const std::array<const void*, Arity>& in,
                                           void* out, std::int64_t n) {
  { Kernel::compute_elements(o, in, out, n) } -> std::same_as<status>;
};

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

// A family for one op type (kernel_family, which dispatch tables hold), not one for every op of a
// template (kernel_template_family, which they do not).
template <class Family>
concept one_op_family = requires { typename Family::op_type; };

// A kernel list: a Hana type list of kernel families, searched in order.
template <class... Families>
using kernel_list = std::remove_cv_t<decltype(boost::hana::tuple_t<Families...>)>;

// A kernel list with a name of its own, which diagnostics print instead of every family in it:
//   struct my_kernels : tf::named_kernel_list<tf::kernel_list<...>> {};
// A registry takes named and unnamed lists alike.
template <class List>
struct named_kernel_list {
  using kernel_list_type = List;
};

namespace detail {
template <class List>
struct kernel_families_of {
  using type = List;
};
template <class List>
  requires requires { typename List::kernel_list_type; }
struct kernel_families_of<List> {
  using type = typename kernel_families_of<typename List::kernel_list_type>::type;  // a name of a name
};
}  // namespace detail

// The Hana type list of a kernel list, named or not.
template <class List>
using kernel_families_t = typename detail::kernel_families_of<List>::type;

// Several kernel lists joined into one, in order.
template <class... Lists>
using concat_kernel_lists =
    std::remove_cv_t<decltype(boost::hana::flatten(boost::hana::make_tuple(kernel_families_t<Lists>{}...)))>;

} // namespace typeflow
