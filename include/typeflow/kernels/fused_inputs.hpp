// SPDX-License-Identifier: Apache-2.0
// fused::check_inputs: what every device's fused_elementwise kernel checks before it runs. The graph
// chose each leaf's layout from static shapes; dimensions known only at run time are checked here,
// so a [1] fed where the graph expected the output's shape is an error, not a read past the end.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/ops/fused.hpp>

namespace typeflow::fused {

// The output's last dimension: the length of a row input (1 for a scalar output).
inline std::int64_t row_length(const tensor& y) { return y.rank() == 0 ? 1 : y.dim(y.rank() - 1); }

// `inputs` are as many as the tree's leaves, each with the elements its layout reads from an output y.
template <class Tree>
status check_inputs(std::string_view op, std::span<const tensor> inputs, const tensor& y) {
  constexpr std::size_t leaves = leaf_count<Tree>;
  if (inputs.size() != leaves) return errors::invalid_argument(op, ": expects ", leaves, " inputs, got ", inputs.size());
  for (std::size_t i = 0; i < leaves; ++i) {
    const leaf_layout layout = leaf_layouts<Tree>[i];
    const std::int64_t want = layout == leaf_layout::full ? y.num_elements() : layout == leaf_layout::row ? row_length(y) : 1;
    if (inputs[i].num_elements() != want)
      return errors::invalid_argument(op, ": input ", i, " has shape ", inputs[i].shape(), " but the fused ",
                                      layout == leaf_layout::full  ? "elementwise group needs "
                                      : layout == leaf_layout::row ? "group needs a row of "
                                                                   : "group needs a scalar, ",
                                      want, " elements (output shape ", y.shape(), ")");
  }
  return ok_status();
}

}  // namespace typeflow::fused
