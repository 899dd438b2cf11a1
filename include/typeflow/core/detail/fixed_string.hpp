// SPDX-License-Identifier: Apache-2.0
// fixed_string<N>: text usable as a template argument. typeflow turns messages computed at
// compile time (a failed shape inference, a missing kernel) into one of these, so the compiler
// prints the whole message in the instantiation it reports:
//   In instantiation of 'struct typeflow::compile_error<fixed_string<46>{"add: shapes [2, 3] ..."}>'
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstddef>
#include <string_view>

namespace typeflow::detail {

template <std::size_t N>
struct fixed_string {
  char chars[N + 1]{};
  constexpr fixed_string(const char (&s)[N + 1]) {
    for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  }
  constexpr explicit fixed_string(std::string_view s) {
    for (std::size_t i = 0; i < N && i < s.size(); ++i) chars[i] = s[i];
  }
  constexpr std::string_view view() const { return {chars, N}; }
};
template <std::size_t M>
fixed_string(const char (&)[M]) -> fixed_string<M - 1>;

// Turns a constexpr function object that returns a detail::text into a fixed_string constant.
// Make() is called twice (size, then characters): each call's text is freed within its evaluation.
template <auto Make>
struct text_constant {
  static constexpr std::size_t size = Make().view().size();
  static constexpr fixed_string<size> value = [] {
    fixed_string<size> s{std::string_view{}};
    const auto t = Make();
    for (std::size_t i = 0; i < size; ++i) s.chars[i] = t.view()[i];
    return s;
  }();
};

} // namespace typeflow::detail
