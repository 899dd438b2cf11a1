// SPDX-License-Identifier: Apache-2.0
// Internal to libtypeflow_cuda: CUDA, cuBLAS and cuDNN error codes as typeflow statuses that name the
// call, what it was asked and the device.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu::detail {

using typeflow::detail::cat;

// The status code a CUDA runtime error maps to.
inline status_code code_of(cudaError_t e) {
  switch (e) {
    case cudaErrorMemoryAllocation: return status_code::resource_exhausted;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidConfiguration: return status_code::invalid_argument;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary: return status_code::failed_precondition;
    case cudaErrorNotReady: return status_code::unavailable;
    default: return status_code::internal;
  }
}

// "cudaMalloc (1048576 bytes on GPU:0): out of memory (cudaErrorMemoryAllocation)". The error is
// also taken off the thread's last-error slot, so that a later call does not report it again.
template <class... What>
status cuda_status(cudaError_t e, std::string_view call, const What&... what) {
  if (e == cudaSuccess) return ok_status();
  (void)cudaGetLastError();
  if constexpr (sizeof...(What) == 0)
    return status(code_of(e), cat(call, ": ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")"));
  else
    return status(code_of(e), cat(call, " (", what..., "): ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")"));
}

#define TYPEFLOW_CUDA_RETURN_IF_ERROR(expr)        \
  do {                                             \
    ::typeflow::status _tf_status = (expr);        \
    if (!_tf_status.ok()) return _tf_status;       \
  } while (0)

// Makes `ordinal` the calling thread's current device, after checking it names one.
status use_device(int ordinal);
// The same for the device of `s`, after checking `s` is not moved-from; `op` names the caller.
status use_stream(const stream& s, std::string_view op);

} // namespace typeflow::gpu::detail
