// SPDX-License-Identifier: Apache-2.0
// call<T>(device, op, inputs...): runs one op eagerly through the kernel that the registry picks
// at compile time for (op, device, T), and gives its output (all of them, in a vector, for an op
// with several), through the launch path every executor uses (launch.hpp). Host inputs of a device
// with memory of its own (a GPU) are copied in first, as a session copies its feeds; the output
// stays on the device (tf::copy brings it back). A tensor of another device is an error. Everything that depends
// on the tensors' run-time dtypes and shapes is checked and reported as a status; a missing kernel
// is a compile error.
// call<T, dispatched<Registry>> runs the same kernel, still named at compile time, through the
// registry's dispatch table (kernels_of<Registry, Device>()): a translation unit that includes
// <typeflow/registry/extern_kernels.hpp> then compiles none of the kernel's code, which the one
// unit that instantiates the table holds (README, "Compile time"). A kernel of a template family
// (a fused group's) is in no table: a compile error says to use call<T>.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <span>
#include <type_traits>
#include <vector>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/copy.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/dispatch_table.hpp>
#include <typeflow/registry/dispatched.hpp>
#include <typeflow/runtime/launch.hpp>

namespace typeflow {

namespace detail {
template <class Registry>
struct call_registry {
  using type = Registry;
  static constexpr bool through_table = false;
};
template <class Registry>
struct call_registry<dispatched<Registry>> {
  using type = typename table_registry<Registry>::type;
  static constexpr bool through_table = true;
};
}  // namespace detail

// What call returns: the output tensor, or for an op with several outputs (split, top_k) all of
// them in order.
template <op Op>
using call_result = std::conditional_t<multi_output_op<Op>, std::vector<tensor>, tensor>;

// Inputs given as a span: the form for variadic ops (concat) and for programs that hold tensors
// in containers.
template <element_type T, class Registry = default_registry, device_policy Device, op Op>
result<call_result<Op>> call(Device& device, const Op& o, std::span<const tensor> inputs) {
  using registry = detail::call_registry<Registry>;
  using kernel_type = typename registry::type::template kernel<Op, Device, T>;

  constexpr std::size_t small = 8;
  std::array<tensor_spec, small> specs_small{};
  std::vector<tensor_spec> specs_large;
  std::span<tensor_spec> specs(specs_small.data(), inputs.size());
  if (inputs.size() > small) {
    specs_large.resize(inputs.size());
    specs = specs_large;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const tensor& t = inputs[i];
    if (!t.valid()) return errors::invalid_argument(Op::name, ": input ", i, " is an empty tensor with no storage");
    specs[i] = t.spec();
  }
  // Inputs the device reads where they are pass; host inputs of a device with memory of its own are
  // copied in; a tensor of another device is an error.
  std::vector<tensor> copied;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (reads_in_place(inputs[i], device)) continue;
    if (!inputs[i].space().host_accessible())
      return unreadable(inputs[i], device).with_context(detail::cat(Op::name, ": input ", i).view());
    if (copied.empty()) copied.assign(inputs.begin(), inputs.end());
    auto in = to_device(inputs[i], device);
    if (!in.ok()) return in.status().with_context(detail::cat(Op::name, ": input ", i).view());
    copied[i] = std::move(*in);
  }
  if (!copied.empty()) inputs = copied;
  if (auto st = check_num_outputs(o); !st.ok()) return st;
  call_result<Op> y;
  std::span<tensor> outputs;
  if constexpr (multi_output_op<Op>) {
    y.resize(num_outputs_of(o));
    outputs = y;
  } else {
    outputs = std::span<tensor>(&y, 1);
  }
  const std::span<const tensor_spec> in_specs(specs);
  status st;
  const bool prepared = prepare_outputs(
      outputs.size(), st,
      [&](std::size_t k, tensor_spec& scratch, status& error) -> const tensor_spec* {
        const tensor_spec* out = inferred_spec(infer(o, in_specs, k), scratch, error);
        if (out != nullptr && k == 0 && kernel_dtype<Op>(in_specs, *out) != dtype_of<T>) {
          error = errors::invalid_argument(Op::name, ": called with the kernel for ", name_of(dtype_of<T>), " but ",
                                           inputs.empty() ? "the output" : "input 0", " has dtype ",
                                           kernel_dtype<Op>(in_specs, *out));
          return nullptr;
        }
        return out;
      },
      [&](std::size_t k, const tensor_spec& spec, status& error) {
        auto made = device.allocate(spec.type, spec.dims);
        if (!made.ok()) {
          error = std::move(made).take_status();
          return false;
        }
        outputs[k] = std::move(*made);
        return true;
      });
  if (!prepared) return st;
  if constexpr (registry::through_table) {
    using reg = typename registry::type;
    // (No second error where the kernel is missing: that one has been reported.)
    constexpr bool in_tables = !reg::template has_kernel<Op, Device, T> || reg::template in_dispatch_tables<Op, Device, T>();
    static_assert(in_tables || compile_error<detail::text_constant<[] {
                    if constexpr (in_tables) return detail::text();
                    else
                      return detail::cat("call<T, dispatched<Registry>>: the kernel of op ", Op::name,
                                         " comes from a kernel template family, which dispatch tables do not "
                                         "hold: call it with call<T>");
                  }>::value>::value,
                  "typeflow: call<T, dispatched<Registry>> runs only kernels that dispatch tables hold");
    static_assert(std::is_same_v<typename kernel_type::op_type, Op>,
                  "typeflow: call<T, dispatched<Registry>>: the registry's kernel for this op runs another op type");
    // The table's entry for (op, dtype), checked to be the kernel named above; the kernel in place
    // where the table gives the op's name to another op type (registry/dispatched.hpp).
    launch(device, compiled_kernel<typename dispatched<reg>::template kernel<Op, Device, T>>{o}, inputs, outputs, st,
           [](status&) {});
  } else {
    launch(device, compiled_kernel<kernel_type>{o}, inputs, outputs, st, [](status&) {});
  }
  if (!st.ok()) return st;
  return y;
}

// call<float>(cpu, ops::add{}, a, b)
template <element_type T, class Registry = default_registry, device_policy Device, op Op, class... In>
  requires(std::same_as<In, tensor> && ...)
result<call_result<Op>> call(Device& device, const Op& o, const In&... inputs) {
  const std::array<tensor, sizeof...(In)> list{inputs...};
  return call<T, Registry>(device, o, std::span<const tensor>(list));
}

} // namespace typeflow
