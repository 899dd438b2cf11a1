// SPDX-License-Identifier: Apache-2.0
// The host side of the resize kernel (include/typeflow/cuda/resize.hpp).
#include <typeflow/cuda/resize.hpp>

#include <cuda_runtime_api.h>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/resize.cuh"

namespace typeflow::gpu {

status validate(const resize_params& p) {
  constexpr std::string_view op = "resize";
  if (!is_valid(p.type) || p.type == elem::boolean || (p.bilinear && !is_floating(p.type)))
    return errors::invalid_argument(op, ": dtype ", is_valid(p.type) ? to_string(p.type) : "(invalid)",
                                    p.bilinear ? " is not supported by bilinear resize (f16, bf16, f32, f64)"
                                               : " is not supported by nearest resize (every numeric dtype)");
  const std::int64_t in_dims[] = {p.batch, p.in_h, p.in_w, p.channels};
  const std::int64_t out_dims[] = {p.batch, p.out_h, p.out_w, p.channels};
  auto in = detail::elements(op, "the input", in_dims);
  if (!in.ok()) return in.status();
  auto out = detail::elements(op, "the output", out_dims);
  if (!out.ok()) return out.status();
  if (*out == 0) return ok_status();
  if (p.in_h == 0 || p.in_w == 0)
    return errors::invalid_argument(op, ": the input is ", p.in_h, " x ", p.in_w, "; an empty image cannot be resized to ",
                                    p.out_h, " x ", p.out_w);
  if (p.x == nullptr || p.y == nullptr || p.tables == nullptr)
    return errors::invalid_argument(op, ": ", p.x == nullptr ? "the input is" : p.y == nullptr ? "the output is" : "the tables are",
                                    " null");
  return ok_status();
}

status resize(const stream& s, const resize_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "resize"));
  return detail::launched(kernels::launch_resize(static_cast<cudaStream_t>(s.native()), p), "resize", s);
}

} // namespace typeflow::gpu
