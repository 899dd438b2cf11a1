// SPDX-License-Identifier: Apache-2.0
// The op codes of libtypeflow_cuda's own kernels. The ops, their dtypes and their semantics are those
// of ops/unary.hpp and ops/binary.hpp; f16 and bf16 compute in f32 and round once.
#pragma once

#include <cstdint>
#include <string_view>

#include <typeflow/cuda/api.hpp>

namespace typeflow::gpu {

enum class unary_op : std::uint8_t {
  neg, abs, exp, log, sqrt, rsqrt, square, tanh, sigmoid, relu, softplus, erf,
  gelu,          // 0.5 x (1 + erf(x / sqrt 2))
  gelu_tanh,     // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  leaky_relu,    // x < 0 ? alpha x : x
  hard_sigmoid,  // max(0, min(1, alpha x + beta))
  clip,          // min(max(x, alpha), beta)
};
inline constexpr int num_unary_ops = 17;

constexpr std::string_view to_string(unary_op op) noexcept {
  constexpr std::string_view names[num_unary_ops] = {
      "neg", "abs", "exp", "log", "sqrt", "rsqrt", "square", "tanh", "sigmoid", "relu", "softplus", "erf",
      "gelu", "gelu_tanh", "leaky_relu", "hard_sigmoid", "clip"};
  return static_cast<int>(op) < num_unary_ops ? names[static_cast<int>(op)] : std::string_view("invalid");
}

// The dtypes each unary op takes (as ops/unary.hpp): the float-only ops take f16, bf16, f32, f64;
// neg, abs, square and relu the signed numbers as well; clip every number.
constexpr bool accepts(unary_op op, elem e) noexcept {
  switch (op) {
    case unary_op::neg: case unary_op::abs: case unary_op::square: case unary_op::relu:
      return is_floating(e) || e == elem::i8 || e == elem::i32 || e == elem::i64;
    case unary_op::clip:
      return is_floating(e) || is_integer(e);
    default:
      return is_floating(e);
  }
}

enum class binary_op : std::uint8_t {
  add, sub, mul,  // integers wrap
  div,            // integers truncate; a zero divisor sets error_bits::division_by_zero
  maximum,        // nan when either is nan
  minimum,
  pow,            // integers: exact, wrapping; a negative exponent sets error_bits::negative_exponent
  equal, less, greater,  // output bool
};
inline constexpr int num_binary_ops = 10;

constexpr std::string_view to_string(binary_op op) noexcept {
  constexpr std::string_view names[num_binary_ops] = {"add", "sub", "mul", "div", "maximum",
                                                      "minimum", "pow", "equal", "less", "greater"};
  return static_cast<int>(op) < num_binary_ops ? names[static_cast<int>(op)] : std::string_view("invalid");
}

constexpr bool is_comparison(binary_op op) noexcept {
  return op == binary_op::equal || op == binary_op::less || op == binary_op::greater;
}

// Every number for arithmetic, less and greater; equal takes bool as well.
constexpr bool accepts(binary_op op, elem e) noexcept {
  return is_floating(e) || is_integer(e) || (op == binary_op::equal && e == elem::boolean);
}

// What a reduction computes (ops::reduction_kind, same order): mean divides by the number of reduced
// elements (integers truncate); max and min give NaN when the extent holds one; over an empty extent
// each gives its identity (sum 0, prod 1, mean NaN or 0, max -inf or lowest, min +inf or max).
enum class reduce_op : std::uint8_t { sum, mean, max, min, prod };
inline constexpr int num_reduce_ops = 5;

constexpr std::string_view to_string(reduce_op op) noexcept {
  constexpr std::string_view names[num_reduce_ops] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                                      "reduce_prod"};
  return static_cast<int>(op) < num_reduce_ops ? names[static_cast<int>(op)] : std::string_view("invalid");
}

// Errors only the data shows, which a kernel sets in a device word the caller owns and reads back
// when it synchronizes (read_error_bits in elementwise.hpp).
enum error_bits : unsigned { division_by_zero = 1u, negative_exponent = 2u, index_out_of_range = 4u };

} // namespace typeflow::gpu
