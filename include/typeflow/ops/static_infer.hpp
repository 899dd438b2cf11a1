// SPDX-License-Identifier: Apache-2.0
// Shape and dtype inference at compile time. spec<float, static_shape<2, 3>> describes a tensor
// as a type; static_infer<ops::add{}, A, B>::value is the output's tensor_spec, and a mismatch is a
// compile error whose text is the same message the run-time check gives:
//   In instantiation of 'struct typeflow::compile_error<{"add: shapes [2, 3] and [4, 3] do not broadcast..."}>'
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <span>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow {

// A tensor described at compile time: element type T and static shape Shape (dims may be dyn).
template <element_type T, class Shape>
struct spec {
  using element_type = T;
  using shape_type = Shape;
  static constexpr tensor_spec value{dtype_of<T>, Shape::value};
};

// The same over tensor_spec values: what the static graph uses, where each node carries its spec.
// `outputs` holds every output's spec (split and top_k have several), `value` the first's.
template <auto Op, tensor_spec... In>
  requires op<decltype(Op)>
struct static_infer_specs {
  static constexpr std::array<tensor_spec, sizeof...(In)> inputs{In...};
  static constexpr std::size_t num_outputs = num_outputs_of(Op);

  // The first output whose inference fails, or num_outputs.
  static constexpr std::size_t failing = [] {
    for (std::size_t k = 0; k < num_outputs; ++k)
      if (!infer(Op, std::span<const tensor_spec>(inputs), k).ok()) return k;
    return num_outputs;
  }();
  static constexpr bool ok = failing == num_outputs;

  // The compiler prints the inference's own message as compile_error's template argument.
  static_assert(ok || compile_error<detail::text_constant<[] {
                  if (ok) return detail::text();
                  return detail::cat(infer(Op, std::span<const tensor_spec>(inputs), failing).status().message());
                }>::value>::value,
                "typeflow: static shape or dtype inference failed; see compile_error<...> above");

  static constexpr std::array<tensor_spec, ok ? num_outputs : 1> outputs = [] {
    std::array<tensor_spec, ok ? num_outputs : 1> out{};
    if constexpr (ok)
      for (std::size_t k = 0; k < num_outputs; ++k) out[k] = *infer(Op, std::span<const tensor_spec>(inputs), k);
    return out;
  }();
  static constexpr tensor_spec value = outputs[0];
};

template <auto Op, class... Specs>
  requires op<decltype(Op)>
struct static_infer : static_infer_specs<Op, Specs::value...> {};

template <auto Op, class... Specs>
inline constexpr tensor_spec static_infer_v = static_infer<Op, Specs...>::value;

} // namespace typeflow
