// SPDX-License-Identifier: Apache-2.0
// Windowed ops' padding (conv2d, the pools) and TensorFlow's output-size arithmetic for one
// spatial dimension. Sizes may be dyn; a dyn operand makes a dyn result.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <typeflow/core/detail/checked_int.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow::ops {

// same: the output has ceil(in / stride) positions and the input is zero-padded (split evenly,
// the extra one after) so that the windows cover it. valid: only windows wholly inside the input.
enum class padding : unsigned char { same, valid };

// The names of a named enum's values, in the order of the values: an attribute of such a type is
// a string in graph files and in op_with (ops/attributes.hpp).
constexpr std::array<std::string_view, 2> names_of(padding) noexcept { return {"same", "valid"}; }

constexpr std::string_view name_of(padding p) noexcept {
  const auto i = static_cast<std::size_t>(p);
  return i < names_of(p).size() ? names_of(p)[i] : "invalid padding";
}

// Lets messages name a padding: errors::invalid_argument("with ", padding::valid, " padding").
constexpr void append(typeflow::detail::text& out, padding p) { out.append(name_of(p)); }

// The largest window, stride or dilation an op accepts (TensorFlow keeps them in int32), so that
// the kernels' index arithmetic stays far from overflow.
inline constexpr std::int64_t max_window_attr = 2147483647;

// The extent a window of `size` taps spaced `dilation` apart covers: (size - 1) * dilation + 1.
constexpr std::int64_t effective_window(std::int64_t size, std::int64_t dilation) noexcept {
  if (size == dyn || dilation == dyn) return dyn;
  return typeflow::detail::saturating_add(typeflow::detail::saturating_mul(size - 1, dilation), 1);
}

// Output positions along one dimension of `in` positions, for a window of `size` taps with the
// given stride and dilation (all >= 1 where known):
//   same:  ceil(in / stride)
//   valid: ceil((in - (size - 1) * dilation) / stride), 0 when the window does not fit.
constexpr std::int64_t windowed_output_size(std::int64_t in, std::int64_t size, std::int64_t stride,
                                            std::int64_t dilation, padding pad) noexcept {
  if (in == dyn || stride == dyn) return dyn;
  if (pad == padding::same) return typeflow::detail::saturating_add(in, stride - 1) / stride;
  const std::int64_t extent = effective_window(size, dilation);
  if (extent == dyn) return dyn;
  if (extent > in) return 0;
  return typeflow::detail::saturating_add(in - extent, stride) / stride;
}

// Zero rows (or columns) before the input: half the total padding, rounded down, as TensorFlow
// does: max((out - 1) * stride + (size - 1) * dilation + 1 - in, 0) / 2. Always 0 for valid.
constexpr std::int64_t padding_before(std::int64_t in, std::int64_t out, std::int64_t size, std::int64_t stride,
                                      std::int64_t dilation, padding pad) noexcept {
  if (pad == padding::valid || out <= 0) return 0;
  const std::int64_t total = typeflow::detail::saturating_add(typeflow::detail::saturating_mul(out - 1, stride),
                                                             effective_window(size, dilation)) - in;
  return total > 0 ? total / 2 : 0;
}

} // namespace typeflow::ops
