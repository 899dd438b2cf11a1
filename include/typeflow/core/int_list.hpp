// SPDX-License-Identifier: Apache-2.0
// int_list: a short list of integers for op attributes (axes, permutations, begins, paddings).
// A structural literal type, so an op holding one can still be a template argument.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include <typeflow/core/detail/format.hpp>

namespace typeflow {

struct int_list {
  // Enough for one value per dimension pair of a rank-8 tensor (pad's paddings).
  static constexpr std::size_t capacity = 16;

  std::array<std::int64_t, capacity> values{};
  std::uint8_t count = 0;

  constexpr int_list() = default;
  // More than `capacity` values is a programming error.
  constexpr int_list(std::initializer_list<std::int64_t> v) {
    assert(v.size() <= capacity);
    for (auto x : v) if (count < capacity) values[count++] = x;
  }

  constexpr std::size_t size() const noexcept { return count; }
  constexpr bool empty() const noexcept { return count == 0; }
  constexpr std::int64_t operator[](std::size_t i) const noexcept { return values[i]; }
  constexpr std::int64_t& operator[](std::size_t i) noexcept { return values[i]; }
  constexpr const std::int64_t* begin() const noexcept { return values.data(); }
  constexpr const std::int64_t* end() const noexcept { return values.data() + count; }
  constexpr std::span<const std::int64_t> span() const noexcept { return {values.data(), count}; }
  // Precondition: size() < capacity.
  constexpr void push_back(std::int64_t v) { assert(count < capacity); values[count++] = v; }

  // "(0, 2)"
  constexpr void append_to(detail::text& out) const {
    out.push_back('(');
    for (std::size_t i = 0; i < count; ++i) {
      if (i) out.append(", ");
      detail::append_int(out, values[i]);
    }
    out.push_back(')');
  }
  std::string to_string() const { return detail::cat(*this).str(); }
  friend constexpr bool operator==(const int_list&, const int_list&) = default;
};

} // namespace typeflow
