// SPDX-License-Identifier: Apache-2.0
// What runtime graphs dispatch through, generated at compile time from a registry's kernel lists:
// nothing is registered at start-up, and a kernel that is in a list is in the table.
//  - runtime_op: an op value built from its name and attributes (ops/attributes.hpp), with its
//    inference behind function pointers;
//  - dispatch_table<Registry, Device>: generates the kernel_table (registry/kernel_table.hpp) of
//    Registry's kernels on Device: (op name, dtype) -> kernel and op name -> how to build it,
//    sorted, constexpr; kernels_of<Registry, Device>() is how runtime graphs reach it.
// The first list of the registry that provides (op, device, dtype) wins, as for static graphs.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/for_each.hpp>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/packed_operand.hpp>
#include <typeflow/ops/attributes.hpp>
#include <typeflow/ops/elementwise.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/kernel_table.hpp>
#include <typeflow/registry/registry.hpp>

namespace typeflow {

// How a runtime_op reaches its value: one table of function pointers per op type.
struct op_vtable {
  std::string_view name;
  int num_inputs;  // ops::variadic for any number
  result<tensor_spec> (*infer)(const void* op, std::span<const tensor_spec> inputs, std::size_t output);
  std::size_t (*num_outputs)(const void* op);
  dtype (*kernel_dtype)(std::span<const tensor_spec> inputs, const tensor_spec& output);
  attr_map (*attrs)(const void* op);
  bool elementwise;  // is_fusable_elementwise: may write over an input of its spec
  bool multi_output;  // a multi_output_op (split, top_k), whatever its number of outputs
};

// An op value whose type is known only at run time.
class runtime_op {
 public:
  runtime_op() = default;
  template <class Op>
  static runtime_op of(const Op& op) {
    static constexpr op_vtable table{
        Op::name, Op::num_inputs,
        [](const void* o, std::span<const tensor_spec> in, std::size_t k) {
          return typeflow::infer(*static_cast<const Op*>(o), in, k);
        },
        [](const void* o) { return num_outputs_of(*static_cast<const Op*>(o)); },
        [](std::span<const tensor_spec> in, const tensor_spec& out) { return typeflow::kernel_dtype<Op>(in, out); },
        [](const void* o) { return to_attrs(*static_cast<const Op*>(o)); }, is_fusable_elementwise<Op>,
        multi_output_op<Op>};
    runtime_op r;
    r.value_ = std::make_shared<const Op>(op);
    r.table_ = &table;
    return r;
  }

  bool valid() const noexcept { return table_ != nullptr; }
  std::string_view name() const { return table_->name; }
  int num_inputs() const { return table_->num_inputs; }
  std::size_t num_outputs() const { return table_->num_outputs(value_.get()); }
  // The spec of output `output` (0 to num_outputs() - 1) for these inputs.
  result<tensor_spec> infer(std::span<const tensor_spec> inputs, std::size_t output = 0) const {
    return table_->infer(value_.get(), inputs, output);
  }
  // Every output's spec; the first error (output 0 is inferred first: a bad count is refused there).
  result<std::vector<tensor_spec>> infer_outputs(std::span<const tensor_spec> inputs) const {
    std::vector<tensor_spec> out;
    for (std::size_t k = 0; k == 0 || k < num_outputs(); ++k) {
      auto spec = infer(inputs, k);
      if (!spec.ok()) return spec.status();
      out.push_back(*spec);
    }
    return out;
  }
  dtype kernel_dtype(std::span<const tensor_spec> inputs, const tensor_spec& output) const {
    return table_->kernel_dtype(inputs, output);
  }
  attr_map attrs() const { return table_->attrs(value_.get()); }
  bool elementwise() const noexcept { return table_->elementwise; }
  // Whether the op's type has several outputs (a static graph applies it with apply_outputs).
  bool multi_output() const noexcept { return table_->multi_output; }
  const void* get() const noexcept { return value_.get(); }

