// SPDX-License-Identifier: Apache-2.0
// What the GPU kernel types share: the shim's elem of a C++ element type, a tensor's dimensions as
// the shim takes them, and the check that every tensor a kernel is given lives on its GPU.
#pragma once

#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/kernels/kernel.hpp>

namespace typeflow::cuda_kernels::detail {

// gpu::elem and dtype list the element types in one order (test_cuda_host checks it).
template <class T>
inline constexpr gpu::elem elem_of = static_cast<gpu::elem>(dtype_of<T>);

inline std::span<const std::int64_t> dims_of(const tensor& t) noexcept {
  return {t.shape().dims.data(), t.rank()};
}

// Every input and output of the kernel lives in the device's memory: a host tensor given to an eager
// call on the GPU is an error that says what to do, not a device reading host memory.
template <class Device>
status check_spaces(std::string_view op, const kernel_context<Device>& ctx) {
  if (auto s = ctx.device.available(); !s.ok()) return s.with_context(op);
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i].space() != ctx.device.space())
      return errors::invalid_argument(op, ": input ", static_cast<long long>(i), " is in ", ctx.inputs[i].space(),
                                      ", not on ", ctx.device.name(), "; copy it there first (tf::copy)");
  for (std::size_t i = 0; i < ctx.outputs.size(); ++i)
    if (ctx.outputs[i].space() != ctx.device.space())
      return errors::invalid_argument(op, ": output ", static_cast<long long>(i), " is in ", ctx.outputs[i].space(),
                                      ", not on ", ctx.device.name());
  return ok_status();
}

} // namespace typeflow::cuda_kernels::detail
