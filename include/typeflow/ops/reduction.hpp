// SPDX-License-Identifier: Apache-2.0
// Reductions (TensorFlow's Sum, Mean, Max, Min, Prod and ArgMax): each output element combines
// the input elements that differ only along the reduced axes.
//
// Over an empty reduced extent the result is the reduction's identity, as in TensorFlow:
// reduce_sum 0, reduce_prod 1, reduce_mean NaN for floating types (0 / 0) and 0 for integers,
// reduce_max -inf for floating types and lowest() for integers, reduce_min +inf and max().
// argmax has no identity: an empty axis is an error.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/core/int_list.hpp>
#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

namespace detail {

// reduced[i] is true when input axis i is reduced.
using reduction_mask = std::array<bool, max_rank>;

// `axes` normalised against the input's rank (negative axes count from the back); empty axes
// reduce every axis, as TensorFlow's default does. Out-of-range and repeated axes are errors.
constexpr result<reduction_mask> reduced_axes(std::string_view op, const int_list& axes, const shape& x) {
  reduction_mask reduced{};
  if (axes.empty()) {
    for (std::size_t i = 0; i < x.rank(); ++i) reduced[i] = true;
    return reduced;
  }
  const auto rank = static_cast<std::int64_t>(x.rank());
  for (std::int64_t a : axes) {
    if (a < -rank || a >= rank)
      return errors::invalid_argument(op, ": axis ", a, " in axes ", axes, " is out of range for an input of rank ",
                                      rank, " (shape ", x, ")");
    const auto axis = static_cast<std::size_t>(a < 0 ? a + rank : a);
    if (reduced[axis])
      return errors::invalid_argument(op, ": axes ", axes, " name axis ", axis, " more than once (input shape ", x,
                                      ")");
    reduced[axis] = true;
  }
  return reduced;
}

// [d0, d1, d2] reduced over axes (1) -> [d0, d2], or [d0, 1, d2] with keep_dims.
// Unknown (dyn) dimensions stay unknown; a reduced one becomes 1 or disappears.
constexpr result<shape> reduction_shape(std::string_view op, const shape& x, const int_list& axes, bool keep_dims) {
  auto reduced = reduced_axes(op, axes, x);
  if (!reduced.ok()) return reduced.status();
  shape out;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    if (!(*reduced)[i]) out.push_back(x[i]);
    else if (keep_dims) out.push_back(1);
  }
  return out;
}

} // namespace detail

// What a reduction computes over its extent (identities over an empty extent in the header
// comment above):
//   sum;  mean: the sum divided by the number of reduced elements, with integer division
//   (truncating toward zero) for integer dtypes, as TensorFlow does;  max, min: a NaN anywhere in
//   the extent gives NaN, as in TensorFlow;  prod: integer overflow wraps as the hardware does.
enum class reduction_kind { sum, mean, max, min, prod };

// One op type per kind (reduce_sum, ...). Attributes: the axes to reduce (empty: every axis) and
// whether reduced axes stay as size-1 dimensions.
template <reduction_kind Kind>
struct reduction {
  static constexpr std::string_view name = std::array<std::string_view, 5>{
      "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}[static_cast<std::size_t>(Kind)];
  static constexpr int num_inputs = 1;
  static constexpr reduction_kind kind = Kind;
  int_list axes{};  // empty: every axis
  bool keep_dims = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::numbers);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    return detail::reduction_shape(name, in[0], axes, keep_dims);
  }
  friend constexpr bool operator==(const reduction&, const reduction&) = default;
};

using reduce_sum = reduction<reduction_kind::sum>;
using reduce_mean = reduction<reduction_kind::mean>;
using reduce_max = reduction<reduction_kind::max>;
using reduce_min = reduction<reduction_kind::min>;
using reduce_prod = reduction<reduction_kind::prod>;

// The index (i64) of the largest element along `axis`, which the output drops:
// [d0, d1, d2] with axis 1 -> [d0, d2]. Ties give the first such index, as in TensorFlow, or the
// last with select_last_index (ONNX's attribute of that name).
struct argmax {
  static constexpr std::string_view name = "argmax";
  static constexpr int num_inputs = 1;
  std::int64_t axis = 0;
  bool select_last_index = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    auto d = detail::same_dtype(name, in, detail::accepts::numbers);
    if (!d.ok()) return d;
    return dtype::i64;
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    const auto rank = static_cast<std::int64_t>(x.rank());
    if (axis < -rank || axis >= rank)
      return errors::invalid_argument(name, ": axis ", axis, " is out of range for an input of rank ", rank,
                                      " (shape ", x, ")");
    const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    if (x[a] == 0)
      return errors::invalid_argument(name, ": axis ", a, " of the input (shape ", x,
                                      ") is empty, so it has no largest element");
    shape out;
    for (std::size_t i = 0; i < x.rank(); ++i)
      if (i != a) out.push_back(x[i]);
    return out;
  }
  friend constexpr bool operator==(const argmax&, const argmax&) = default;
};

} // namespace typeflow::ops
