// SPDX-License-Identifier: Apache-2.0
// Reductions, argmax and softmax. A reduction whose reduced elements are contiguous runs a warp per
// output element (a block when the rows are long), shuffling partial results; any other runs a
// thread per output element, whose neighbours read neighbouring addresses when the kept dimensions
// are innermost (the column case). f16 and bf16 accumulate in f32.
#include "reduction.cuh"

#include <limits>

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

constexpr unsigned full_mask = 0xffffffffu;

// __shfl_xor_sync has no 8-bit overloads: those travel as int.
template <class A>
__device__ __forceinline__ A shuffle_xor(A v, int lane_mask) {
  if constexpr (sizeof(A) < 4) return static_cast<A>(__shfl_xor_sync(full_mask, static_cast<int>(v), lane_mask));
  else return __shfl_xor_sync(full_mask, v, lane_mask);
}

template <reduce_op Op, class A>
__device__ __forceinline__ A identity() {
  if constexpr (Op == reduce_op::sum || Op == reduce_op::mean) return A(0);
  else if constexpr (Op == reduce_op::prod) return A(1);
  else if constexpr (Op == reduce_op::max) {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  } else {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
}

template <reduce_op Op, class A>
__device__ __forceinline__ A combine(A a, A b) {
  if constexpr (Op == reduce_op::sum || Op == reduce_op::mean || Op == reduce_op::prod) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(Op == reduce_op::prod ? static_cast<U>(static_cast<U>(a) * static_cast<U>(b))
                                                  : static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return Op == reduce_op::prod ? a * b : a + b;
    }
  } else {
    if constexpr (std::is_floating_point_v<A>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    if constexpr (Op == reduce_op::max) return a > b ? a : b;
    else return a < b ? a : b;
  }
}

template <reduce_op Op, class A>
__device__ __forceinline__ A finish(A acc, std::int64_t count) {
  if constexpr (Op == reduce_op::mean) {
    // The count in 64 bits: as A it could wrap (i8 over 129 elements) or be 0 (u8 over 256).
    if constexpr (std::is_integral_v<A>) return count == 0 ? A(0) : static_cast<A>(static_cast<std::int64_t>(acc) / count);
    else return acc / static_cast<A>(count);  // 0 / 0 is NaN over an empty extent
  } else {
    return acc;
  }
}

template <reduce_op Op, class A>
__device__ __forceinline__ A warp_reduce(A acc) {
  for (int lane_mask = 16; lane_mask > 0; lane_mask >>= 1) acc = combine<Op>(acc, shuffle_xor(acc, lane_mask));
  return acc;
}

__device__ __forceinline__ std::int64_t base_offset(const strided_layout<1>& kept, std::int64_t output) {
  std::int64_t offset[1];
  operand_offsets(kept, output, offset);
  return offset[0];
}

// A warp per output element; the reduced elements are contiguous.
template <reduce_op Op, class T>
__global__ void reduce_rows_warp(const T* x, T* y, reduction_layout l) {
  using A = compute_t<T>;
  const std::int64_t n = l.reduced.size;
  for_each_warp_row(l.kept.size, [&](std::int64_t row, int lane) {
    const T* p = x + base_offset(l.kept, row);
    A acc = identity<Op, A>();
    for (std::int64_t i = lane; i < n; i += 32) acc = combine<Op>(acc, static_cast<A>(p[i]));
    acc = warp_reduce<Op>(acc);
    if (lane == 0) y[row] = static_cast<T>(finish<Op>(acc, n));
  });
}

// A block per output element, for long contiguous rows.
template <reduce_op Op, class T>
__global__ void reduce_rows_block(const T* x, T* y, reduction_layout l) {
  using A = compute_t<T>;
  __shared__ A partial[32];
  const std::int64_t n = l.reduced.size;
  const int lane = static_cast<int>(threadIdx.x & 31u), warp = static_cast<int>(threadIdx.x >> 5);
  const int warps = static_cast<int>((blockDim.x + 31) >> 5);
  for (std::int64_t row = blockIdx.x; row < l.kept.size; row += gridDim.x) {
    const T* p = x + base_offset(l.kept, row);
    A acc = identity<Op, A>();
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = combine<Op>(acc, static_cast<A>(p[i]));
    acc = warp_reduce<Op>(acc);
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < warps ? partial[lane] : identity<Op, A>();
      acc = warp_reduce<Op>(acc);
      if (lane == 0) y[row] = static_cast<T>(finish<Op>(acc, n));
    }
    __syncthreads();  // partial is reused by the next row
  }
}

