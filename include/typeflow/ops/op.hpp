// SPDX-License-Identifier: Apache-2.0
// The op concept. An op is a struct: its name and arity are static members, its attributes are
// data members (public, so an op value can be a template argument), and its dtype and shape
// inference are constexpr member functions, run at compile time for static graphs and at run
// time for tensors. Ops know nothing of devices; kernels (kernels/) implement them.
// An op with several outputs (split, top_k) says how many with a constexpr member num_outputs()
// (a constant, or an attribute such as split's num_split) and infers output k with
// infer_dtype(dtypes, k) and infer_shape(shapes, k); k defaults to 0, so it is an `op` as well.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor_spec.hpp>

namespace typeflow {

// num_inputs of an op that takes one or more inputs (concat).
inline constexpr int variadic = -1;

// Satisfied by ops::add (two inputs, dtype and shape inference); not by `float`.
template <class Op>
concept op = requires(const Op& o, std::span<const dtype> dtypes, std::span<const shape> shapes) {
  { Op::name } -> std::convertible_to<std::string_view>;
  { Op::num_inputs } -> std::convertible_to<int>;
  { o.infer_dtype(dtypes) } -> std::same_as<result<dtype>>;
  { o.infer_shape(shapes) } -> std::same_as<result<shape>>;
};

// Satisfied by ops::top_k and ops::split; not by ops::add (one output).
template <class Op>
concept multi_output_op = op<Op> && requires(const Op& o, std::span<const dtype> dtypes, std::span<const shape> shapes) {
  { o.num_outputs() } -> std::convertible_to<std::size_t>;
  { o.infer_dtype(dtypes, std::size_t{0}) } -> std::same_as<result<dtype>>;
  { o.infer_shape(shapes, std::size_t{0}) } -> std::same_as<result<shape>>;
};

// How many outputs an op value has: 1 unless it is a multi_output_op.
template <op Op>
constexpr std::size_t num_outputs_of(const Op& o) {
  if constexpr (multi_output_op<Op>) return static_cast<std::size_t>(o.num_outputs());
  else return 1;
}

// The most outputs an op may have: split's num_split comes from a graph file, and every output
// costs a spec and a tensor before the kernel runs.
inline constexpr std::size_t max_outputs = std::size_t{1} << 16;

// ok when the op's number of outputs is at most max_outputs; what to check before sizing anything by it.
template <op Op>
constexpr status check_num_outputs(const Op& o) {
  if (const std::size_t n = num_outputs_of(o); n > max_outputs)
    return errors::invalid_argument(Op::name, ": ", n, " outputs, more than the ", max_outputs, " an op may have");
  return ok_status();
}

// The number of inputs an op instance takes: its fixed arity, or any count >= 1 when variadic.
template <op Op>
constexpr status check_arity(std::size_t count) {
  if constexpr (Op::num_inputs == variadic) {
    if (count == 0) return errors::invalid_argument(Op::name, ": expects at least 1 input, got 0");
  } else {
    if (count != static_cast<std::size_t>(Op::num_inputs))
      return errors::invalid_argument(Op::name, ": expects ", Op::num_inputs, " input",
                                      Op::num_inputs == 1 ? "" : "s", ", got ", count);
  }
  return ok_status();
}

// Full inference for one op application: arity, then dtypes, then shapes, of output `output`.
// Messages start with the op's name. Works at compile time and at run time.
template <op Op>
constexpr result<tensor_spec> infer(const Op& o, std::span<const tensor_spec> inputs, std::size_t output = 0) {
  if (auto st = check_arity<Op>(inputs.size()); !st.ok()) return st;
  if (auto st = check_num_outputs(o); !st.ok()) return st;
  if (const std::size_t n = num_outputs_of(o); output >= n)
    return errors::invalid_argument(Op::name, ": output ", output, " does not exist (it has ", n, " output",
                                    n == 1 ? "" : "s", ")");
  std::array<dtype, 16> dtypes_small{};
  std::array<shape, 16> shapes_small{};
  if (inputs.size() > dtypes_small.size())
    return errors::invalid_argument(Op::name, ": at most ", dtypes_small.size(), " inputs are supported, got ",
                                    inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    dtypes_small[i] = inputs[i].type;
    shapes_small[i] = inputs[i].dims;
  }
  const std::span<const dtype> dtypes(dtypes_small.data(), inputs.size());
  const std::span<const shape> shapes(shapes_small.data(), inputs.size());
  auto d = [&] {
    if constexpr (multi_output_op<Op>) return o.infer_dtype(dtypes, output);
    else return o.infer_dtype(dtypes);
  }();
  if (!d.ok()) return d.status();
  auto s = [&] {
    if constexpr (multi_output_op<Op>) return o.infer_shape(shapes, output);
    else return o.infer_shape(shapes);
  }();
  if (!s.ok()) return s.status();
  if (auto st = s->check_size(); !st.ok())
    return output == 0 ? errors::invalid_argument(Op::name, ": output ", st.message())
                       : errors::invalid_argument(Op::name, ": output ", output, " ", st.message());
  return tensor_spec{*d, *s};
}

// The dtype a kernel is chosen by: that of input 0, or of the output for ops with no inputs, or of
// input Op::kernel_dtype_input for an op that names one (where: its condition is bool, its values
// are what the kernel is for).
template <op Op>
constexpr dtype kernel_dtype(std::span<const tensor_spec> inputs, const tensor_spec& output) {
  if constexpr (requires { Op::kernel_dtype_input; }) return inputs[Op::kernel_dtype_input].type;
  else return inputs.empty() ? output.type : inputs[0].type;
}

} // namespace typeflow
