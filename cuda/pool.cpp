// SPDX-License-Identifier: Apache-2.0
// The host side of the pooling kernel (include/typeflow/cuda/pool.hpp).
#include <typeflow/cuda/pool.hpp>

#include <cuda_runtime_api.h>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/pool.cuh"

namespace typeflow::gpu {

namespace {

constexpr std::string_view name_of(pool_kind k) noexcept {
  return k == pool_kind::max ? "max_pool2d" : "avg_pool2d";
}

status check_axis(std::string_view op, std::string_view axis, const pool_axis& a) {
  if (a.in < 0 || a.out < 0)
    return errors::invalid_argument(op, ": the ", axis, " axis has ", static_cast<long long>(a.in), " input and ",
                                    static_cast<long long>(a.out), " output positions; both must be >= 0");
  if (a.size < 1 || a.stride < 1 || a.dilation < 1)
    return errors::invalid_argument(op, ": the ", axis, " axis has window ", static_cast<long long>(a.size), ", stride ",
                                    static_cast<long long>(a.stride), " and dilation ", static_cast<long long>(a.dilation),
                                    "; each must be >= 1");
  if (a.before < 0 || a.padded_end < a.in)
    return errors::invalid_argument(op, ": the ", axis, " axis has padding ", static_cast<long long>(a.before),
                                    " before and ends its padding at ", static_cast<long long>(a.padded_end),
                                    ", inside its ", static_cast<long long>(a.in), " positions");
  return ok_status();
}

} // namespace

status validate(const pool_params& p) {
  if (p.kind != pool_kind::max && p.kind != pool_kind::average)
    return errors::invalid_argument("pool2d: invalid pool kind code ", static_cast<int>(p.kind));
  const std::string_view op = name_of(p.kind);
  const bool numbers = p.type != elem::i64 && p.type != elem::boolean;
  if (!is_valid(p.type) || (p.kind == pool_kind::max ? !numbers : !is_floating(p.type)))
    return errors::invalid_argument(op, ": dtype ", is_valid(p.type) ? to_string(p.type) : "(invalid)",
                                    p.kind == pool_kind::max ? " is not supported (f16, bf16, f32, f64, i8, i32, u8)"
                                                             : " is not supported (floating types only)");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_axis(op, "height", p.h));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_axis(op, "width", p.w));
  const std::int64_t in_dims[] = {p.batch, p.h.in, p.w.in, p.channels};
  const std::int64_t out_dims[] = {p.batch, p.h.out, p.w.out, p.channels};
  auto in = detail::elements(op, "the input", in_dims);
  if (!in.ok()) return in.status();
  auto out = detail::elements(op, "the output", out_dims);
  if (!out.ok()) return out.status();
  if (*out > 0 && (p.x == nullptr || p.y == nullptr))
    return errors::invalid_argument(op, ": ", p.x == nullptr ? "the input" : "the output", " is null");
  return ok_status();
}

status pool2d(const stream& s, const pool_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, name_of(p.kind)));
  return detail::launched(kernels::launch_pool2d(static_cast<cudaStream_t>(s.native()), p), name_of(p.kind), s);
}

} // namespace typeflow::gpu
