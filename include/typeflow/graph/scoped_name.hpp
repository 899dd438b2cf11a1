// SPDX-License-Identifier: Apache-2.0
// scoped_name<Prefix, Index, Suffix>: a node name built at compile time from a number, for graphs
// whose layers are written once and stamped out by index (TensorFlow's name scopes):
//   template <int L>
//   constexpr auto wq = tf::variable<tf::scoped_name<"layer", L, "/attention/wq">, float, tf::static_shape<256, 256>>;
// names layer 3's variable "layer3/attention/wq". The value is a name like any literal's, usable
// wherever input<...> and variable<...> take one.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <typeflow/core/detail/fixed_string.hpp>

namespace typeflow {

namespace detail {

// Characters of `v` written in decimal, with its sign.
constexpr std::size_t decimal_digits(std::int64_t v) {
  std::size_t n = v < 0 ? 2 : 1;
  for (std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v); u >= 10; u /= 10) ++n;
  return n;
}

template <fixed_string Prefix, std::int64_t Index, fixed_string Suffix>
constexpr auto make_scoped_name() {
  constexpr std::string_view prefix = Prefix.view(), suffix = Suffix.view();
  constexpr std::size_t digits = decimal_digits(Index);
  fixed_string<prefix.size() + digits + suffix.size()> s{std::string_view{}};
  std::size_t at = 0;
  for (char c : prefix) s.chars[at++] = c;
  std::uint64_t u = Index < 0 ? 0 - static_cast<std::uint64_t>(Index) : static_cast<std::uint64_t>(Index);
  if (Index < 0) s.chars[at] = '-';
  for (std::size_t i = digits; i-- > (Index < 0 ? 1 : 0); u /= 10) s.chars[at + i] = static_cast<char>('0' + u % 10);
  at += digits;
  for (char c : suffix) s.chars[at++] = c;
  return s;
}

}  // namespace detail

// The type of a node name as a template argument, for templates of one's own that take a name or
// a part of one (template <tf::fixed_string Suffix> ...).
using detail::fixed_string;

template <detail::fixed_string Prefix, std::int64_t Index, detail::fixed_string Suffix = "">
inline constexpr auto scoped_name = detail::make_scoped_name<Prefix, Index, Suffix>();

}  // namespace typeflow
