// SPDX-License-Identifier: Apache-2.0
// kernel_table<Device>: what a runtime graph looks kernels up in, whatever registry made it.
//  - kernel_entry<Device>: (op name, dtype) -> a type-erased compute or compute_async, which kernel
//    type it is (kernel_id<K>), and, for a kernel that keeps an operand packed, its packing functions
//    (kernel_packing<Device>: what a static session run through the table, dispatched<Registry>, uses);
//  - table_kernel<Device>: an entry and the op value it runs, as the launch path takes a kernel;
//  - op_entry: op name -> how to build the op from its attributes;
//  - kernel_table<Device>: both, sorted, searched by binary search (constexpr).
// dispatch_table<Registry, Device> (registry/dispatch_table.hpp) generates the entries, and
// kernels_of<Registry, Device>() hands its table to runtime graphs; extern_kernels.hpp says how a
// program instantiates that table once instead of in every translation unit.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/attributes.hpp>

namespace typeflow {

class runtime_op;

namespace detail {
// Not const: a read-only constant could share its address with another under identical-data
// folding (-fmerge-all-constants, lld --icf=all).
template <class K>
inline char kernel_identity = 0;
}  // namespace detail

// One address per kernel type in a program (a shared library built with hidden visibility has its
// own: call its tables from inside it): what an entry says it runs, comparable without instantiating
// the kernel.
template <class K>
inline constexpr const void* kernel_id = &detail::kernel_identity<K>;

// The functions of a kernel K that keeps one input packed (packs_operand<K>, kernels/packed_operand.hpp),
// type-erased as an entry's compute is: what a static session whose kernels come from the table
// (dispatched<Registry>) calls to pack a variable operand once and run on the packed form.
template <class Device>
struct kernel_packing {
  bool (*packable)(const void* op, std::span<const tensor> inputs) = nullptr;
  std::shared_ptr<const void> (*pack)(const void* op, std::span<const tensor> inputs) = nullptr;
  status (*compute_packed)(const void* op, kernel_context<Device>& ctx, const void* form) = nullptr;
};

template <class Device>
struct kernel_entry {
  using compute_fn = status (*)(const void* op, kernel_context<Device>& ctx);
  using compute_async_fn = void (*)(const void* op, kernel_context<Device>& ctx, kernel_done done);

  std::string_view op;
  dtype type = dtype::f32;
  compute_fn compute = nullptr;              // a synchronous kernel's, else null
  compute_async_fn compute_async = nullptr;  // an asynchronous kernel's, else null
  bool expensive = false;
  std::size_t order = 0;  // position in the registry's search order; the first wins
  const void* kernel = nullptr;  // kernel_id<K> of the kernel type K it runs
  const kernel_packing<Device>* packing = nullptr;  // K's packing functions where packs_operand<K>, else null
};

// An entry and the op value it runs (the registry's op type for entry->op, behind a pointer):
// how a runtime graph's node goes through the launch path (runtime/launch.hpp). An eager call or a
// static session through a table names its kernel type instead (registry/dispatched.hpp).
template <class Device>
struct table_kernel {
  using device_type = Device;
  static constexpr bool may_be_async = true;
  const kernel_entry<Device>* entry;
  const void* op;

  bool async() const noexcept { return entry->compute_async != nullptr; }
  status compute(kernel_context<Device>& ctx) const { return entry->compute(op, ctx); }
  void compute_async(kernel_context<Device>& ctx, kernel_done done) const {
    entry->compute_async(op, ctx, std::move(done));
  }
};

struct op_entry {
  std::string_view name;
  result<runtime_op> (*make)(const attr_map&) = nullptr;
};

template <class Device>
struct kernel_table {
  // Every (op, dtype) with a kernel on Device in this table, sorted by op name then dtype.
  std::span<const kernel_entry<Device>> kernels;
  // Every op with a kernel on Device for some dtype in this table, sorted by name.
  std::span<const op_entry> ops;
  // The table searched after this one, or null: a registry whose last list is typeflow's
  // (registry<my_kernels, cpu_kernel_list>) holds its own lists' kernels and hands the rest to
  // tf::default_registry's table, instantiated once in the program (registry/extern_kernels.hpp)
  // instead of again for every such registry. What this table holds wins, as the registry's first
  // list does.
  const kernel_table& (*next)() = nullptr;

  // The kernel for (op, dtype): this table's, else the next table's when that one's op of this name
  // is the same op type as this table's (an op of the program's own that took a built-in op's name
  // gets none of the built-in op's kernels, which would read its value as the other type).
  constexpr const kernel_entry<Device>* find_kernel(std::string_view op, dtype type) const {
    auto it = std::lower_bound(kernels.begin(), kernels.end(), std::pair{op, type},
                               [](const kernel_entry<Device>& e, const std::pair<std::string_view, dtype>& key) {
                                 // `(e.op) <`: Clang 19 looks `op` up as the concept typeflow::op and
                                 // reads `e.op < x` as a template argument list.
                                 return e.op != key.first ? (e.op) < key.first : e.type < key.second;
                               });
    if (it != kernels.end() && it->op == op && it->type == type) return &*it;
    if (next == nullptr) return nullptr;
    if (const op_entry* mine = find_own_op(op)) {
      const op_entry* theirs = next().find_op(op);
      if (theirs == nullptr || theirs->make != mine->make) return nullptr;
    }
    return next().find_kernel(op, type);
  }
  constexpr const op_entry* find_op(std::string_view name) const {
    if (const op_entry* mine = find_own_op(name)) return mine;
    return next != nullptr ? next().find_op(name) : nullptr;
  }
  // "f32, f64": the dtypes op has kernels for on Device, in dtype order, this table's and the next's.
  std::string dtypes_of(std::string_view op) const {
    detail::text t;
    for (std::size_t d = 0; d < num_dtypes; ++d) {
      const auto type = static_cast<dtype>(d);
      if (find_kernel(op, type) == nullptr) continue;
      if (!t.empty()) t.append(", ");
      t.append(name_of(type));
    }
    return t.str();
  }

 private:
  constexpr const op_entry* find_own_op(std::string_view name) const {
    auto it = std::lower_bound(ops.begin(), ops.end(), name, [](const op_entry& e, std::string_view n) { return e.name < n; });
    return it != ops.end() && it->name == name ? &*it : nullptr;
  }
};

// The table of Registry's kernels on Device, for runtime graphs. Defined in dispatch_table.hpp;
// deliberately a non-inline function template, so that `extern template` can keep a translation
// unit from instantiating it (and every kernel of the registry with it).
template <class Registry, class Device>
const kernel_table<Device>& kernels_of();

}  // namespace typeflow
