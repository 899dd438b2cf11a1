// SPDX-License-Identifier: Apache-2.0
// Named enums: an enum E whose values have names, returned by names_of(E) (found by ADL) in the
// order of the values (ops::padding, ops::data_format, ops::pad_mode, the resize enums). An
// attribute of such a type is a string in graph files and in op_with (ops/attributes.hpp), and
// messages print the name.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>

#include <typeflow/core/detail/format.hpp>

namespace typeflow::ops {

template <class E>
concept named_enum = std::is_enum_v<E> && requires { names_of(E{}); };

// Whether e is one of E's named values (not a cast from a code past them).
template <named_enum E>
constexpr bool is_named(E e) noexcept {
  return static_cast<std::size_t>(e) < names_of(e).size();
}

template <named_enum E>
constexpr std::string_view name_of(E e) noexcept {
  return is_named(e) ? names_of(e)[static_cast<std::size_t>(e)] : std::string_view("invalid value");
}

// Lets messages name a value: errors::invalid_argument("with ", padding::valid, " padding").
template <named_enum E>
constexpr void append(typeflow::detail::text& out, E e) {
  out.append(name_of(e));
}

}  // namespace typeflow::ops
