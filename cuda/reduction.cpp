// SPDX-License-Identifier: Apache-2.0
// The host side of the reductions, argmax and softmax (include/typeflow/cuda/reduction.hpp).
#include <typeflow/cuda/reduction.hpp>

#include <cuda_runtime_api.h>

#include <array>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/reduction.cuh"

namespace typeflow::gpu {

namespace {

using detail::dims_text;
using detail::elements;
using detail::launched;

// `axis` against a rank, negative counting from the back.
result<std::size_t> normalised_axis(std::string_view op, int axis, dims_view d) {
  const auto rank = static_cast<long long>(d.size());
  if (axis < -rank || axis >= rank)
    return errors::invalid_argument(op, ": axis ", axis, " is out of range for an input of rank ", rank, " (shape ",
                                    dims_text(d), ")");
  return static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
}

// [outer, n, inner] around one axis.
std::array<std::int64_t, 3> around(dims_view d, std::size_t axis) {
  std::array<std::int64_t, 3> v{1, d[axis], 1};
  for (std::size_t i = 0; i < axis; ++i) v[0] *= d[i];
  for (std::size_t i = axis + 1; i < d.size(); ++i) v[2] *= d[i];
  return v;
}

// `outputs`: the elements the output has (an empty input may still give outputs: a sum over an
// empty axis is 0 for each).
status check_common(std::string_view op, elem type, const void* x, dims_view dims, const void* y,
                    std::int64_t outputs) {
  if (!is_valid(type)) return errors::invalid_argument(op, ": the input has the invalid dtype code ", static_cast<int>(type));
  auto n = elements(op, "the input", dims);
  if (!n.ok()) return n.status();
  if (*n > 0 && x == nullptr) return errors::invalid_argument(op, ": the input is null but has ", *n, " elements");
  if (y == nullptr && outputs > 0) return errors::invalid_argument(op, ": the output is null but has ", outputs, " elements");
  return ok_status();
}

} // namespace

result<reduction_layout> make_reduction_layout(std::string_view op, dims_view x_dims, std::span<const int> axes) {
  auto n = elements(op, "the input", x_dims);
  if (!n.ok()) return n.status();
  const std::size_t rank = x_dims.size();
  if (rank > 64) return errors::invalid_argument(op, ": the input has more than 64 dimensions");
  std::array<bool, 64> reduced{};
  if (axes.empty()) reduced.fill(true);
  for (const int a : axes) {
    auto axis = normalised_axis(op, a, x_dims);
    if (!axis.ok()) return axis.status();
    if (reduced[*axis])
      return errors::invalid_argument(op, ": axis ", static_cast<long long>(*axis), " is named more than once (input shape ",
                                      dims_text(x_dims), ")");
    reduced[*axis] = true;
  }
  // Innermost first: merge runs of the same kind (contiguous in a row-major input), drop size-1 dims.
  struct group {
    std::int64_t dim, stride;
  };
  group kept[64], red[64];
  int nk = 0, nr = 0;
  bool last_reduced = false, any = false;
  std::int64_t stride = 1;
  for (std::size_t k = rank; k-- > 0;) {
    const std::int64_t d = x_dims[k];
    if (d != 1) {
      group* g = reduced[k] ? red : kept;
      int& count = reduced[k] ? nr : nk;
      if (any && last_reduced == reduced[k]) g[count - 1].dim *= d;
      else g[count++] = {d, stride};
      last_reduced = reduced[k];
      any = true;
    }
    stride *= d;
  }
  if (nk > max_layout_rank || nr > max_layout_rank)
    return errors::invalid_argument(op, ": the input ", dims_text(x_dims), " alternates kept and reduced axes ",
                                    nk + nr, " times after merging; GPU reductions index at most ", max_layout_rank,
                                    " of each");
  reduction_layout l;
  const auto fill = [](strided_layout<1>& s, const group* g, int count) {
    s.rank = count;
    s.size = 1;
    for (int i = 0; i < count; ++i) {
      s.dims[count - 1 - i] = g[i].dim;
      s.strides[0][count - 1 - i] = g[i].stride;
      s.size *= g[i].dim;
    }
  };
  fill(l.kept, kept, nk);
  fill(l.reduced, red, nr);
  if (*n == 0) {
    // Some dimension is 0: the output is empty when it is a kept one, else each output reduces nothing.
    bool kept_empty = false, reduced_empty = false;
    for (std::size_t k = 0; k < rank; ++k)
      if (x_dims[k] == 0) (reduced[k] ? reduced_empty : kept_empty) = true;
    if (kept_empty) l.kept.size = 0;
    if (reduced_empty) l.reduced.size = 0;
  }
  l.rows = nr == 1 && l.reduced.strides[0][0] == 1;
  return l;
}

namespace {

// Every check of a reduction, and its layout: validate() and reduce() compute it once each.
result<reduction_layout> checked_layout(const reduce_params& p) {
  if (static_cast<int>(p.op) >= num_reduce_ops)
    return errors::invalid_argument("reduce: invalid op code ", static_cast<int>(p.op));
  const std::string_view op = to_string(p.op);
  auto l = make_reduction_layout(op, p.x_dims, p.axes);
  if (!l.ok()) return l.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_common(op, p.type, p.x, p.x_dims, p.y, l->kept.size));
  if (p.type == elem::boolean) return errors::invalid_argument(op, ": dtype bool is not supported (numbers only)");
  return l;
}

} // namespace

