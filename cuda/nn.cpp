// SPDX-License-Identifier: Apache-2.0
// The host side of the normalisation kernels (include/typeflow/cuda/nn.hpp).
#include <typeflow/cuda/nn.hpp>

#include <cuda_runtime_api.h>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/nn.cuh"

namespace typeflow::gpu {

namespace {

status check_floating(std::string_view op, elem type) {
  if (!is_valid(type) || !is_floating(type))
    return errors::invalid_argument(op, ": dtype ", is_valid(type) ? to_string(type) : "(invalid)",
                                    " is not supported (floating types only)");
  return ok_status();
}

status check_extent(std::string_view op, std::int64_t rows, std::int64_t n, std::string_view what) {
  const std::int64_t dims[] = {rows, n};
  auto count = detail::elements(op, what, dims);
  return count.ok() ? ok_status() : count.status();
}

} // namespace

status validate(const layer_norm_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_floating("layer_norm", p.type));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_extent("layer_norm", p.rows, p.n, "the input"));
  if (!(p.epsilon >= 0)) return errors::invalid_argument("layer_norm: epsilon must be >= 0, got ", p.epsilon);
  if (p.rows * p.n > 0 && (p.x == nullptr || p.y == nullptr || p.scale == nullptr || p.offset == nullptr))
    return errors::invalid_argument("layer_norm: ", p.x == nullptr ? "the input" : p.y == nullptr ? "the output"
                                    : p.scale == nullptr ? "scale" : "offset", " is null");
  return ok_status();
}

status validate(const batch_norm_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_floating("batch_norm", p.type));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_extent("batch_norm", p.rows, p.channels, "the input"));
  if (!(p.epsilon >= 0)) return errors::invalid_argument("batch_norm: epsilon must be >= 0, got ", p.epsilon);
  if (p.rows * p.channels > 0 && (p.x == nullptr || p.y == nullptr || p.scale == nullptr || p.offset == nullptr ||
                                  p.mean == nullptr || p.variance == nullptr))
    return errors::invalid_argument("batch_norm: an input or the output is null");
  return ok_status();
}

status layer_norm(const stream& s, const layer_norm_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "layer_norm"));
  return detail::launched(kernels::launch_layer_norm(static_cast<cudaStream_t>(s.native()), p.type, p.x, p.rows, p.n,
                                                     p.scale, p.offset, p.epsilon, p.y),
                          "layer_norm", s);
}

status batch_norm(const stream& s, const batch_norm_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "batch_norm"));
  return detail::launched(kernels::launch_batch_norm(static_cast<cudaStream_t>(s.native()), p.type, p.x, p.rows,
                                                     p.channels, p.scale, p.offset, p.mean, p.variance, p.epsilon, p.y),
                          "batch_norm", s);
}

} // namespace typeflow::gpu
