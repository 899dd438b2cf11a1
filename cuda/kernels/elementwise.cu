// SPDX-License-Identifier: Apache-2.0
// Elementwise kernels: unary ops, binary ops with broadcasting, cast, fill. One kernel per (op, dtype),
// chosen on the host through tables built at compile time (only the pairs an op accepts exist).
#include "elementwise.cuh"

#include <array>
#include <utility>

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

// Integer arithmetic that wraps instead of overflowing (signed overflow is undefined in C++).
template <class C, class F>
__device__ __forceinline__ C wrapping(C a, C b, F f) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(f(static_cast<U>(a), static_cast<U>(b))));
}

// The formulas are float_ops.cuh's, which the fused kernels compile as well; integers wrap where a
// float formula would overflow.
template <unary_op Op, class C>
__device__ __forceinline__ C unary_value(C x, C alpha, C beta) {
  namespace f = typeflow_float_ops;
  constexpr bool integral = std::is_integral_v<C>;
  if constexpr (Op == unary_op::neg) {
    if constexpr (integral) return wrapping(C(0), x, [](auto a, auto b) { return a - b; });
    else return f::neg(x);
  } else if constexpr (Op == unary_op::abs) {
    if constexpr (integral) return x < C(0) ? wrapping(C(0), x, [](auto a, auto b) { return a - b; }) : x;
    else return f::abs(x);
  } else if constexpr (Op == unary_op::square) {
    if constexpr (integral) return wrapping(x, x, [](auto a, auto b) { return a * b; });
    else return f::square(x);
  } else if constexpr (Op == unary_op::relu) {
    return f::relu(x);
  } else if constexpr (Op == unary_op::clip) {
    return f::clip(x, alpha, beta);
  } else if constexpr (integral) {
    return x;  // not reached: the other ops take floats only (accepts in ops.hpp)
  } else if constexpr (Op == unary_op::exp) {
    return f::exp(x);
  } else if constexpr (Op == unary_op::log) {
    return f::log(x);
  } else if constexpr (Op == unary_op::sqrt) {
    return f::sqrt(x);
  } else if constexpr (Op == unary_op::rsqrt) {
    return f::rsqrt(x);
  } else if constexpr (Op == unary_op::tanh) {
    return f::tanh(x);
  } else if constexpr (Op == unary_op::sigmoid) {
    return f::sigmoid(x);
  } else if constexpr (Op == unary_op::softplus) {
    return f::softplus(x);
  } else if constexpr (Op == unary_op::erf) {
    return f::erf(x);
  } else if constexpr (Op == unary_op::gelu) {
    return f::gelu(x);
  } else if constexpr (Op == unary_op::gelu_tanh) {
    return f::gelu_tanh(x);
  } else if constexpr (Op == unary_op::leaky_relu) {
    return f::leaky_relu(x, alpha);
  } else if constexpr (Op == unary_op::hard_sigmoid) {
    return f::hard_sigmoid(x, alpha, beta);
  }
}

template <unary_op Op, class T>
__global__ void unary_kernel(const T* x, T* y, std::int64_t size, compute_t<T> alpha, compute_t<T> beta) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    y[i] = static_cast<T>(unary_value<Op>(load(x, i), alpha, beta));
}

using unary_launcher = void (*)(cudaStream_t, const void*, void*, std::int64_t, double, double);

// An attribute as the compute type. Integer clip bounds follow the CPU kernel: a bound outside the
// dtype's range (or NaN) clips nothing, so it becomes the dtype's lowest or largest value (a plain
// conversion of such a double would be undefined).
template <class C>
C attribute_value(double v, bool lower) {
  if constexpr (std::is_integral_v<C>) {
    if (v != v) return lower ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    return convert<C>(v);  // saturates
  } else {
    return static_cast<C>(v);
  }
}

template <unary_op Op, elem E>
void run_unary(cudaStream_t s, const void* x, void* y, std::int64_t size, double alpha, double beta) {
  using T = storage_t<E>;
  using C = compute_t<T>;
  unary_kernel<Op, T><<<grid_for(size), block_size, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), size,
                                                             attribute_value<C>(alpha, true),
                                                             attribute_value<C>(beta, false));
}

