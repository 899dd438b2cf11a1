// SPDX-License-Identifier: Apache-2.0
// NumPy broadcasting for elementwise kernels with any number of inputs: the output and the
// inputs described on the fewest dimensions that still express the broadcast, both as Eigen
// broadcast factors (for TensorMap(...).broadcast(...)) and as strides that are 0 where an input
// is broadcast (for hand-written loops).
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow::cpu_kernels::detail {

// How N inputs broadcast to an output, collapsed. Inputs are aligned to the output's rank from
// the right (missing leading dimensions are 1). Output dimensions of size 1 are dropped, and
// adjacent dimensions are merged when every input treats them alike (has both, or broadcasts
// both), so the collapsed rank is usually 1 to 3 whatever the original ranks:
//   [8, 5, 3] + [3]          -> rank 2: output [40, 3], input 0 [40, 3], input 1 [1, 3]
//   [2, 1, 5] + [7, 1]       -> rank 3: output [2, 7, 5], input 0 [2, 1, 5], input 1 [1, 7, 1]
//   [4, 6] + [4, 6], [] + [9] -> rank 1 (flat; a scalar input has dims [1])
// The collapsed rank is at least 1: a scalar output is [1]. Input k reads element
// sum(coord[d] * strides[k][d]) for output coordinate coord, so input data is used in place.
template <std::size_t N>
struct broadcast_layout {
  std::size_t rank = 1;
  std::array<std::int64_t, max_rank> out_dims{};
  // Per input, in the collapsed dimensions: its size (1 where broadcast), the Eigen broadcast
  // factor (out_dims / in_dims: 1 where not broadcast), and its row-major stride in elements
  // (0 where broadcast).
  std::array<std::array<std::int64_t, max_rank>, N> in_dims{};
  std::array<std::array<std::int64_t, max_rank>, N> factors{};
  std::array<std::array<std::int64_t, max_rank>, N> strides{};

  std::int64_t num_elements() const noexcept {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) n *= out_dims[d];
    return n;
  }
  // True when input k is read in output order, one element per output element.
  bool is_dense(std::size_t k) const noexcept {
    for (std::size_t d = 0; d < rank; ++d)
      if (in_dims[k][d] != out_dims[d]) return false;
    return true;
  }
  // True when input k has one element, used for every output element.
  bool is_single(std::size_t k) const noexcept {
    for (std::size_t d = 0; d < rank; ++d)
      if (in_dims[k][d] != 1) return false;
    return true;
  }

  // The collapsed dimensions as Eigen index arrays of a rank chosen at compile time; when
  // Rank > rank, leading dimensions of 1 (broadcast factor 1) pad them, so that one Eigen
  // instantiation serves every smaller rank. Precondition: Rank >= rank.
  template <int Rank>
  Eigen::array<Eigen::Index, Rank> eigen_out_dims() const { return to_eigen<Rank>(out_dims); }
  template <int Rank>
  Eigen::array<Eigen::Index, Rank> eigen_in_dims(std::size_t k) const { return to_eigen<Rank>(in_dims[k]); }
  template <int Rank>
  Eigen::array<Eigen::Index, Rank> eigen_factors(std::size_t k) const { return to_eigen<Rank>(factors[k]); }

  // Calls f(i, offsets) for output elements i in [first, last) in row-major order, where
  // offsets[k] is the element of input k that output element i reads. Walks the innermost
  // dimension with additions only (no division per element), so it suits the blocks of
  // parallel_for. Precondition: 0 <= first <= last <= num_elements().
  template <class F>
  void for_each_offset(std::int64_t first, std::int64_t last, F&& f) const {
    if (first >= last) return;
    std::array<std::int64_t, max_rank> coord{};
    std::array<std::int64_t, N> offset{};
    locate(first, rank, coord, offset);
    const std::size_t inner = rank - 1;
    for (std::int64_t i = first; i < last;) {
      const std::int64_t run = std::min(last - i, out_dims[inner] - coord[inner]);
      for (std::int64_t j = 0; j < run; ++j, ++i) {
        f(i, std::as_const(offset));
        for (std::size_t k = 0; k < N; ++k) offset[k] += strides[k][inner];
      }
      coord[inner] += run;
      // Carry into the outer dimensions, like an odometer.
      for (std::size_t d = inner; d > 0 && coord[d] == out_dims[d]; --d) {
        for (std::size_t k = 0; k < N; ++k) offset[k] += strides[k][d - 1] - coord[d] * strides[k][d];
        coord[d] = 0;
        ++coord[d - 1];
      }
    }
  }

  // Calls f(row, offsets) for rows [first, last) of the output, a row being its innermost
  // collapsed dimension (out_dims[rank - 1] elements, starting at element row * that), where
  // offsets[k] is the element of input k that the row's first element reads; along the row,
  // input k advances by strides[k][rank - 1] (1, or 0 where it broadcasts). Precondition:
  // 0 <= first <= last <= num_elements() / out_dims[rank - 1].
  template <class F>
  void for_each_row(std::int64_t first, std::int64_t last, F&& f) const {
    if (first >= last) return;
    const std::size_t outer = rank - 1;  // the dimensions that number the rows
    std::array<std::int64_t, max_rank> coord{};
    std::array<std::int64_t, N> offset{};
    locate(first, outer, coord, offset);
    for (std::int64_t row = first; row < last; ++row) {
      f(row, std::as_const(offset));
      // The next row, like an odometer over the outer dimensions.
      for (std::size_t d = outer; d-- > 0;) {
        for (std::size_t k = 0; k < N; ++k) offset[k] += strides[k][d];
        if (++coord[d] < out_dims[d] || d == 0) break;
        for (std::size_t k = 0; k < N; ++k) offset[k] -= coord[d] * strides[k][d];
        coord[d] = 0;
      }
    }
  }

 private:
  // The coordinates of element `index` of the first `dims` collapsed dimensions (row-major), and
  // the offsets into each input they give.
  void locate(std::int64_t index, std::size_t dims, std::array<std::int64_t, max_rank>& coord,
              std::array<std::int64_t, N>& offset) const {
    for (std::size_t d = dims; d-- > 0;) {
      coord[d] = index % out_dims[d];
      index /= out_dims[d];
      for (std::size_t k = 0; k < N; ++k) offset[k] += coord[d] * strides[k][d];
    }
  }

  template <int Rank>
  Eigen::array<Eigen::Index, Rank> to_eigen(const std::array<std::int64_t, max_rank>& dims) const {
    assert(static_cast<std::size_t>(Rank) >= rank);
    const std::size_t pad = static_cast<std::size_t>(Rank) - rank;
    Eigen::array<Eigen::Index, Rank> out{};
    for (std::size_t d = 0; d < static_cast<std::size_t>(Rank); ++d)
      out[d] = d < pad ? 1 : static_cast<Eigen::Index>(dims[d - pad]);
    return out;
  }
};

