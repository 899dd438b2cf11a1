// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

namespace typeflow::detail {

// Ends an `if constexpr` chain: `static_assert(dependent_false<T>, "...")` fires only when reached.
template <class...> inline constexpr bool dependent_false = false;

} // namespace typeflow::detail
