// SPDX-License-Identifier: Apache-2.0
// The host side of the elementwise kernels (include/typeflow/cuda/elementwise.hpp): parameter
// checks, the broadcast layout, and the launches (kernels/elementwise.cu).
#include <typeflow/cuda/elementwise.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>

#include "detail/check.hpp"
#include "detail/dims.hpp"
#include "kernels/elementwise.cuh"

namespace typeflow::gpu {

namespace {

using typeflow::detail::cat;
using detail::dims_text;
using detail::elements;
using detail::launched;

status check_elem(std::string_view op, std::string_view what, elem e) {
  if (!is_valid(e)) return errors::invalid_argument(op, ": ", what, " has the invalid dtype code ", static_cast<int>(e));
  return ok_status();
}

status check_pointer(std::string_view op, std::string_view what, const void* p, std::int64_t size) {
  if (p == nullptr && size > 0)
    return errors::invalid_argument(op, ": ", what, " is null but has ", static_cast<long long>(size), " elements");
  return ok_status();
}

} // namespace

result<strided_layout<2>> broadcast_layout(std::string_view op, dims_view a, dims_view b, dims_view out) {
  for (const auto& [d, name] : {std::pair{a, "input 0"}, std::pair{b, "input 1"}, std::pair{out, "the output"}}) {
    auto n = elements(op, name, d);
    if (!n.ok()) return n.status();
  }
  const std::size_t rank = out.size();
  if (a.size() > rank || b.size() > rank || rank != std::max(a.size(), b.size()))
    return errors::invalid_argument(op, ": the output's shape ", dims_text(out), " is not the broadcast of the inputs' ",
                                    dims_text(a), " and ", dims_text(b));
  // Right-aligned: dimension i of the output is dimension i - (rank - size) of an operand.
  const auto dim_of = [&](dims_view d, std::size_t i) -> std::int64_t {
    const std::size_t lead = rank - d.size();
    return i < lead ? 1 : d[i - lead];
  };
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = dim_of(a, i), db = dim_of(b, i);
    if (da != db && da != 1 && db != 1)
      return errors::invalid_argument(op, ": input 0 ", dims_text(a), " and input 1 ", dims_text(b),
                                      " do not broadcast (output dimension ", static_cast<long long>(i), ")");
    if (out[i] != (da == 1 ? db : da))
      return errors::invalid_argument(op, ": input 0 ", dims_text(a), " and input 1 ", dims_text(b),
                                      " broadcast to a shape other than the output's ", dims_text(out),
                                      " (dimension ", static_cast<long long>(i), ")");
  }

  // Dimensions of the output, innermost first, with each operand's stride; size-1 output dimensions
  // are dropped, and a dimension merges into the one inside it when every operand steps through
  // both as one (contiguous across them, or broadcast along both).
  strided_layout<2> l;
  std::int64_t dims[64 + 1];
  std::int64_t strides[2][64 + 1];
  int merged = 0;
  std::int64_t running[2] = {1, 1};  // each operand's row-major stride of the current dimension
  for (std::size_t k = rank; k-- > 0;) {
    const std::int64_t d = out[k];
    const std::int64_t operand_dim[2] = {dim_of(a, k), dim_of(b, k)};
    std::int64_t step[2];
    for (int i = 0; i < 2; ++i) step[i] = (operand_dim[i] == 1 && d != 1) ? 0 : running[i];
    for (int i = 0; i < 2; ++i) running[i] *= operand_dim[i];
    if (d == 1) continue;
    if (merged > 0) {
      bool mergeable = true;
      for (int i = 0; i < 2; ++i) {
        const std::int64_t inner = strides[i][merged - 1] * dims[merged - 1];
        mergeable = mergeable && ((step[i] == 0 && strides[i][merged - 1] == 0) || (step[i] != 0 && step[i] == inner));
      }
      if (mergeable) { dims[merged - 1] *= d; continue; }
    }
    if (merged == 64) return errors::invalid_argument(op, ": the output has more than 64 dimensions");
    dims[merged] = d;
    strides[0][merged] = step[0];
    strides[1][merged] = step[1];
    ++merged;
  }
  if (merged > max_layout_rank)
    return errors::invalid_argument(op, ": input 0 ", dims_text(a), " and input 1 ", dims_text(b), " broadcast over ",
                                    merged, " dimensions that do not merge; GPU kernels index at most ", max_layout_rank);
  l.rank = merged;
  l.size = 1;
  for (int d = 0; d < merged; ++d) {
    // stored outermost first, as operand_offsets reads them
    l.dims[merged - 1 - d] = dims[d];
    l.strides[0][merged - 1 - d] = strides[0][d];
    l.strides[1][merged - 1 - d] = strides[1][d];
    l.size *= dims[d];
  }
  for (std::size_t k = 0; k < rank; ++k)
    if (out[k] == 0) l.size = 0;
  l.same_shape = merged == 0 || (merged == 1 && l.strides[0][0] == 1 && l.strides[1][0] == 1);
  return l;
}