 private:
  std::shared_ptr<const void> value_;
  const op_vtable* table_ = nullptr;
};

namespace detail {

template <class Dtypes>
struct for_each_dtype;
template <class... Ts>
struct for_each_dtype<dtypes<Ts...>> {
  template <class F>
  static constexpr void apply(F&& f) {
    (f(std::type_identity<Ts>{}), ...);
  }
};

template <class Op>
result<runtime_op> make_runtime_op(const attr_map& attrs) {
  auto op = from_attrs<Op>(attrs);
  if (!op.ok()) return op.status();
  return runtime_op::of(*op);
}

// Which families a registry's table holds itself, and whether it hands the rest to
// tf::default_registry's table. A registry whose last list is cpu_kernel_list (and which is not
// default_registry itself) holds only the lists before it: registry<my_kernels, cpu_kernel_list>
// instantiates my_kernels' kernels, not typeflow's again. Any other registry holds all its lists.
template <class... Lists>
struct kernel_lists {};
template <class... Lists>
kernel_lists<Lists...> lists_of(const registry<Lists...>*);  // a registry or a struct derived from one

template <class Done, class... Rest>
struct without_last;
template <class... Done, class Last>
struct without_last<kernel_lists<Done...>, Last> {
  using front = registry<Done...>;
  using last = Last;
};
template <class... Done, class A, class B, class... Rest>
struct without_last<kernel_lists<Done...>, A, B, Rest...> : without_last<kernel_lists<Done..., A>, B, Rest...> {};

template <class Lists>
struct split_lists {
  static constexpr bool chained = false;
};
template <class First, class... Lists>
  requires std::is_same_v<typename without_last<kernel_lists<>, First, Lists...>::last, cpu_kernel_list>
struct split_lists<kernel_lists<First, Lists...>> {
  using front = typename without_last<kernel_lists<>, First, Lists...>::front;
  using whole = registry<First, Lists...>;
  static constexpr bool chained = true;
};

template <class Registry>
struct table_source {
  using own = Registry;
  static constexpr bool chained = false;
};
// Chained: derived from one registry<..., cpu_kernel_list> whose families it does not replace.
template <class Registry>
  requires(!std::is_same_v<Registry, default_registry> &&
           requires { detail::lists_of(static_cast<const Registry*>(nullptr)); } &&
           split_lists<decltype(detail::lists_of(static_cast<const Registry*>(nullptr)))>::chained)
struct table_source<Registry> {
 private:
  using split = split_lists<decltype(detail::lists_of(static_cast<const Registry*>(nullptr)))>;

 public:
  using own = std::conditional_t<std::is_same_v<decltype(Registry::families), decltype(split::whole::families)>,
                                 typename split::front, Registry>;
  static constexpr bool chained = std::is_same_v<own, typename split::front>;
};

// Whether Registry has a kernel on Device (its one-op families', the ones its tables hold): only
// the families' device lists are read, no kernel is instantiated.
template <class Registry, class Device>
inline constexpr bool has_table_kernels_on = [] {
  bool any = false;
  boost::hana::for_each(Registry::families, [&](auto family) {
    using fam = typename decltype(family)::type;
    if constexpr (one_op_family<fam>)
      if constexpr (fam::devices_type::template contains<Device>) any = true;
  });
  return any;
}();

}  // namespace detail

template <class Registry, class Device>
struct dispatch_table {
  using kernel_entry = typeflow::kernel_entry<Device>;
  using op_entry = typeflow::op_entry;

 private:
  template <class K>
  static status compute_erased(const void* op, kernel_context<Device>& ctx) {
    return K::compute(*static_cast<const typename K::op_type*>(op), ctx);
  }
  template <class K>
  static void compute_async_erased(const void* op, kernel_context<Device>& ctx, kernel_done done) {
    K::compute_async(*static_cast<const typename K::op_type*>(op), ctx, std::move(done));
  }
  // A packing kernel's functions (kernel_entry::packing), one record per kernel type.
  template <class K>
  static constexpr kernel_packing<Device> packing_of{
      [](const void* op, std::span<const tensor> inputs) { return K::packable(*static_cast<const typename K::op_type*>(op), inputs); },
      [](const void* op, std::span<const tensor> inputs) { return K::pack(*static_cast<const typename K::op_type*>(op), inputs); },
      [](const void* op, kernel_context<Device>& ctx, const void* form) {
        return K::compute_packed(*static_cast<const typename K::op_type*>(op), ctx, form);
      }};
  template <class K>
  static constexpr kernel_entry entry_of(std::string_view op, dtype type) {
    require_kernel<K>();
    const kernel_packing<Device>* packing = nullptr;
    if constexpr (packs_operand<K>) packing = &packing_of<K>;
    if constexpr (async_kernel<K>)
      return kernel_entry{op, type, nullptr, &compute_async_erased<K>, is_expensive<K>, 0, kernel_id<K>, packing};
    else if constexpr (sync_kernel<K>)
      return kernel_entry{op, type, &compute_erased<K>, nullptr, is_expensive<K>, 0, kernel_id<K>, packing};
    else return kernel_entry{};  // unreachable: require_kernel has failed to compile
  }

