// SPDX-License-Identifier: Apache-2.0
// The host side of the elementwise kernels (include/typeflow/cuda/elementwise.hpp): parameter
// checks, the broadcast layout, and the launches (kernels/elementwise.cu).
#include <typeflow/cuda/elementwise.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>

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

namespace {

// "input 0 [4, 3] and input 1 [4]", "input 0 [2], input 1 [2, 1] and input 2 []"
template <std::size_t N>
typeflow::detail::text inputs_text(const std::array<dims_view, N>& in) {
  typeflow::detail::text t;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) t.append(i + 1 == N ? " and " : ", ");
    typeflow::detail::append(t, cat("input ", static_cast<long long>(i), " ", dims_text(in[i])));
  }
  return t;
}

// The layout of N operands broadcast to `out` (operand i reads in[i]).
template <int N>
result<strided_layout<N>> make_broadcast_layout(std::string_view op, const std::array<dims_view, N>& in, dims_view out) {
  std::size_t widest = 0;
  for (int i = 0; i < N; ++i) {
    auto n = elements(op, cat("input ", i).view(), in[i]);
    if (!n.ok()) return n.status();
    widest = std::max(widest, in[i].size());
  }
  auto n = elements(op, "the output", out);
  if (!n.ok()) return n.status();
  const std::size_t rank = out.size();
  if (rank != widest)
    return errors::invalid_argument(op, ": the output's shape ", dims_text(out), " is not the broadcast of ",
                                    inputs_text(in));
  // Right-aligned: dimension i of the output is dimension i - (rank - size) of an operand.
  const auto dim_of = [&](dims_view d, std::size_t i) -> std::int64_t {
    const std::size_t lead = rank - d.size();
    return i < lead ? 1 : d[i - lead];
  };
  for (std::size_t k = 0; k < rank; ++k) {
    std::int64_t want = 1;
    for (int i = 0; i < N; ++i) {
      const std::int64_t d = dim_of(in[i], k);
      if (d == 1) continue;
      if (want != 1 && d != want)
        return errors::invalid_argument(op, ": ", inputs_text(in), " do not broadcast (output dimension ",
                                        static_cast<long long>(k), ")");
      want = d;
    }
    if (out[k] != want)
      return errors::invalid_argument(op, ": ", inputs_text(in), " broadcast to a shape other than the output's ",
                                      dims_text(out), " (dimension ", static_cast<long long>(k), ")");
  }

  // Dimensions of the output, innermost first, with each operand's stride; size-1 output dimensions
  // are dropped, and a dimension merges into the one inside it when every operand steps through
  // both as one (contiguous across them, or broadcast along both).
  std::int64_t dims[64 + 1];
  std::int64_t strides[N][64 + 1];
  int merged = 0;
  std::int64_t running[N];  // each operand's row-major stride of the current dimension
  for (int i = 0; i < N; ++i) running[i] = 1;
  for (std::size_t k = rank; k-- > 0;) {
    const std::int64_t d = out[k];
    std::int64_t step[N];
    for (int i = 0; i < N; ++i) {
      const std::int64_t operand_dim = dim_of(in[i], k);
      step[i] = (operand_dim == 1 && d != 1) ? 0 : running[i];
      running[i] *= operand_dim;
    }
    if (d == 1) continue;
    if (merged > 0) {
      bool mergeable = true;
      for (int i = 0; i < N; ++i) {
        const std::int64_t inner = strides[i][merged - 1] * dims[merged - 1];
        mergeable = mergeable && ((step[i] == 0 && strides[i][merged - 1] == 0) || (step[i] != 0 && step[i] == inner));
      }
      if (mergeable) {
        dims[merged - 1] *= d;
        continue;
      }
    }
    if (merged == 64) return errors::invalid_argument(op, ": the output has more than 64 dimensions");
    dims[merged] = d;
    for (int i = 0; i < N; ++i) strides[i][merged] = step[i];
    ++merged;
  }
  if (merged > max_layout_rank)
    return errors::invalid_argument(op, ": ", inputs_text(in), " broadcast over ", merged,
                                    " dimensions that do not merge; GPU kernels index at most ", max_layout_rank);
  strided_layout<N> l;
  l.rank = merged;
  l.size = *n;
  bool unit = true;
  for (int d = 0; d < merged; ++d) {
    // stored outermost first, as operand_offsets reads them
    l.dims[merged - 1 - d] = dims[d];
    for (int i = 0; i < N; ++i) {
      l.strides[i][merged - 1 - d] = strides[i][d];
      unit = unit && strides[i][d] == 1;
    }
  }
  l.same_shape = merged == 0 || (merged == 1 && unit);
  return l;
}

} // namespace

result<strided_layout<2>> broadcast_layout(std::string_view op, dims_view a, dims_view b, dims_view out) {
  return make_broadcast_layout<2>(op, {a, b}, out);
}

result<strided_layout<3>> broadcast_layout(std::string_view op, dims_view a, dims_view b, dims_view c, dims_view out) {
  return make_broadcast_layout<3>(op, {a, b, c}, out);
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

namespace {

// Every check of a binary op, and its layout: validate() and binary() compute it once each.
result<strided_layout<2>> checked_layout(const binary_params& p) {
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
  TYPEFLOW_CUDA_RETURN_IF_ERROR(check_pointer(op, "the output", p.out, layout->size));
  return layout;
}

} // namespace

status validate(const binary_params& p) { return checked_layout(p).status(); }

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
  auto layout = checked_layout(p);
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
  // Cleared before the word's next user, which may launch on another stream.
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set_async(s, error_word, 0, sizeof bits));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(s.synchronize());
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
