// SPDX-License-Identifier: Apache-2.0
// call<T>(device, op, inputs...): runs one op eagerly through the kernel that the registry picks
// at compile time for (op, device, T). Everything that depends on the tensors' run-time dtypes
// and shapes is checked and reported as a status; a missing kernel is a compile error.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <span>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/registry/default_registry.hpp>

namespace typeflow {

// Inputs given as a span: the form for variadic ops (concat) and for programs that hold tensors
// in containers.
template <element_type T, class Registry = default_registry, device_policy Device, op Op>
result<tensor> call(Device& device, const Op& o, std::span<const tensor> inputs) {
  using kernel_type = typename Registry::template kernel<Op, Device, T>;

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
  auto out = infer(o, std::span<const tensor_spec>(specs));
  if (!out.ok()) return out.status();
  if (kernel_dtype<Op>(specs, *out) != dtype_of<T>)
    return errors::invalid_argument(Op::name, ": called with the kernel for ", name_of(dtype_of<T>), " but ",
                                    inputs.empty() ? "the output" : "input 0", " has dtype ",
                                    kernel_dtype<Op>(specs, *out));

  auto y = device.allocate(out->type, out->dims);
  if (!y.ok()) return y;
  kernel_context<Device> ctx{device, inputs, std::span<tensor>(&*y, 1)};
  if (auto st = run_kernel<kernel_type>(o, ctx); !st.ok()) return st;
  return y;
}

// call<float>(cpu, ops::add{}, a, b)
template <element_type T, class Registry = default_registry, device_policy Device, op Op, class... In>
  requires(std::same_as<In, tensor> && ...)
result<tensor> call(Device& device, const Op& o, const In&... inputs) {
  const std::array<tensor, sizeof...(In)> list{inputs...};
  return call<T, Registry>(device, o, std::span<const tensor>(list));
}

} // namespace typeflow
