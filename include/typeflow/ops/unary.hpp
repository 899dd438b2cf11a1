// SPDX-License-Identifier: Apache-2.0
// Elementwise unary ops: the output has the input's shape (and dtype, except cast).
#pragma once

#include <typeflow/fwd.hpp>

#include <limits>
#include <span>
#include <string_view>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

// The shared inference of elementwise unary ops; Derived names the op, Accepts its dtypes.
template <class Derived, detail::accepts Accepts>
struct unary_op {
  static constexpr int num_inputs = 1;
  static constexpr detail::accepts accepted_dtypes = Accepts;
  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(Derived::name, in, Accepts);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return in[0]; }
  friend constexpr bool operator==(const unary_op&, const unary_op&) = default;
};

// -x
struct neg : unary_op<neg, detail::accepts::signed_numbers> { static constexpr std::string_view name = "neg"; };
// |x|
struct abs : unary_op<abs, detail::accepts::signed_numbers> { static constexpr std::string_view name = "abs"; };
// e^x
struct exp : unary_op<exp, detail::accepts::floating> { static constexpr std::string_view name = "exp"; };
// natural logarithm; -inf at 0, nan below
struct log : unary_op<log, detail::accepts::floating> { static constexpr std::string_view name = "log"; };
struct sqrt : unary_op<sqrt, detail::accepts::floating> { static constexpr std::string_view name = "sqrt"; };
// 1 / sqrt(x)
struct rsqrt : unary_op<rsqrt, detail::accepts::floating> { static constexpr std::string_view name = "rsqrt"; };
// x * x
struct square : unary_op<square, detail::accepts::signed_numbers> { static constexpr std::string_view name = "square"; };
struct tanh : unary_op<tanh, detail::accepts::floating> { static constexpr std::string_view name = "tanh"; };
// 1 / (1 + e^-x)
struct sigmoid : unary_op<sigmoid, detail::accepts::floating> { static constexpr std::string_view name = "sigmoid"; };
// max(x, 0)
struct relu : unary_op<relu, detail::accepts::signed_numbers> { static constexpr std::string_view name = "relu"; };
// log(1 + e^x), computed without overflow for large |x|
struct softplus : unary_op<softplus, detail::accepts::floating> { static constexpr std::string_view name = "softplus"; };

// the error function, 2/√π ∫₀ˣ e^(-t²) dt
struct erf : unary_op<erf, detail::accepts::floating> { static constexpr std::string_view name = "erf"; };

// Elementwise ops with attributes have no unary_op base: a base class would be the first member
// of the aggregate and make leaky_relu{.alpha = 0.1} warn under -Wextra.
#define TYPEFLOW_UNARY_INFERENCE(op, accepted)                                                    \
  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {                          \
    return detail::same_dtype(name, in, detail::accepts::accepted);                                \
  }                                                                                                \
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return in[0]; }           \
  friend constexpr bool operator==(const op&, const op&) = default;

// x for x > 0, alpha x otherwise (TensorFlow's default alpha; ONNX's LeakyRelu defaults to 0.01).
struct leaky_relu {
  static constexpr std::string_view name = "leaky_relu";
  static constexpr int num_inputs = 1;
  double alpha = 0.2;
  TYPEFLOW_UNARY_INFERENCE(leaky_relu, floating)
};

// max(0, min(1, alpha x + beta)), ONNX's HardSigmoid.
struct hard_sigmoid {
  static constexpr std::string_view name = "hard_sigmoid";
  static constexpr int num_inputs = 1;
  double alpha = 0.2;
  double beta = 0.5;
  TYPEFLOW_UNARY_INFERENCE(hard_sigmoid, floating)
};

// min(max(x, min), max): each bound, converted to the dtype, where it lies inside the dtype's
// range (the defaults, -inf and +inf, clip nothing). NaN stays NaN. min > max gives max everywhere
// (NumPy's and ONNX's rule).
struct clip {
  static constexpr std::string_view name = "clip";
  static constexpr int num_inputs = 1;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  TYPEFLOW_UNARY_INFERENCE(clip, numbers)
};

#undef TYPEFLOW_UNARY_INFERENCE

// x * Φ(x). approximate == false: the exact form 0.5 x (1 + erf(x / √2));
// approximate == true: the tanh form 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
// (No unary_op base: a base class would be the first member of the aggregate and make
// gelu{.approximate = true} warn under -Wextra.)
struct gelu {
  static constexpr std::string_view name = "gelu";
  static constexpr int num_inputs = 1;
  bool approximate = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return in[0]; }
  friend constexpr bool operator==(const gelu&, const gelu&) = default;
};

// Converts every element to dtype `to`. Floats to integers truncate toward zero and saturate:
// values beyond the target's range become its minimum or maximum, NaN becomes 0 (XLA's and
// JAX's rule; TensorFlow's CPU kernel leaves them undefined, as C++ does). Integers to narrower
// integers wrap modulo 2^bits; f64 to f32 rounds (beyond float's range: infinity); anything to
// bool is x != 0.
struct cast {
  static constexpr std::string_view name = "cast";
  static constexpr int num_inputs = 1;
  dtype to = dtype::f32;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    if (!is_valid(in[0])) return errors::invalid_argument(name, ": invalid input dtype");
    if (!is_valid(to)) return errors::invalid_argument(name, ": invalid target dtype code ", static_cast<int>(to));
    return to;
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return in[0]; }
  friend constexpr bool operator==(const cast&, const cast&) = default;
};

} // namespace typeflow::ops
