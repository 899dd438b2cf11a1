// SPDX-License-Identifier: Apache-2.0
// The host side of the top_k kernels (include/typeflow/cuda/top_k.hpp).
#include <typeflow/cuda/top_k.hpp>

#include <cuda_runtime_api.h>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/top_k.cuh"

namespace typeflow::gpu {

status validate(const top_k_params& p) {
  constexpr std::string_view op = "top_k";
  if (!is_valid(p.type) || p.type == elem::boolean || p.type == elem::i8 || p.type == elem::u8)
    return errors::invalid_argument(op, ": dtype ", is_valid(p.type) ? to_string(p.type) : "(invalid)",
                                    " is not supported (f16, bf16, f32, f64, i32, i64)");
  const std::int64_t in_dims[] = {p.rows, p.n};
  auto in = detail::elements(op, "the input", in_dims);
  if (!in.ok()) return in.status();
  if (p.k < 0 || p.k > p.n)
    return errors::invalid_argument(op, ": k = ", p.k, " is not within the row's ", p.n, " entries");
  if (p.rows * p.k == 0) return ok_status();
  if (p.x == nullptr || p.values == nullptr || p.indices == nullptr)
    return errors::invalid_argument(op, ": ", p.x == nullptr ? "the input" : p.values == nullptr ? "the values" : "the indices",
                                    " is null");
  if (!p.sorted && p.ranks == nullptr) return errors::invalid_argument(op, ": unsorted top_k needs the ranks' scratch, which is null");
  return ok_status();
}

status top_k(const stream& s, const top_k_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "top_k"));
  return detail::launched(kernels::launch_top_k(static_cast<cudaStream_t>(s.native()), p), "top_k", s);
}

} // namespace typeflow::gpu
