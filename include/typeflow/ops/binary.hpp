// SPDX-License-Identifier: Apache-2.0
// Elementwise binary ops with NumPy broadcasting: dimensions align from the right and a
// dimension of 1 stretches to match, so [2, 1, 5] and [7, 1] give [2, 7, 5]. Both inputs have
// one dtype; arithmetic keeps it, comparisons give bool.
#pragma once

#include <typeflow/fwd.hpp>

#include <span>
#include <string_view>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

namespace detail {

// The broadcast of the two input shapes, or "<op>: shapes [2, 3] and [4, 3] do not broadcast: ...".
constexpr result<shape> broadcast_inputs(std::string_view op, std::span<const shape> in) {
  auto out = typeflow::broadcast(in[0], in[1]);
  if (!out.ok()) return out.status().with_context(op);
  return out;
}

} // namespace detail

// The shared inference of binary arithmetic ops: the output has the inputs' dtype.
// Derived names the op, Accepts its dtypes. (These ops have no attributes, so a base class
// does not get in the way of designated initialisers.)
template <class Derived, detail::accepts Accepts>
struct arithmetic_op {
  static constexpr int num_inputs = 2;
  static constexpr detail::accepts accepted_dtypes = Accepts;
  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(Derived::name, in, Accepts);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    return detail::broadcast_inputs(Derived::name, in);
  }
  friend constexpr bool operator==(const arithmetic_op&, const arithmetic_op&) = default;
};

// The shared inference of comparisons: inputs of one dtype that Accepts, a bool output.
template <class Derived, detail::accepts Accepts>
struct comparison_op {
  static constexpr int num_inputs = 2;
  static constexpr detail::accepts accepted_dtypes = Accepts;
  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    auto d = detail::same_dtype(Derived::name, in, Accepts);
    if (!d.ok()) return d;
    return dtype::boolean;
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    return detail::broadcast_inputs(Derived::name, in);
  }
  friend constexpr bool operator==(const comparison_op&, const comparison_op&) = default;
};

// x + y; integers wrap on overflow
struct add : arithmetic_op<add, detail::accepts::numbers> { static constexpr std::string_view name = "add"; };
// x - y; integers wrap on overflow
struct sub : arithmetic_op<sub, detail::accepts::numbers> { static constexpr std::string_view name = "sub"; };
// x * y; integers wrap on overflow
struct mul : arithmetic_op<mul, detail::accepts::numbers> { static constexpr std::string_view name = "mul"; };
// x / y. Floats follow IEEE (x / 0 is ±inf or nan). Integers truncate toward zero, as TensorFlow's
// Div; a zero anywhere in y is an error at run time, and the lowest value / -1 wraps to itself.
struct div : arithmetic_op<div, detail::accepts::numbers> { static constexpr std::string_view name = "div"; };
// max(x, y); nan when either is nan
struct maximum : arithmetic_op<maximum, detail::accepts::numbers> {
  static constexpr std::string_view name = "maximum";
};
// min(x, y); nan when either is nan
struct minimum : arithmetic_op<minimum, detail::accepts::numbers> {
  static constexpr std::string_view name = "minimum";
};
// x to the power y. Floats as std::pow. Integers: exact by repeated squaring, wrapping on
// overflow; a negative exponent anywhere in y is an error at run time (as in NumPy).
struct pow : arithmetic_op<pow, detail::accepts::numbers> { static constexpr std::string_view name = "pow"; };

// x == y (any dtype, bool included)
struct equal : comparison_op<equal, detail::accepts::any> { static constexpr std::string_view name = "equal"; };
// x < y
struct less : comparison_op<less, detail::accepts::numbers> { static constexpr std::string_view name = "less"; };
// x > y
struct greater : comparison_op<greater, detail::accepts::numbers> {
  static constexpr std::string_view name = "greater";
};

} // namespace typeflow::ops
