// SPDX-License-Identifier: Apache-2.0
// tensor_spec: a tensor's dtype and shape without its data, what shape inference works on.
#pragma once

#include <typeflow/fwd.hpp>

#include <string>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow {

struct tensor_spec {
  dtype type{};
  shape dims{};

  // "f32[2, 3]"
  constexpr void append_to(detail::text& out) const {
    out.append(name_of(type));
    dims.append_to(out);
  }
  std::string to_string() const { return detail::cat(*this).str(); }
  friend constexpr bool operator==(const tensor_spec&, const tensor_spec&) = default;
};

} // namespace typeflow