// The collapsed layout of `inputs` broadcast to `out`. Preconditions (what shape inference
// guarantees): out is fully defined, and each input broadcasts to it (rank <= out's rank, each
// dimension equal to out's or 1). Empty outputs are allowed (a 0 dimension is kept); callers
// usually skip them before asking.
template <std::size_t N>
broadcast_layout<N> make_broadcast_layout(const std::array<shape, N>& inputs, const shape& out) {
  broadcast_layout<N> l;
  l.rank = 0;
  const std::size_t r = out.rank();
  // Whether input k has (true) or broadcasts (false) the dimension last kept.
  std::array<bool, N> previous_has{};
  for (std::size_t d = 0; d < r; ++d) {
    const std::int64_t n = out[d];
    if (n == 1) continue;  // every input has 1 there: no effect on the layout
    std::array<bool, N> has{};
    for (std::size_t k = 0; k < N; ++k) {
      const shape& s = inputs[k];
      assert(s.rank() <= r);
      const std::size_t lead = r - s.rank();
      const std::int64_t m = d < lead ? 1 : s[d - lead];
      assert(m == n || m == 1);
      has[k] = m == n;
    }
    if (l.rank > 0 && has == previous_has) {
      l.out_dims[l.rank - 1] *= n;
      for (std::size_t k = 0; k < N; ++k)
        if (has[k]) l.in_dims[k][l.rank - 1] *= n;
    } else {
      l.out_dims[l.rank] = n;
      for (std::size_t k = 0; k < N; ++k) l.in_dims[k][l.rank] = has[k] ? n : 1;
      ++l.rank;
      previous_has = has;
    }
  }
  if (l.rank == 0) {  // a scalar, or only dimensions of 1: one element
    l.rank = 1;
    l.out_dims[0] = 1;
    for (std::size_t k = 0; k < N; ++k) l.in_dims[k][0] = 1;
  }
  for (std::size_t k = 0; k < N; ++k) {
    std::int64_t stride = 1;
    for (std::size_t d = l.rank; d-- > 0;) {
      const bool broadcast = l.in_dims[k][d] != l.out_dims[d];
      l.factors[k][d] = broadcast ? l.out_dims[d] : 1;
      l.strides[k][d] = broadcast ? 0 : stride;
      stride *= l.in_dims[k][d];
    }
  }
  return l;
}

} // namespace typeflow::cpu_kernels::detail