status validate(const reduce_params& p) { return checked_layout(p).status(); }

status validate(const argmax_params& p) {
  auto axis = normalised_axis("argmax", p.axis, p.x_dims);
  if (!axis.ok()) return axis.status();
  auto n = elements("argmax", "the input", p.x_dims);
  if (!n.ok()) return n.status();
  const std::int64_t extent = p.x_dims[*axis];
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_common("argmax", p.type, p.x, p.x_dims, p.y, extent == 0 ? 0 : *n / extent));
  if (p.type == elem::boolean) return errors::invalid_argument("argmax: dtype bool is not supported (numbers only)");
  if (p.x_dims[*axis] == 0)
    return errors::invalid_argument("argmax: axis ", static_cast<long long>(*axis), " of the input (shape ",
                                    dims_text(p.x_dims), ") is empty, so it has no largest element");
  return ok_status();
}

status validate(const softmax_params& p) {
  const std::string_view op = p.log ? "log_softmax" : "softmax";
  auto n = elements(op, "the input", p.x_dims);
  if (!n.ok()) return n.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_common(op, p.type, p.x, p.x_dims, p.y, *n));
  if (!is_floating(p.type))
    return errors::invalid_argument(op, ": dtype ", to_string(p.type), " is not supported (floating types only)");
  if (p.x_dims.empty()) return errors::invalid_argument(op, ": the input is a scalar; it needs rank >= 1");
  auto axis = normalised_axis(op, p.axis, p.x_dims);
  return axis.ok() ? ok_status() : axis.status();
}

status reduce(const stream& s, const reduce_params& p) {
  auto l = checked_layout(p);
  if (!l.ok()) return l.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, to_string(p.op)));
  return launched(kernels::launch_reduce(static_cast<cudaStream_t>(s.native()), p.op, p.type, p.x, p.y, *l),
                  to_string(p.op), s);
}

status argmax(const stream& s, const argmax_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  const auto [outer, n, inner] = around(p.x_dims, *normalised_axis("argmax", p.axis, p.x_dims));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "argmax"));
  return launched(kernels::launch_argmax(static_cast<cudaStream_t>(s.native()), p.type, p.x, p.y, outer, n, inner,
                                         p.select_last_index),
                  "argmax", s);
}

status softmax(const stream& s, const softmax_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  const std::string_view op = p.log ? "log_softmax" : "softmax";
  const auto [outer, n, inner] = around(p.x_dims, *normalised_axis(op, p.axis, p.x_dims));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, op));
  return launched(kernels::launch_softmax(static_cast<cudaStream_t>(s.native()), p.type, p.x, p.y, outer, n, inner, p.log),
                  op, s);
}

} // namespace typeflow::gpu