template <unary_op Op, elem E>
constexpr unary_launcher unary_entry() {
  if constexpr (accepts(Op, E)) return &run_unary<Op, E>;
  else return nullptr;
}

template <elem E, std::size_t... I>
constexpr std::array<unary_launcher, num_unary_ops> unary_row(std::index_sequence<I...>) {
  return {unary_entry<static_cast<unary_op>(I), E>()...};
}

template <std::size_t... E>
constexpr std::array<std::array<unary_launcher, num_unary_ops>, num_elems> unary_table(std::index_sequence<E...>) {
  return {unary_row<static_cast<elem>(E)>(std::make_index_sequence<num_unary_ops>())...};
}

constexpr auto unary_launchers = unary_table(std::make_index_sequence<num_elems>());

// --- binary ---

template <binary_op Op, class C>
__device__ __forceinline__ auto binary_value(C a, C b, unsigned* error_word) {
  constexpr bool integral = std::is_integral_v<C>;
  namespace f = typeflow_float_ops;
  if constexpr (Op == binary_op::add) {
    if constexpr (integral) return wrapping(a, b, [](auto x, auto y) { return x + y; });
    else return f::add(a, b);
  } else if constexpr (Op == binary_op::sub) {
    if constexpr (integral) return wrapping(a, b, [](auto x, auto y) { return x - y; });
    else return f::sub(a, b);
  } else if constexpr (Op == binary_op::mul) {
    if constexpr (integral) return wrapping(a, b, [](auto x, auto y) { return x * y; });
    else return f::mul(a, b);
  } else if constexpr (Op == binary_op::div) {
    if constexpr (integral) {
      if (b == C(0)) {
        if (error_word != nullptr) atomicOr(error_word, error_bits::division_by_zero);
        return C(0);
      }
      if constexpr (std::is_signed_v<C>) {
        if (a == std::numeric_limits<C>::lowest() && b == C(-1)) return a;  // wraps to itself
      }
      return static_cast<C>(a / b);
    } else {
      return f::div(a, b);
    }
  } else if constexpr (Op == binary_op::maximum) {
    return f::maximum(a, b);  // integers are never NaN: a plain maximum
  } else if constexpr (Op == binary_op::minimum) {
    return f::minimum(a, b);
  } else if constexpr (Op == binary_op::pow) {
    if constexpr (integral) {
      if constexpr (std::is_signed_v<C>) {
        if (b < C(0)) {
          if (error_word != nullptr) atomicOr(error_word, error_bits::negative_exponent);
          return C(0);
        }
      }
      using U = std::make_unsigned_t<C>;
      U result = 1, base = static_cast<U>(a);
      for (auto e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1u) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<C>(result);
    } else {
      return f::pow(a, b);
    }
  } else if constexpr (Op == binary_op::equal) {
    return a == b;
  } else if constexpr (Op == binary_op::less) {
    return a < b;
  } else {
    static_assert(Op == binary_op::greater);
    return a > b;
  }
}

template <binary_op Op, class T>
using binary_out_t = std::conditional_t<is_comparison(Op), bool, T>;

template <binary_op Op, class T>
__global__ void binary_same_shape(const T* a, const T* b, binary_out_t<Op, T>* out, std::int64_t size,
                                  unsigned* error_word) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    out[i] = static_cast<binary_out_t<Op, T>>(binary_value<Op>(load(a, i), load(b, i), error_word));
}

// Index: unsigned 32-bit when the output has at most 2^31 elements (its division is several times
// cheaper than a 64-bit one), std::int64_t otherwise.
template <binary_op Op, class T, class Index>
__global__ void binary_broadcast(const T* a, const T* b, binary_out_t<Op, T>* out, strided_layout<2> layout,
                                 unsigned* error_word) {
  const Index size = static_cast<Index>(layout.size);
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride) {
    Index offsets[2];
    operand_offsets(layout, i, offsets);
    out[i] = static_cast<binary_out_t<Op, T>>(
        binary_value<Op>(load(a, static_cast<std::int64_t>(offsets[0])), load(b, static_cast<std::int64_t>(offsets[1])),
                         error_word));
  }
}

