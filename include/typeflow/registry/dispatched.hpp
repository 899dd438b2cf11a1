// SPDX-License-Identifier: Apache-2.0
// dispatched<Registry>: Registry's kernels, still chosen at compile time, run through the registry's
// instantiated dispatch table (kernels_of<Registry, Device>(), registry/kernel_table.hpp) instead of
// compiled where they are used:
//  - call<T, dispatched<Registry>>(device, op, inputs...): an eager call (runtime/call.hpp);
//  - session<Graph, Device, dispatched<Registry>>: a static graph whose op steps run the table's
//    kernels. The graph, its plan, its fusion and its memory plan are the same as with Registry.
//    A kernel that no table holds is compiled in place as in any session: a fused group's (a kernel
//    template family's), and that of an op whose name the table gives to another op type (an op of
//    the program's own named as a built-in one).
// A translation unit in which the table is declared extern (<typeflow/registry/extern_kernels.hpp>
// for default_registry and the registries chained to it on cpu and thread_pool) then compiles none of
// the table's kernels: the one unit of the program that instantiates it holds them (README, "Compile
// time"). Where it is not, the unit's first use instantiates the whole table, every kernel of the
// registry for every dtype, which costs far more than the kernels of one graph. What it costs a run
// is one indirect call per op step, and that a small elementwise step goes through the general path
// instead of the bare-data one (compute_elements, which the table does not hold). A kernel with both
// compute and compute_async runs compute_async, as the table's entry holds it.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/packed_operand.hpp>
#include <boost/hana/for_each.hpp>

#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/dispatch_table.hpp>
#include <typeflow/registry/kernel_table.hpp>

namespace typeflow {

template <class Registry>
struct dispatched;

namespace detail {

// The registry whose table a dispatched<R> reads: R, however deeply wrapped.
template <class Registry>
struct table_registry {
  using type = Registry;
};
template <class Registry>
struct table_registry<dispatched<Registry>> : table_registry<Registry> {};

// K, the kernel Registry names for (K::op_type, K::device_type, T), run through the entry of
// kernels_of<Registry, Device>() for (op, T), which is looked up once and checked to be K (a table
// built from another registry, or another order of its lists, would hold another kernel: then every
// run is an internal error naming the op, not another kernel's answer). K's own code is not
// instantiated: only its types and constants are read.
template <class Registry, class K, class T, bool Packs = packs_operand<K>>
struct dispatched_kernel {
  using op_type = typename K::op_type;
  using device_type = typename K::device_type;
  using value_type = T;
  static constexpr bool expensive = is_expensive<K>;

  static const kernel_entry<device_type>* entry() {
    static const kernel_entry<device_type>* const e = [] {
      const kernel_entry<device_type>* found = kernels_of<Registry, device_type>().find_kernel(op_type::name, dtype_of<T>);
      return found != nullptr && found->kernel == kernel_id<K> ? found : nullptr;
    }();
    return e;
  }
  static status missing(const device_type& device) {
    return errors::internal(op_type::name, ": the dispatch table on ", device.name(), " holds no entry for ",
                            name_of(dtype_of<T>), " that is the kernel the registry names");
  }

  // As the table's entry has it: compute_async for a kernel that has one, else compute.
  static status compute(const op_type& o, kernel_context<device_type>& ctx)
    requires(!async_kernel<K>)
  {
    const kernel_entry<device_type>* e = entry();
    return e != nullptr ? e->compute(&o, ctx) : missing(ctx.device);
  }
  static void compute_async(const op_type& o, kernel_context<device_type>& ctx, kernel_done done)
    requires async_kernel<K>
  {
    const kernel_entry<device_type>* e = entry();
    if (e == nullptr) return done(missing(ctx.device));
    e->compute_async(&o, ctx, std::move(done));
  }
};

// A kernel that keeps an operand packed: its packing through the entry (kernel_entry::packing), so
// that a static session packs a variable operand once, as it does with K compiled in place.
template <class Registry, class K, class T>
struct dispatched_kernel<Registry, K, T, true> : dispatched_kernel<Registry, K, T, false> {
  using base = dispatched_kernel<Registry, K, T, false>;
  using typename base::device_type;
  using typename base::op_type;
  static constexpr std::size_t packed_input = K::packed_input;

  static bool packable(const op_type& o, std::span<const tensor> inputs) {
    const kernel_entry<device_type>* e = base::entry();
    return e != nullptr && e->packing != nullptr && e->packing->packable(&o, inputs);
  }
  static std::shared_ptr<const void> pack(const op_type& o, std::span<const tensor> inputs) {
    return base::entry()->packing->pack(&o, inputs);  // only after packable
  }
  static status compute_packed(const op_type& o, kernel_context<device_type>& ctx, const void* form) {
    return base::entry()->packing->compute_packed(&o, ctx, form);  // only after pack
  }
};

// Whether Registry's table on Device gives Op's name to another op type (an op of the program's own
// named as a built-in one, in the lists the table holds itself: table_source): its entry for the
// name is then not Registry's kernel for Op. Only the families' op types are read.
template <class Registry, class Op, class Device>
consteval bool name_taken_in_table() {
  bool taken = false;
  boost::hana::for_each(table_source<Registry>::own::families, [&](auto family) {
    using fam = typename decltype(family)::type;
    if constexpr (one_op_family<fam>)
      if constexpr (fam::devices_type::template contains<Device> && !std::is_same_v<typename fam::op_type, Op>)
        if (std::string_view(fam::op_type::name) == std::string_view(Op::name)) taken = true;
  });
  return taken;
}

// What dispatched<Registry>::kernel<Op, Device, T> names: the table's entry for Registry's kernel
// where the table holds it (a kernel of a family for one op type, for Op itself, under a name no
// other op type of the table has), else that kernel, compiled in place (a missing kernel's compile
// error is Registry's own).
template <class Registry, class Op, class Device, class T>
consteval bool runs_through_table() {
  if constexpr (!Registry::template has_kernel<Op, Device, T>) return false;
  else if constexpr (!Registry::template in_dispatch_tables<Op, Device, T>()) return false;
  else if constexpr (!std::is_same_v<typename Registry::template kernel<Op, Device, T>::op_type, Op>) return false;
  else return !name_taken_in_table<Registry, Op, Device>();
}

}  // namespace detail

// As a session's or an eager call's registry: Registry's kernels, reached through its instantiated
// dispatch table. Everything else of Registry (has_kernel, its families) is Registry's.
// dispatched<dispatched<R>> is dispatched<R>.
template <class Registry = default_registry>
struct dispatched : detail::table_registry<Registry>::type {
  using registry_type = typename detail::table_registry<Registry>::type;

  template <class Op, class Device, class T>
  using kernel = std::conditional_t<detail::runs_through_table<registry_type, Op, Device, T>(),
                                    detail::dispatched_kernel<registry_type, typename registry_type::template kernel<Op, Device, T>, T>,
                                    typename registry_type::template kernel<Op, Device, T>>;
};

}  // namespace typeflow
