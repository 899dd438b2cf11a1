// SPDX-License-Identifier: Apache-2.0
// Overflow-checked and saturating int64 arithmetic for shape inference, whose operands come from
// attributes and files: checked_add/checked_mul return false instead of overflowing, and work in
// constant expressions (static graphs infer shapes at compile time).
#pragma once

#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstdint>
#include <limits>

namespace typeflow::detail {

constexpr bool checked_add(std::int64_t a, std::int64_t b, std::int64_t& out) noexcept {
  return !__builtin_add_overflow(a, b, &out);
}
constexpr bool checked_mul(std::int64_t a, std::int64_t b, std::int64_t& out) noexcept {
  return !__builtin_mul_overflow(a, b, &out);
}

// a + b and a * b clamped to the int64 range (only ever past the top for the non-negative
// operands shape code uses).
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (checked_add(a, b, r)) return r;
  return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}
constexpr std::int64_t saturating_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (checked_mul(a, b, r)) return r;
  return (a < 0) != (b < 0) ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
}

}  // namespace typeflow::detail
