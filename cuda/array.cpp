// SPDX-License-Identifier: Apache-2.0
// The host side of the data-movement kernels (include/typeflow/cuda/array.hpp).
#include <typeflow/cuda/array.hpp>

#include <cuda_runtime_api.h>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/array.cuh"

namespace typeflow::gpu {

namespace {

using detail::dims_text;
using detail::elements;
using detail::launched;

} // namespace

result<strided_layout<2>> copy_layout(std::string_view op, dims_view dims, std::span<const std::int64_t> src_strides,
                                      std::span<const std::int64_t> dst_strides) {
  auto n = elements(op, "the copy", dims);
  if (!n.ok()) return n.status();
  if (src_strides.size() != dims.size() || dst_strides.size() != dims.size())
    return errors::invalid_argument(op, ": ", dims.size(), " dimensions ", dims_text(dims), " but ", src_strides.size(),
                                    " source and ", dst_strides.size(), " destination strides");
  // Innermost first; size-1 dimensions dropped; a dimension merges into the one inside it when both
  // sides step through the pair as through one dimension.
  std::int64_t d_dims[64], d_strides[2][64];
  int merged = 0;
  for (std::size_t k = dims.size(); k-- > 0;) {
    const std::int64_t d = dims[k];
    if (d == 1) continue;
    const std::int64_t step[2] = {src_strides[k], dst_strides[k]};
    if (merged > 0 && step[0] == d_strides[0][merged - 1] * d_dims[merged - 1] &&
        step[1] == d_strides[1][merged - 1] * d_dims[merged - 1]) {
      d_dims[merged - 1] *= d;
      continue;
    }
    if (merged == 64) return errors::invalid_argument(op, ": more than 64 dimensions");
    d_dims[merged] = d;
    d_strides[0][merged] = step[0];
    d_strides[1][merged] = step[1];
    ++merged;
  }
  if (merged > max_layout_rank)
    return errors::invalid_argument(op, ": the copy of ", dims_text(dims), " has ", merged,
                                    " dimensions that do not merge; GPU kernels index at most ", max_layout_rank);
  strided_layout<2> l;
  l.rank = merged;
  l.size = *n;
  for (int i = 0; i < merged; ++i) {
    l.dims[merged - 1 - i] = d_dims[i];
    l.strides[0][merged - 1 - i] = d_strides[0][i];
    l.strides[1][merged - 1 - i] = d_strides[1][i];
  }
  l.same_shape = merged == 0 || (merged == 1 && l.strides[0][0] == 1 && l.strides[1][0] == 1);
  return l;
}

namespace {

// Every check of a launch, and the layout it runs with: validate() and the launch compute it once.
result<strided_layout<2>> checked_layout(const strided_copy_params& p, std::string_view op) {
  if (!is_valid(p.type)) return errors::invalid_argument(op, ": invalid dtype code ", static_cast<int>(p.type));
  auto l = copy_layout(op, p.dims, p.src_strides, p.dst_strides);
  if (!l.ok()) return l.status();
  if (l->size > 0 && (p.src == nullptr || p.dst == nullptr))
    return errors::invalid_argument(op, ": the ", p.src == nullptr ? "source" : "destination", " is null but the copy has ",
                                    l->size, " elements");
  return l;
}

result<strided_layout<3>> checked_layout(const select_params& p) {
  if (!is_valid(p.type)) return errors::invalid_argument("where: invalid dtype code ", static_cast<int>(p.type));
  auto l = broadcast_layout("where", p.condition_dims, p.x_dims, p.y_dims, p.out_dims);
  if (!l.ok()) return l.status();
  if (l->size > 0 && (p.condition == nullptr || p.x == nullptr || p.y == nullptr || p.out == nullptr))
    return errors::invalid_argument("where: ", p.condition == nullptr ? "the condition" : p.x == nullptr ? "x"
                                    : p.y == nullptr ? "y" : "the output", " is null");
  return l;
}

result<pad_layout> checked_layout(const pad_params& p) {
  auto l = make_pad_layout(p);
  if (!l.ok()) return l.status();
  if (l->size > 0 && p.y == nullptr) return errors::invalid_argument("pad: the output is null but has ", l->size, " elements");
  auto n = detail::elements("pad", "the input", p.x_dims);  // checked by make_pad_layout
  if (*n > 0 && p.x == nullptr) return errors::invalid_argument("pad: the input is null but has ", *n, " elements");
  return l;
}

} // namespace

status validate(const strided_copy_params& p, std::string_view op) { return checked_layout(p, op).status(); }

status validate(const gather_params& p) {
  if (!is_valid(p.type)) return errors::invalid_argument("gather: invalid dtype code ", static_cast<int>(p.type));
  if (p.index_type != elem::i32 && p.index_type != elem::i64)
    return errors::invalid_argument("gather: indices must be i32 or i64, not ", to_string(p.index_type));
  if (p.outer < 0 || p.axis < 0 || p.inner < 0 || p.count < 0)
    return errors::invalid_argument("gather: negative extent in outer ", p.outer, ", axis ", p.axis, ", inner ", p.inner,
                                    ", count ", p.count);
  const std::int64_t dims[] = {p.outer, p.count, p.inner};
  auto n = elements("gather", "the output", dims);
  if (!n.ok()) return n.status();
  if (*n > 0 && p.axis == 0)
    return errors::invalid_argument("gather: the gathered axis is empty, so no index can be in range");
  if (*n > 0 && (p.params == nullptr || p.indices == nullptr || p.out == nullptr))
    return errors::invalid_argument("gather: ", p.params == nullptr ? "params" : p.indices == nullptr ? "indices" : "the output",
                                    " is null");
  return ok_status();
}

status validate(const select_params& p) { return checked_layout(p).status(); }

status select(const stream& s, const select_params& p) {
  auto l = checked_layout(p);
  if (!l.ok()) return l.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "where"));
  return launched(kernels::launch_select(static_cast<cudaStream_t>(s.native()), size_of(p.type), p.condition, p.x, p.y,
                                         p.out, *l),
                  "where", s);
}

