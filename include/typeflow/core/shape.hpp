// SPDX-License-Identifier: Apache-2.0
// shape: a tensor's dimensions. One literal type serves at run time and at compile time, so the
// same shape-inference code runs in both; static_shape<2, dyn> names a shape as a type.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>

#include <typeflow/core/detail/checked_int.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow {

// A dimension known only at run time (in static shapes and op attributes).
inline constexpr std::int64_t dyn = -1;

// Tensors have at most this many dimensions (TensorFlow's Eigen kernels stop at 8 too).
inline constexpr std::size_t max_rank = 8;

// The most elements a shape may describe, so that its size in bytes (8 at most an element) and
// every sum or product of its dimensions fits in int64: 2^60 - 1.
inline constexpr std::int64_t max_num_elements = std::numeric_limits<std::int64_t>::max() / 8;

// The members are public so that a shape is a structural type and can be a template argument
// (op attributes such as reshape's target are shapes). Invariant: rank <= max_rank and
// dims[i] == 0 for i >= rank, so that == compares only what matters.
struct shape {
  std::array<std::int64_t, max_rank> dims{};
  std::uint8_t rank_value = 0;

  constexpr shape() = default;
  // shape{2, 3} is a matrix of 2 rows and 3 columns; shape{} is a scalar.
  // More than max_rank dimensions is a programming error (use from_span for untrusted input).
  constexpr shape(std::initializer_list<std::int64_t> d) {
    assert(d.size() <= max_rank);
    for (auto v : d) if (rank_value < max_rank) dims[rank_value++] = v;
  }

  // Untrusted dimension lists (files, feeds) come through here and get a status.
  static constexpr result<shape> from_span(std::span<const std::int64_t> d) {
    if (d.size() > max_rank)
      return errors::invalid_argument("a shape has at most ", max_rank, " dimensions, got ", d.size());
    shape s;
    for (auto v : d) {
      if (v < 0 && v != dyn) return errors::invalid_argument("dimension ", v, " is negative");
      s.dims[s.rank_value++] = v;
    }
    if (auto st = s.check_size(); !st.ok()) return st;
    return s;
  }

  // ok when the known, non-zero dimensions multiply to at most max_num_elements; then
  // num_elements(), product() and the sums shape inference makes cannot overflow. Every shape
  // from outside (files, attributes, op outputs) is checked so.
  constexpr status check_size() const {
    std::int64_t n = 1;
    for (auto d : *this) {
      if (d == dyn || d == 0) continue;
      if (!detail::checked_mul(n, d, n) || n > max_num_elements)
        return errors::invalid_argument("shape ", *this, " is too large: its dimensions multiply past ",
                                        max_num_elements, " elements");
    }
    return ok_status();
  }

  constexpr std::size_t rank() const noexcept { return rank_value; }
  constexpr std::int64_t operator[](std::size_t i) const noexcept { return dims[i]; }
  constexpr std::int64_t& operator[](std::size_t i) noexcept { return dims[i]; }
  constexpr const std::int64_t* begin() const noexcept { return dims.data(); }
  constexpr const std::int64_t* end() const noexcept { return dims.data() + rank_value; }
  constexpr std::span<const std::int64_t> span() const noexcept { return {dims.data(), rank_value}; }

  // Precondition: rank() < max_rank.
  constexpr void push_back(std::int64_t d) { assert(rank_value < max_rank); dims[rank_value++] = d; }

  // True when no dimension is dyn.
  constexpr bool is_fully_defined() const noexcept {
    for (auto d : *this) if (d == dyn) return false;
    return true;
  }

  // Number of elements (1 for a scalar); dyn when a dimension is dyn.
  constexpr std::int64_t num_elements() const noexcept {
    std::int64_t n = 1;
    for (auto d : *this) {
      if (d == dyn) return dyn;
      n *= d;
    }
    return n;
  }

  // Product of dims[first, last).
  constexpr std::int64_t product(std::size_t first, std::size_t last) const noexcept {
    std::int64_t n = 1;
    for (std::size_t i = first; i < last; ++i) n *= dims[i];
    return n;
  }

  // "[2, 3]", "[?, 784]", "[]" for a scalar.
  constexpr void append_to(detail::text& out) const {
    out.push_back('[');
    for (std::size_t i = 0; i < rank_value; ++i) {
      if (i) out.append(", ");
      if (dims[i] == dyn) out.push_back('?');
      else detail::append_int(out, dims[i]);
    }
    out.push_back(']');
  }
  std::string to_string() const { return detail::cat(*this).str(); }

  friend constexpr bool operator==(const shape&, const shape&) = default;
};

// A shape named as a type: static_shape<dyn, 784>::value is shape{dyn, 784}.
template <std::int64_t... Dims>
struct static_shape {
  static_assert(sizeof...(Dims) <= max_rank, "static_shape<...>: a shape has at most 8 dimensions");
  static_assert(((Dims >= 0 || Dims == dyn) && ...),
                "static_shape<...>: every dimension must be >= 0 or typeflow::dyn");
  static constexpr shape value{Dims...};
  static constexpr std::size_t rank = sizeof...(Dims);
};

// True when `actual` (fully defined) fits `pattern`, whose dyn dimensions match anything.
constexpr bool matches(const shape& pattern, const shape& actual) noexcept {
  if (pattern.rank() != actual.rank()) return false;
  for (std::size_t i = 0; i < pattern.rank(); ++i)
    if (pattern[i] != dyn && pattern[i] != actual[i]) return false;
  return true;
}

// NumPy broadcasting of two shapes: dimensions align from the right; 1 stretches to match.
// dyn against 1 or dyn stays dyn; dyn against n is n (checked again when the tensor arrives).
constexpr result<shape> broadcast(const shape& a, const shape& b) {
  const std::size_t r = std::max(a.rank(), b.rank());
  shape out;
  out.rank_value = static_cast<std::uint8_t>(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    const std::int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    std::int64_t d;
    if (da == db) d = da;
    else if (da == 1) d = db;
    else if (db == 1) d = da;
    else if (da == dyn) d = db;
    else if (db == dyn) d = da;
    else
      return errors::invalid_argument("shapes ", a, " and ", b, " do not broadcast: dimension ", i,
                                      " is ", da, " in one and ", db, " in the other");
    out[i] = d;
  }
  return out;
}

// Normalises an axis that may count from the back (-1 is the last) against a rank.
constexpr result<std::size_t> normalize_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    return errors::invalid_argument("axis ", axis, " is out of range for rank ", rank);
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

} // namespace typeflow
