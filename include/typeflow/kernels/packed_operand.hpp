// SPDX-License-Identifier: Apache-2.0
// packs_operand<K>: a kernel that can keep one of its operands in a form of its own across runs.
// Where that operand is a variable of a static session and K::packable(op, inputs) holds, the
// session packs it (K::pack(op, inputs)) the second time a run reads the same value (a variable
// written every run, as in training, is never packed), keeps the form with the variable
// (runtime/variable_store.hpp) and runs K::compute_packed(op, ctx, form) instead of compute while
// the value stays the same; a new value (session::initialize, an assign) packs again. pack gives
// nullptr when it cannot (memory): compute then runs. matmul's Eigen kernel keeps its b packed for
// its GEMM (kernels/cpu/linalg.hpp): what ONNX Runtime does to its constant weights once per session;
// conv2d's keeps a 3x3 filter transformed for Winograd (kernels/cpu/conv2d.hpp).
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstddef>
#include <memory>
#include <span>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/kernels/kernel.hpp>

namespace typeflow {

template <class K>
concept packs_operand = requires(const typename K::op_type& o, std::span<const tensor> inputs,
                                 kernel_context<typename K::device_type>& ctx, const void* form) {
  { K::packed_input } -> std::convertible_to<std::size_t>;
  { K::packable(o, inputs) } -> std::same_as<bool>;
  { K::pack(o, inputs) } -> std::same_as<std::shared_ptr<const void>>;
  { K::compute_packed(o, ctx, form) } -> std::same_as<status>;
};

}  // namespace typeflow