// A thread per output element, walking the reduced dimensions.
template <reduce_op Op, class T>
__global__ void reduce_strided(const T* x, T* y, reduction_layout l) {
  using A = compute_t<T>;
  const std::int64_t n = l.reduced.size;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < l.kept.size; o += stride) {
    const T* p = x + base_offset(l.kept, o);
    A acc = identity<Op, A>();
    if (l.reduced.rank == 1) {
      const std::int64_t step = l.reduced.strides[0][0];
      for (std::int64_t r = 0; r < n; ++r) acc = combine<Op>(acc, static_cast<A>(p[r * step]));
    } else {
      for (std::int64_t r = 0; r < n; ++r) {
        std::int64_t offset[1];
        operand_offsets(l.reduced, r, offset);
        acc = combine<Op>(acc, static_cast<A>(p[offset[0]]));
      }
    }
    y[o] = static_cast<T>(finish<Op>(acc, n));
  }
}

template <reduce_op Op, class T>
void run_reduce(cudaStream_t s, const void* xv, void* yv, const reduction_layout& l) {
  const auto* x = static_cast<const T*>(xv);
  auto* y = static_cast<T*>(yv);
  if (l.rows && l.reduced.size >= 4096) {
    const std::int64_t blocks = l.kept.size < 65536 ? l.kept.size : 65536;
    reduce_rows_block<Op, T><<<static_cast<unsigned>(blocks), block_size, 0, s>>>(x, y, l);
  } else if (l.rows) {
    reduce_rows_warp<Op, T><<<grid_for(l.kept.size * 32), block_size, 0, s>>>(x, y, l);
  } else {
    reduce_strided<Op, T><<<grid_for(l.kept.size), block_size, 0, s>>>(x, y, l);
  }
}

template <class T>
void run_reduce_op(reduce_op op, cudaStream_t s, const void* x, void* y, const reduction_layout& l) {
  switch (op) {
    case reduce_op::sum: return run_reduce<reduce_op::sum, T>(s, x, y, l);
    case reduce_op::mean: return run_reduce<reduce_op::mean, T>(s, x, y, l);
    case reduce_op::max: return run_reduce<reduce_op::max, T>(s, x, y, l);
    case reduce_op::min: return run_reduce<reduce_op::min, T>(s, x, y, l);
    case reduce_op::prod: return run_reduce<reduce_op::prod, T>(s, x, y, l);
  }
}

// --- argmax ---

// A thread per [outer, inner] output; the first (or last) index of the largest value, NaN never
// being larger (Eigen's tuple reducer, which the CPU kernel uses).
template <class T>
__global__ void argmax_kernel(const T* x, std::int64_t* y, std::int64_t outer, std::int64_t n, std::int64_t inner,
                              bool last) {
  using A = compute_t<T>;
  const std::int64_t outputs = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += stride) {
    const std::int64_t i = o % inner, q = o / inner;
    const T* p = x + q * n * inner + i;
    A best = std::numeric_limits<A>::lowest();
    std::int64_t index = last ? n - 1 : 0;
    for (std::int64_t r = 0; r < n; ++r) {
      const A v = static_cast<A>(p[r * inner]);
      if (last ? v >= best : v > best) {
        best = v;
        index = r;
      }
    }
    y[o] = index;
  }
}

// --- softmax ---

