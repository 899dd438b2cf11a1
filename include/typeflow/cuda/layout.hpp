// SPDX-License-Identifier: Apache-2.0
// strided_layout: how an elementwise kernel of libtypeflow_cuda finds, for each element of its output,
// the element of each operand it reads (NumPy broadcasting). The host builds it (elementwise.hpp) and
// the kernel decomposes each output index with it; both sides use the functions below, so the host
// tests check the same index arithmetic the GPU runs.
#pragma once

#include <cstdint>

#include <typeflow/cuda/api.hpp>

namespace typeflow::gpu {

// Dimensions a kernel indexes after merging (a tensor of higher rank is fine as long as its
// dimensions merge down to this many).
inline constexpr int max_layout_rank = 8;

template <int Operands>
struct strided_layout {
  int rank = 0;  // 0: one element
  std::int64_t size = 1;  // elements of the output (the product of dims)
  std::int64_t dims[max_layout_rank] = {};
  // Elements to step in operand i for one step along dimension d; 0 where i is broadcast along d.
  std::int64_t strides[Operands][max_layout_rank] = {};
  // Every operand has the output's shape, so element k of the output reads element k of each.
  bool same_shape = false;
};

// How a reduction walks its input: for each output element, the offset of its first input element
// (the kept dimensions), and for each reduced element, its offset from there (the reduced
// dimensions). Adjacent dimensions of the same kind are merged, so [a, b, c] reduced over axes
// (1, 2) is one kept dimension of a and one reduced dimension of b * c.
struct reduction_layout {
  strided_layout<1> kept;
  strided_layout<1> reduced;
  // The reduced elements of each output element are contiguous (one reduced dimension, stride 1).
  bool rows = false;
};

// The offset in each operand of output element `index` (row-major: the last dimension varies fastest).
template <int Operands, class Index>
TYPEFLOW_HOST_DEVICE constexpr void operand_offsets(const strided_layout<Operands>& l, Index index,
                                                    Index (&offsets)[Operands]) {
  for (int i = 0; i < Operands; ++i) offsets[i] = 0;
  for (int d = l.rank - 1; d >= 0; --d) {
    const Index dim = static_cast<Index>(l.dims[d]);
    const Index coordinate = index % dim;
    index /= dim;
    for (int i = 0; i < Operands; ++i) offsets[i] += coordinate * static_cast<Index>(l.strides[i][d]);
  }
}

// ops::pad_mode's values, in its order.
enum class pad_mode : std::uint8_t { constant, reflect, symmetric, edge };

inline constexpr int max_pad_rank = 8;

struct pad_layout {
  int rank = 0;
  std::int64_t size = 1;  // elements of the output
  std::int64_t out_dims[max_pad_rank] = {};
  std::int64_t in_dims[max_pad_rank] = {};
  std::int64_t before[max_pad_rank] = {};
  pad_mode mode = pad_mode::constant;
};

// The input element (row-major offset) output element `index` copies, or -1 for the constant.
// Reflect pads at most d - 1 and symmetric at most d on a side (ops::pad checks), so one reflection
// reaches the input.
TYPEFLOW_HOST_DEVICE constexpr std::int64_t pad_source(const pad_layout& l, std::int64_t index) {
  std::int64_t offset = 0, stride = 1;
  for (int k = l.rank - 1; k >= 0; --k) {
    const std::int64_t d = l.in_dims[k];
    std::int64_t c = index % l.out_dims[k] - l.before[k];
    index /= l.out_dims[k];
    if (c < 0 || c >= d) {
      switch (l.mode) {
        case pad_mode::constant: return -1;
        case pad_mode::reflect: c = c < 0 ? -c : 2 * (d - 1) - c; break;
        case pad_mode::symmetric: c = c < 0 ? -c - 1 : 2 * d - 1 - c; break;
        case pad_mode::edge: c = c < 0 ? 0 : d - 1; break;
      }
    }
    offset += c * stride;
    stride *= d;
  }
  return offset;
}

} // namespace typeflow::gpu