status strided_copy(const stream& s, const strided_copy_params& p, std::string_view op) {
  auto l = checked_layout(p, op);
  if (!l.ok()) return l.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, op));
  return launched(kernels::launch_strided_copy(static_cast<cudaStream_t>(s.native()), size_of(p.type), p.src, p.dst, *l),
                  op, s);
}

status gather(const stream& s, const gather_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "gather"));
  return launched(kernels::launch_gather(static_cast<cudaStream_t>(s.native()), size_of(p.type), p.params, p.outer,
                                         p.axis, p.inner, p.index_type == elem::i64, p.indices, p.count, p.out,
                                         p.error_word),
                  "gather", s);
}

result<pad_layout> make_pad_layout(const pad_params& p) {
  if (!is_valid(p.type)) return errors::invalid_argument("pad: invalid dtype code ", static_cast<int>(p.type));
  if (static_cast<int>(p.mode) > 3) return errors::invalid_argument("pad: invalid mode code ", static_cast<int>(p.mode));
  auto n = detail::elements("pad", "the input", p.x_dims);
  if (!n.ok()) return n.status();
  const std::size_t rank = p.x_dims.size();
  if (rank > static_cast<std::size_t>(max_pad_rank))
    return errors::invalid_argument("pad: the input has rank ", static_cast<long long>(rank), "; at most ", max_pad_rank);
  if (p.paddings.size() != 2 * rank)
    return errors::invalid_argument("pad: ", static_cast<long long>(p.paddings.size()), " paddings for an input of rank ",
                                    static_cast<long long>(rank), "; expected 2 per dimension");
  pad_layout l;
  l.rank = static_cast<int>(rank);
  l.mode = p.mode;
  l.size = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t d = p.x_dims[k], b = p.paddings[2 * k], a = p.paddings[2 * k + 1];
    if (b < 0 || a < 0)
      return errors::invalid_argument("pad: paddings (", b, ", ", a, ") of axis ", static_cast<long long>(k), " are negative");
    const std::int64_t most = b > a ? b : a;
    if ((p.mode == pad_mode::reflect && most > d - 1) || (p.mode == pad_mode::symmetric && most > d) ||
        (p.mode == pad_mode::edge && d == 0 && most > 0))
      return errors::invalid_argument("pad: axis ", static_cast<long long>(k), " has ", d, " elements, too few to pad by ",
                                      most, " in mode ", p.mode == pad_mode::reflect ? "reflect" : p.mode == pad_mode::symmetric ? "symmetric" : "edge");
    if (d > INT64_MAX - a - b) return errors::invalid_argument("pad: axis ", static_cast<long long>(k), " overflows");
    l.in_dims[k] = d;
    l.before[k] = b;
    l.out_dims[k] = d + b + a;
  }
  const std::span<const std::int64_t> out(l.out_dims, rank);
  auto total = detail::elements("pad", "the output", out);
  if (!total.ok()) return total.status();
  l.size = *total;
  return l;
}

status validate(const pad_params& p) { return checked_layout(p).status(); }

status pad(const stream& s, const pad_params& p) {
  auto l = checked_layout(p);
  if (!l.ok()) return l.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "pad"));
  return detail::launched(kernels::launch_pad(static_cast<cudaStream_t>(s.native()), p.type, p.x, p.y, *l, p.value),
                          "pad", s);
}

} // namespace typeflow::gpu