// A warp per row of a softmax along the last axis: max, then the sum of e^(x - max), then the output.
template <class T>
__global__ void softmax_rows(const T* x, T* y, std::int64_t rows, std::int64_t n, bool log) {
  using A = compute_t<T>;
  for_each_warp_row(rows, [&](std::int64_t row, int lane) {
    const T* p = x + row * n;
    T* q = y + row * n;
    A top = -std::numeric_limits<A>::infinity();
    for (std::int64_t i = lane; i < n; i += 32) top = combine<reduce_op::max>(top, static_cast<A>(p[i]));
    top = warp_reduce<reduce_op::max>(top);
    A sum = 0;
    for (std::int64_t i = lane; i < n; i += 32) sum += m_exp(static_cast<A>(p[i]) - top);
    sum = warp_reduce<reduce_op::sum>(sum);
    if (log) {
      const A log_sum = m_log(sum);
      for (std::int64_t i = lane; i < n; i += 32) q[i] = static_cast<T>(static_cast<A>(p[i]) - top - log_sum);
    } else {
      const A inverse = A(1) / sum;
      for (std::int64_t i = lane; i < n; i += 32) q[i] = static_cast<T>(m_exp(static_cast<A>(p[i]) - top) * inverse);
    }
  });
}

// A thread per [outer, inner] column of a softmax along a middle axis.
template <class T>
__global__ void softmax_columns(const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, bool log) {
  using A = compute_t<T>;
  const std::int64_t columns = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < columns; o += stride) {
    const std::int64_t i = o % inner, q0 = o / inner;
    const T* p = x + q0 * n * inner + i;
    T* q = y + q0 * n * inner + i;
    A top = -std::numeric_limits<A>::infinity();
    for (std::int64_t r = 0; r < n; ++r) top = combine<reduce_op::max>(top, static_cast<A>(p[r * inner]));
    A sum = 0;
    for (std::int64_t r = 0; r < n; ++r) sum += m_exp(static_cast<A>(p[r * inner]) - top);
    const A log_sum = m_log(sum), inverse = A(1) / sum;
    for (std::int64_t r = 0; r < n; ++r) {
      const A shifted = static_cast<A>(p[r * inner]) - top;
      q[r * inner] = static_cast<T>(log ? shifted - log_sum : m_exp(shifted) * inverse);
    }
  }
}

} // namespace

cudaError_t launch_reduce(cudaStream_t s, reduce_op op, elem type, const void* x, void* y, const reduction_layout& l) {
  if (l.kept.size == 0) return cudaSuccess;
  if (type == elem::boolean) return cudaErrorInvalidValue;  // validate() rejects it first
  visit_elem(type, [&](auto e) {
    if constexpr (decltype(e)::value != elem::boolean) run_reduce_op<storage_t<decltype(e)::value>>(op, s, x, y, l);
  });
  return cudaGetLastError();
}

cudaError_t launch_argmax(cudaStream_t s, elem type, const void* x, std::int64_t* y, std::int64_t outer,
                          std::int64_t n, std::int64_t inner, bool select_last_index) {
  if (outer * inner == 0) return cudaSuccess;
  if (type == elem::boolean) return cudaErrorInvalidValue;
  visit_elem(type, [&](auto e) {
    if constexpr (decltype(e)::value != elem::boolean) {
      using T = storage_t<decltype(e)::value>;
      argmax_kernel<T><<<grid_for(outer * inner), block_size, 0, s>>>(static_cast<const T*>(x), y, outer, n, inner,
                                                                      select_last_index);
    }
  });
  return cudaGetLastError();
}

cudaError_t launch_softmax(cudaStream_t s, elem type, const void* x, void* y, std::int64_t outer, std::int64_t n,
                           std::int64_t inner, bool log) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (!is_floating(type)) return cudaErrorInvalidValue;
  visit_elem(type, [&](auto e) {
    if constexpr (is_floating(decltype(e)::value)) {
      using T = storage_t<decltype(e)::value>;
      const auto* px = static_cast<const T*>(x);
      auto* py = static_cast<T*>(y);
      if (inner == 1) softmax_rows<T><<<grid_for(outer * 32), block_size, 0, s>>>(px, py, outer, n, log);
      else softmax_columns<T><<<grid_for(outer * inner), block_size, 0, s>>>(px, py, outer, n, inner, log);
    }
  });
  return cudaGetLastError();
}

} // namespace typeflow::gpu::kernels
