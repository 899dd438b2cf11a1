// SPDX-License-Identifier: Apache-2.0
// compile_error<"message">: how typeflow reports a mistake it finds at compile time. Instantiating
// it fails, and the compiler prints the message as the template argument:
//   error: In instantiation of 'struct typeflow::compile_error<{"add: shapes [2, 3] and [4, 3] ..."}>'
//   error: static assertion failed: typeflow: see the message in compile_error<...> above
// Clang (19 at least) prints only the first 34 characters of a string in a template argument
// ("add: shapes [2, 3] and [4, 3] do n[...]"), so there the message is printed in lines of at
// most 36 characters, which it prints whole:
//   error: static assertion failed due to requirement 'sizeof...(Lines) == 0': typeflow: see ...
//   note: in instantiation of template class 'typeflow::detail::message_lines<fixed_string<33>{"add:
//         shapes [2, 3] and [4, 3] do "}, fixed_string<35>{"not broadcast: dimension 0 is 2 in "}, ...>'
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <string_view>
#include <utility>

#include <typeflow/core/detail/fixed_string.hpp>

namespace typeflow {

#if defined(__clang__)
namespace detail {

// Clang prints a string in a template argument whole up to this many characters.
inline constexpr std::size_t message_line_width = 36;

// Where line `line` of `text` starts (text.size() past the last line). A line ends after its last
// space, or at message_line_width characters where it has none; the lines joined are the text.
constexpr std::size_t message_line_start(std::string_view text, std::size_t line) {
  std::size_t start = 0;
  for (; line > 0 && start < text.size(); --line) {
    const std::size_t end = start + message_line_width;
    if (end >= text.size()) return text.size();
    const std::size_t space = text.rfind(' ', end - 1);
    start = space != std::string_view::npos && space > start ? space + 1 : end;
  }
  return start;
}
constexpr std::size_t message_line_count(std::string_view text) {
  std::size_t n = 0;
  while (message_line_start(text, n) < text.size()) ++n;
  return n;
}
template <fixed_string Message, std::size_t I>
constexpr auto message_line() {
  constexpr std::size_t begin = message_line_start(Message.view(), I);
  constexpr std::size_t end = message_line_start(Message.view(), I + 1);
  fixed_string<end - begin> line(Message.view().substr(begin, end - begin));
  // Clang prints the characters as a string only when the terminating null is stored in the
  // value; a write to it stores it (otherwise it stays the array's filler, as after N = 32 writes).
  line.chars[end - begin] = '\0';
  return line;
}

// Instantiating it with one or more lines fails; the compiler prints the lines in the note below.
template <fixed_string... Lines>
struct message_lines {
  static_assert(sizeof...(Lines) == 0, "typeflow: see the message in the lines of message_lines<...> below");
};
template <fixed_string Message, std::size_t... Is>
auto message_lines_for(std::index_sequence<Is...>) -> message_lines<message_line<Message, Is>()...>;
template <fixed_string Message>
using message_lines_of =
    decltype(message_lines_for<Message>(std::make_index_sequence<message_line_count(Message.view())>{}));

}  // namespace detail

template <detail::fixed_string Message>
struct compile_error {
  // Completing message_lines_of fails for a message that is not empty: read its lines in the note.
  static constexpr bool value = !sizeof(detail::message_lines_of<Message>);
};
#else
template <detail::fixed_string Message>
struct compile_error {
  // Read the message in the template argument of the instantiation the compiler names above.
  static_assert(Message.view().size() == 0, "typeflow: see the message in compile_error<...> above");
  static constexpr bool value = false;
};
#endif

} // namespace typeflow