status validate(const unary_params& p) {
  const std::string_view op = to_string(p.op);
  if (static_cast<int>(p.op) >= num_unary_ops)
    return errors::invalid_argument("unary: invalid op code ", static_cast<int>(p.op));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_elem(op, "the input", p.type));
  if (!accepts(p.op, p.type))
    return errors::invalid_argument(op, ": dtype ", to_string(p.type), " is not supported on the GPU (",
                                    p.op == unary_op::clip ? "numbers" : (p.op == unary_op::neg || p.op == unary_op::abs ||
                                    p.op == unary_op::square || p.op == unary_op::relu) ? "signed numbers" : "floating types",
                                    " only)");
  if (p.size < 0) return errors::invalid_argument(op, ": negative size ", static_cast<long long>(p.size));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_pointer(op, "the input", p.x, p.size));
  return check_pointer(op, "the output", p.y, p.size);
}

status validate(const binary_params& p) {
  if (static_cast<int>(p.op) >= num_binary_ops)
    return errors::invalid_argument("binary: invalid op code ", static_cast<int>(p.op));
  const std::string_view op = to_string(p.op);
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_elem(op, "the inputs", p.type));
  if (!accepts(p.op, p.type))
    return errors::invalid_argument(op, ": dtype ", to_string(p.type), " is not supported on the GPU (numbers only)");
  auto layout = broadcast_layout(op, p.a_dims, p.b_dims, p.out_dims);
  if (!layout.ok()) return layout.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_pointer(op, "input 0", p.a, layout->size));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_pointer(op, "input 1", p.b, layout->size));
  return check_pointer(op, "the output", p.out, layout->size);
}

status validate(const cast_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_elem("cast", "the input", p.from));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_elem("cast", "the target", p.to));
  if (p.size < 0) return errors::invalid_argument("cast: negative size ", static_cast<long long>(p.size));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_pointer("cast", "the input", p.x, p.size));
  return check_pointer("cast", "the output", p.y, p.size);
}

status unary(const stream& s, const unary_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, to_string(p.op)));
  return launched(kernels::launch_unary(static_cast<cudaStream_t>(s.native()), p.op, p.type, p.x, p.y, p.size, p.alpha,
                                        p.beta),
                  to_string(p.op), s);
}

status binary(const stream& s, const binary_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  auto layout = broadcast_layout(to_string(p.op), p.a_dims, p.b_dims, p.out_dims);
  if (!layout.ok()) return layout.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, to_string(p.op)));
  return launched(kernels::launch_binary(static_cast<cudaStream_t>(s.native()), p.op, p.type, p.a, p.b, p.out, *layout,
                                         p.error_word),
                  to_string(p.op), s);
}

status cast(const stream& s, const cast_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "cast"));
  return launched(kernels::launch_cast(static_cast<cudaStream_t>(s.native()), p.from, p.to, p.x, p.y, p.size), "cast", s);
}

status fill(const stream& s, elem type, void* y, std::int64_t size, double value) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_elem("fill", "the output", type));
  if (size < 0) return errors::invalid_argument("fill: negative size ", static_cast<long long>(size));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_pointer("fill", "the output", y, size));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "fill"));
  return launched(kernels::launch_fill(static_cast<cudaStream_t>(s.native()), type, y, size, value), "fill", s);
}

status read_error_bits(const stream& s, unsigned* error_word, std::string_view op) {
  if (error_word == nullptr) return errors::invalid_argument(op, ": read_error_bits was given a null error word");
  unsigned bits = 0;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(copy_async(s, &bits, error_word, sizeof bits, copy_kind::device_to_host));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(s.synchronize());
  if (bits == 0) return ok_status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set_async(s, error_word, 0, sizeof bits));
  typeflow::detail::text why;
  const auto add = [&](std::string_view part) {
    if (!why.view().empty()) why.append("; ");
    why.append(part);
  };
  if (bits & error_bits::division_by_zero) add("division by zero in input 1");
  if (bits & error_bits::negative_exponent) add("input 1 holds a negative exponent, but integer powers need exponents >= 0");
  if (bits & error_bits::index_out_of_range) add("an index in input 1 is outside the gathered axis");
  return errors::invalid_argument(op, ": ", why);
}

} // namespace typeflow::gpu
