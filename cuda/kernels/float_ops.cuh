// SPDX-License-Identifier: Apache-2.0
// The value of each elementwise op on float and double: one definition shared by the unfused kernels
// (elementwise.cu, through common.cuh) and the fused kernels NVRTC compiles at run time (fused.cpp
// puts this file's text in front of every generated kernel). So it is CUDA C++ that NVRTC compiles
// alone: no #include, no standard library, nothing but overloads on float and double.
// f16 and bf16 compute in float (the callers convert), so these are all the formulas there are.
#ifndef TYPEFLOW_CUDA_FLOAT_OPS_CUH
#define TYPEFLOW_CUDA_FLOAT_OPS_CUH

namespace typeflow_float_ops {

// The math functions of the compute type: f32 never goes through double.
#define TYPEFLOW_FLOAT_MATH(name)                                                   \
  __device__ __forceinline__ float m_##name(float x) { return ::name##f(x); }       \
  __device__ __forceinline__ double m_##name(double x) { return ::name(x); }
TYPEFLOW_FLOAT_MATH(exp)
TYPEFLOW_FLOAT_MATH(log)
TYPEFLOW_FLOAT_MATH(log1p)
TYPEFLOW_FLOAT_MATH(sqrt)
TYPEFLOW_FLOAT_MATH(rsqrt)
TYPEFLOW_FLOAT_MATH(tanh)
TYPEFLOW_FLOAT_MATH(erf)
TYPEFLOW_FLOAT_MATH(fabs)
#undef TYPEFLOW_FLOAT_MATH
__device__ __forceinline__ float m_pow(float x, float y) { return ::powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return ::pow(x, y); }

// Unary ops (ops/unary.hpp). alpha and beta are the op's attributes where it has them.
template <class C> __device__ __forceinline__ C neg(C x) { return -x; }
template <class C> __device__ __forceinline__ C abs(C x) { return m_fabs(x); }  // abs(-0) is +0
template <class C> __device__ __forceinline__ C square(C x) { return x * x; }
template <class C> __device__ __forceinline__ C relu(C x) { return x > C(0) ? x : (x != x ? x : C(0)); }
template <class C> __device__ __forceinline__ C clip(C x, C lower, C upper) {
  const C low = x < lower ? lower : x;
  return low > upper ? upper : low;
}
template <class C> __device__ __forceinline__ C exp(C x) { return m_exp(x); }
template <class C> __device__ __forceinline__ C log(C x) { return m_log(x); }
template <class C> __device__ __forceinline__ C sqrt(C x) { return m_sqrt(x); }
template <class C> __device__ __forceinline__ C rsqrt(C x) { return m_rsqrt(x); }
template <class C> __device__ __forceinline__ C tanh(C x) { return m_tanh(x); }
template <class C> __device__ __forceinline__ C sigmoid(C x) { return C(1) / (C(1) + m_exp(-x)); }
// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x
template <class C> __device__ __forceinline__ C softplus(C x) {
  return (x > C(0) ? x : C(0)) + m_log1p(m_exp(x > C(0) ? -x : x));
}
template <class C> __device__ __forceinline__ C erf(C x) { return m_erf(x); }
// 0.5 x (1 + erf(x / sqrt 2))
template <class C> __device__ __forceinline__ C gelu(C x) { return C(0.5) * x * (C(1) + m_erf(x * C(0.70710678118654752440))); }
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <class C> __device__ __forceinline__ C gelu_tanh(C x) {
  const C inner = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
  return C(0.5) * x * (C(1) + m_tanh(inner));
}
template <class C> __device__ __forceinline__ C leaky_relu(C x, C alpha) { return x < C(0) ? alpha * x : x; }
template <class C> __device__ __forceinline__ C hard_sigmoid(C x, C alpha, C beta) {
  const C v = alpha * x + beta;
  return v < C(0) ? C(0) : (v > C(1) ? C(1) : v);
}

// Binary ops (ops/binary.hpp). maximum and minimum give NaN when either operand is NaN.
template <class C> __device__ __forceinline__ C add(C a, C b) { return a + b; }
template <class C> __device__ __forceinline__ C sub(C a, C b) { return a - b; }
template <class C> __device__ __forceinline__ C mul(C a, C b) { return a * b; }
template <class C> __device__ __forceinline__ C div(C a, C b) { return a / b; }
template <class C> __device__ __forceinline__ C maximum(C a, C b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <class C> __device__ __forceinline__ C minimum(C a, C b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <class C> __device__ __forceinline__ C pow(C a, C b) { return m_pow(a, b); }

// f16 and bf16 as their bits (NVRTC compiles these without cuda_fp16.h): to float exactly, and from
// float rounded to nearest, ties to even, NaN kept a NaN.
__device__ __forceinline__ float from_f16(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float from_bf16(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
__device__ __forceinline__ unsigned short to_bf16(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace typeflow_float_ops

#endif  // TYPEFLOW_CUDA_FLOAT_OPS_CUH