  using source = detail::table_source<Registry>;

  template <class F>
  static constexpr void for_each_kernel(F&& f) {
    boost::hana::for_each(source::own::families, [&](auto family) {
      using fam = typename decltype(family)::type;
      if constexpr (one_op_family<fam>) {
        if constexpr (fam::devices_type::template contains<Device>) {
          using op = typename fam::op_type;
          detail::for_each_dtype<typename fam::dtypes_type>::apply([&](auto t) {
            using T = typename decltype(t)::type;
            using K = typename fam::template kernel_type<op, Device, T>;
            f(entry_of<K>(op::name, dtype_of<T>), op_entry{op::name, &detail::make_runtime_op<op>});
          });
        }
      }
    });
  }

  static constexpr std::size_t count = [] {
    std::size_t n = 0;
    for_each_kernel([&](auto, auto) { ++n; });
    return n;
  }();

  struct tables {
    std::array<kernel_entry, count> kernels{};
    std::size_t num_kernels = 0;
    std::array<op_entry, count> ops{};
    std::size_t num_ops = 0;
  };
  static constexpr tables built = [] {
    tables t{};
    std::array<kernel_entry, count> all{};
    std::array<op_entry, count> all_ops{};
    std::size_t n = 0;
    for_each_kernel([&](kernel_entry k, op_entry o) {
      k.order = n;
      all[n] = k;
      all_ops[n] = o;
      ++n;
    });
    // `(a.op) <`: Clang 19 looks `op` up as the concept typeflow::op and reads `a.op < b.op` as
    // a template argument list.
    std::sort(all.begin(), all.end(), [](const kernel_entry& a, const kernel_entry& b) {
      if (a.op != b.op) return (a.op) < b.op;
      if (a.type != b.type) return a.type < b.type;
      return a.order < b.order;
    });
    for (std::size_t i = 0; i < count; ++i)
      if (i == 0 || all[i].op != all[i - 1].op || all[i].type != all[i - 1].type) t.kernels[t.num_kernels++] = all[i];
    std::sort(all_ops.begin(), all_ops.end(), [](const op_entry& a, const op_entry& b) { return a.name < b.name; });
    for (std::size_t i = 0; i < count; ++i)
      if (i == 0 || all_ops[i].name != all_ops[i - 1].name) t.ops[t.num_ops++] = all_ops[i];
    return t;
  }();

  // The table default_registry's follows, if any (see detail::table_source).
  static constexpr auto next = [] {
    if constexpr (source::chained && detail::has_table_kernels_on<default_registry, Device>)
      return &kernels_of<default_registry, Device>;
    else
      return static_cast<const kernel_table<Device>& (*)()>(nullptr);
  }();

 public:
  // The generated table: every (op, dtype) with a kernel on Device and every op, sorted; those of the
  // registry's own lists only when it hands the rest to default_registry's table (next).
  static constexpr kernel_table<Device> table{{built.kernels.data(), built.num_kernels}, {built.ops.data(), built.num_ops}, next};
  static constexpr std::span<const kernel_entry> kernels = table.kernels;
  static constexpr std::span<const op_entry> ops = table.ops;

  static constexpr const kernel_entry* find_kernel(std::string_view op, dtype type) { return table.find_kernel(op, type); }
  static constexpr const op_entry* find_op(std::string_view name) { return table.find_op(name); }
  static std::string dtypes_of(std::string_view op) { return table.dtypes_of(op); }
};

template <class Registry, class Device>
const kernel_table<Device>& kernels_of() {
  return dispatch_table<Registry, Device>::table;
}

}  // namespace typeflow
