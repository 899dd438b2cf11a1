// SPDX-License-Identifier: Apache-2.0
// What every kernel file of libtypeflow_cuda shares: the C++ type of each elem, the type it computes
// in, conversions with ops::cast's rules, launch geometry, and a dispatch over elem values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include <typeflow/cuda/api.hpp>

#include "float_ops.cuh"

namespace typeflow::gpu::kernels {

template <elem E> struct storage;
template <> struct storage<elem::f16> { using type = __half; };
template <> struct storage<elem::bf16> { using type = __nv_bfloat16; };
template <> struct storage<elem::f32> { using type = float; };
template <> struct storage<elem::f64> { using type = double; };
template <> struct storage<elem::i8> { using type = std::int8_t; };
template <> struct storage<elem::i32> { using type = std::int32_t; };
template <> struct storage<elem::i64> { using type = std::int64_t; };
template <> struct storage<elem::u8> { using type = std::uint8_t; };
template <> struct storage<elem::boolean> { using type = bool; };
template <elem E> using storage_t = typename storage<E>::type;

// The type arithmetic happens in: f16 and bf16 compute in float.
template <class T> struct compute { using type = T; };
template <> struct compute<__half> { using type = float; };
template <> struct compute<__nv_bfloat16> { using type = float; };
template <class T> using compute_t = typename compute<T>::type;

template <class T>
__device__ __forceinline__ compute_t<T> load(const T* p, std::int64_t i) {
  return static_cast<compute_t<T>>(p[i]);
}

// One value converted as ops::cast does: floats to integers truncate toward zero and saturate, NaN
// becomes 0; integers to narrower integers wrap; anything to bool is x != 0.
template <class To, class From>
__host__ __device__ __forceinline__ To convert(From x) {
  using F = compute_t<From>;
  const F v = static_cast<F>(x);
  if constexpr (std::is_same_v<To, bool>) {
    return v != F(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<F>) {
    const double d = static_cast<double>(v);
    if (d != d) return To(0);
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else if constexpr (std::is_same_v<To, __half> || std::is_same_v<To, __nv_bfloat16>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// The math functions of the compute type (f32 never goes through double), from the formulas the fused
// kernels share.
using typeflow_float_ops::m_erf;
using typeflow_float_ops::m_exp;
using typeflow_float_ops::m_log;
using typeflow_float_ops::m_log1p;
using typeflow_float_ops::m_pow;
using typeflow_float_ops::m_rsqrt;
using typeflow_float_ops::m_sqrt;
using typeflow_float_ops::m_tanh;

inline constexpr int block_size = 256;

// A warp per row: calls f(row, lane) for every row of [0, rows) that this thread's warp owns, the 32
// lanes of a warp on one row together (so full-mask shuffles inside f are safe). Launch with
// grid_for(rows * 32) blocks.
template <class F>
__device__ __forceinline__ void for_each_warp_row(std::int64_t rows, F&& f) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const std::int64_t warps = (static_cast<std::int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows;
       row += warps)
    f(row, lane);
}

// The sum over the 32 lanes of a warp, in every lane.
template <class A>
__device__ __forceinline__ A warp_sum(A v) {
  for (int lane_mask = 16; lane_mask > 0; lane_mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
  return v;
}

// Blocks for `size` elements with a grid-stride loop: enough to fill any current GPU, few enough
// that a block does several elements when the tensor is large.
inline unsigned grid_for(std::int64_t size) {
  const std::int64_t blocks = (size + block_size - 1) / block_size;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

// Calls f(std::integral_constant<elem, E>{}) for the runtime value e.
template <class F>
decltype(auto) visit_elem(elem e, F&& f) {
  switch (e) {
    case elem::f16: return f(std::integral_constant<elem, elem::f16>{});
    case elem::bf16: return f(std::integral_constant<elem, elem::bf16>{});
    case elem::f32: return f(std::integral_constant<elem, elem::f32>{});
    case elem::f64: return f(std::integral_constant<elem, elem::f64>{});
    case elem::i8: return f(std::integral_constant<elem, elem::i8>{});
    case elem::i32: return f(std::integral_constant<elem, elem::i32>{});
    case elem::i64: return f(std::integral_constant<elem, elem::i64>{});
    case elem::u8: return f(std::integral_constant<elem, elem::u8>{});
    case elem::boolean: break;
  }
  return f(std::integral_constant<elem, elem::boolean>{});
}

} // namespace typeflow::gpu::kernels
