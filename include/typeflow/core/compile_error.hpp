// SPDX-License-Identifier: Apache-2.0
// compile_error<"message">: how typeflow reports a mistake it finds at compile time. Instantiating
// it fails, and the compiler prints the message as the template argument:
//   error: In instantiation of 'struct typeflow::compile_error<{"add: shapes [2, 3] and [4, 3] ..."}>'
//   error: static assertion failed: typeflow: see the message in compile_error<...> above
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/core/detail/fixed_string.hpp>

namespace typeflow {

template <detail::fixed_string Message>
struct compile_error {
  // Read the message in the template argument of the instantiation the compiler names above.
  static_assert(Message.view().size() == 0, "typeflow: see the message in compile_error<...> above");
  static constexpr bool value = false;
};

} // namespace typeflow