using binary_launcher = void (*)(cudaStream_t, const void*, const void*, void*, const strided_layout<2>&, unsigned*);

template <binary_op Op, elem E>
void run_binary(cudaStream_t s, const void* a, const void* b, void* out, const strided_layout<2>& layout,
                unsigned* error_word) {
  using T = storage_t<E>;
  using Out = binary_out_t<Op, T>;
  const auto* pa = static_cast<const T*>(a);
  const auto* pb = static_cast<const T*>(b);
  auto* po = static_cast<Out*>(out);
  const unsigned grid = grid_for(layout.size);
  if (layout.same_shape)
    binary_same_shape<Op, T><<<grid, block_size, 0, s>>>(pa, pb, po, layout.size, error_word);
  else if (layout.size <= (std::int64_t{1} << 31))
    binary_broadcast<Op, T, std::uint32_t><<<grid, block_size, 0, s>>>(pa, pb, po, layout, error_word);
  else
    binary_broadcast<Op, T, std::int64_t><<<grid, block_size, 0, s>>>(pa, pb, po, layout, error_word);
}

template <binary_op Op, elem E>
constexpr binary_launcher binary_entry() {
  if constexpr (accepts(Op, E)) return &run_binary<Op, E>;
  else return nullptr;
}

template <elem E, std::size_t... I>
constexpr std::array<binary_launcher, num_binary_ops> binary_row(std::index_sequence<I...>) {
  return {binary_entry<static_cast<binary_op>(I), E>()...};
}

template <std::size_t... E>
constexpr std::array<std::array<binary_launcher, num_binary_ops>, num_elems> binary_table(std::index_sequence<E...>) {
  return {binary_row<static_cast<elem>(E)>(std::make_index_sequence<num_binary_ops>())...};
}

constexpr auto binary_launchers = binary_table(std::make_index_sequence<num_elems>());

// --- cast, fill ---

template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, std::int64_t size) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    y[i] = convert<To>(x[i]);
}

template <class T>
__global__ void fill_kernel(T* y, std::int64_t size, T value) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    y[i] = value;
}

} // namespace

cudaError_t launch_unary(cudaStream_t s, unary_op op, elem type, const void* x, void* y, std::int64_t size,
                         double alpha, double beta) {
  const unary_launcher run = unary_launchers[static_cast<int>(type)][static_cast<int>(op)];
  if (run == nullptr) return cudaErrorInvalidValue;  // validate() rejects this first
  if (size == 0) return cudaSuccess;
  run(s, x, y, size, alpha, beta);
  return cudaGetLastError();
}

cudaError_t launch_binary(cudaStream_t s, binary_op op, elem type, const void* a, const void* b, void* out,
                          const strided_layout<2>& layout, unsigned* error_word) {
  const binary_launcher run = binary_launchers[static_cast<int>(type)][static_cast<int>(op)];
  if (run == nullptr) return cudaErrorInvalidValue;
  if (layout.size == 0) return cudaSuccess;
  run(s, a, b, out, layout, error_word);
  return cudaGetLastError();
}

cudaError_t launch_cast(cudaStream_t s, elem from, elem to, const void* x, void* y, std::int64_t size) {
  if (size == 0) return cudaSuccess;
  visit_elem(from, [&](auto f) {
    visit_elem(to, [&](auto t) {
      using From = storage_t<decltype(f)::value>;
      using To = storage_t<decltype(t)::value>;
      cast_kernel<From, To><<<grid_for(size), block_size, 0, s>>>(static_cast<const From*>(x), static_cast<To*>(y), size);
    });
  });
  return cudaGetLastError();
}

cudaError_t launch_fill(cudaStream_t s, elem type, void* y, std::int64_t size, double value) {
  if (size == 0) return cudaSuccess;
  visit_elem(type, [&](auto e) {
    using T = storage_t<decltype(e)::value>;
    fill_kernel<T><<<grid_for(size), block_size, 0, s>>>(static_cast<T*>(y), size, convert<T>(value));
  });
  return cudaGetLastError();
}

} // namespace typeflow::gpu::kernels
