// SPDX-License-Identifier: Apache-2.0
// CPU kernel for top_k: each row along the last dimension is ranked through an array of its
// positions, with a strict order (larger value first, NaN above every number, the lower position
// first among equals), so the result is the same whatever the selection algorithm and thread
// split. Sorted: a partial sort, O(n log k) per row (a heap, as TensorFlow's TopK for small k);
// not sorted: a selection, O(n), then the chosen positions in row order. Rows are split over the
// policy's threads.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/kernels/cpu/unary.hpp>  // host_devices
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/nn.hpp>

namespace typeflow::cpu_kernels {

template <class Op, class Device, class T>
struct top_k_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  // Whether position a of `row` ranks before position b.
  static bool before(const T* row, std::int64_t a, std::int64_t b) {
    const T va = row[a], vb = row[b];
    if constexpr (!std::numeric_limits<T>::is_integer) {
      const bool na = Eigen::numext::isnan(va), nb = Eigen::numext::isnan(vb);
      if (na || nb) return na && nb ? a < b : na;
    }
    return va > vb || (!(vb > va) && a < b);
  }

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    tensor& values = ctx.outputs[0];
    tensor& indices = ctx.outputs[1];
    const std::int64_t k = op.k;
    // The executors infer first; this kernel still never reads past a row whatever it is given.
    if (auto st = op.infer_shape(std::span<const shape>(&x.shape(), 1)); !st.ok()) return st.status();
    const std::int64_t n = x.dim(x.rank() - 1);
    if (values.num_elements() == 0) return ok_status();
    const std::int64_t rows = x.num_elements() / n;
    const T* in = x.unchecked_data<const T>();
    T* out = values.unchecked_data<T>();
    std::int64_t* out_index = indices.unchecked_data<std::int64_t>();
    const double log_k = std::log2(static_cast<double>(k) + 1);
    ctx.device.parallel_for(rows, static_cast<double>(n) * (op.sorted ? 4 * log_k : 6), [&](std::int64_t first, std::int64_t last) {
      std::vector<std::int64_t> order(static_cast<std::size_t>(n));
      for (std::int64_t r = first; r < last; ++r) {
        const T* row = in + r * n;
        std::iota(order.begin(), order.end(), std::int64_t{0});
        auto ranks_before = [row](std::int64_t a, std::int64_t b) { return before(row, a, b); };
        if (op.sorted) {
          std::partial_sort(order.begin(), order.begin() + k, order.end(), ranks_before);
        } else {
          if (k < n) std::nth_element(order.begin(), order.begin() + k, order.end(), ranks_before);
          std::sort(order.begin(), order.begin() + k);
        }
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t p = order[static_cast<std::size_t>(j)];
          out[r * k + j] = row[p];
          out_index[r * k + j] = p;
        }
      }
    });
    return ok_status();
  }
};

struct top_k_kernels : named_kernel_list<kernel_list<
    kernel_family<top_k_kernel, ops::top_k, host_devices,
                  dtypes<float, double, std::int32_t, std::int64_t, Eigen::half, Eigen::bfloat16>>>> {};

}  // namespace typeflow::cpu_kernels
