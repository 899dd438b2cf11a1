// SPDX-License-Identifier: Apache-2.0
// Checks shared by the ops' inference functions. Every message starts with the op's name.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstddef>
#include <span>
#include <string_view>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow::ops::detail {

// Which dtypes an op accepts.
enum class accepts : unsigned char { floating, signed_numbers, numbers, any };

constexpr bool is_accepted(dtype d, accepts a) {
  switch (a) {
    case accepts::floating: return is_floating(d);
    case accepts::signed_numbers: return is_signed(d);
    case accepts::numbers: return d != dtype::boolean;
    case accepts::any: return is_valid(d);
  }
  return false;
}

constexpr std::string_view describe(accepts a) {
  switch (a) {
    case accepts::floating: return "a floating-point dtype (f16, bf16, f32, f64)";
    case accepts::signed_numbers: return "a signed numeric dtype";
    case accepts::numbers: return "a numeric dtype";
    case accepts::any: return "any dtype";
  }
  return "";
}

// All inputs share one dtype, which `a` accepts; returns it.
constexpr result<dtype> same_dtype(std::string_view op, std::span<const dtype> in, accepts a) {
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i] != in[0])
      return errors::invalid_argument(op, ": all inputs must have one dtype, input 0 is ", in[0], " and input ", i,
                                      " is ", in[i]);
  if (!is_accepted(in[0], a))
    return errors::invalid_argument(op, ": input dtype ", in[0], " is not supported; expected ", describe(a));
  return in[0];
}

constexpr status require_rank(std::string_view op, std::string_view what, const shape& s, std::size_t rank) {
  if (s.rank() != rank)
    return errors::invalid_argument(op, ": ", what, " must have rank ", rank, ", got shape ", s);
  return ok_status();
}

constexpr status require_min_rank(std::string_view op, std::string_view what, const shape& s, std::size_t rank) {
  if (s.rank() < rank)
    return errors::invalid_argument(op, ": ", what, " must have rank >= ", rank, ", got shape ", s);
  return ok_status();
}

// Two dimensions that must agree: equal, or at least one known only at run time.
constexpr bool compatible(std::int64_t a, std::int64_t b) { return a == b || a == dyn || b == dyn; }
// The better-known of two compatible dimensions.
constexpr std::int64_t merge(std::int64_t a, std::int64_t b) { return a == dyn ? b : a; }

// The number of elements of `s` when it is certain: 0 when a dimension is 0, even if another
// is dyn; dyn when a dimension is dyn and none is 0.
constexpr std::int64_t known_num_elements(const shape& s) {
  for (auto d : s) if (d == 0) return 0;
  return s.num_elements();
}

} // namespace typeflow::ops::detail
