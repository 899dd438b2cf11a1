// SPDX-License-Identifier: Apache-2.0
// Internal to libtypeflow_cuda: what the launchers' parameter checks share (dimensions in messages,
// element counts that cannot overflow, the status of a kernel launch).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/elementwise.hpp>

#include "check.hpp"

namespace typeflow::gpu::detail {

// "[2, 3]"
inline typeflow::detail::text dims_text(dims_view d) {
  typeflow::detail::text t("[");
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0) t.append(", ");
    typeflow::detail::append(t, static_cast<long long>(d[i]));
  }
  t.append("]");
  return t;
}

// Elements of a tensor of dims `d`; invalid_argument naming `op` and `what` for a negative
// dimension or a product beyond 2^63.
inline result<std::int64_t> elements(std::string_view op, std::string_view what, dims_view d) {
  std::int64_t n = 1;
  for (const std::int64_t v : d) {
    if (v < 0) return errors::invalid_argument(op, ": ", what, " has a negative dimension in ", dims_text(d));
    if (v != 0 && n > INT64_MAX / v)
      return errors::invalid_argument(op, ": ", what, " ", dims_text(d), " has more than 2^63 elements");
    n *= v;
  }
  return n;
}

// The status of a kernel launch of `op` on the device of `s`.
inline status launched(cudaError_t e, std::string_view op, const stream& s) {
  return cuda_status(e, "kernel launch", op, " on GPU:", s.ordinal());
}

} // namespace typeflow::gpu::detail
