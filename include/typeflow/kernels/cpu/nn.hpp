// SPDX-License-Identifier: Apache-2.0
// CPU kernels for bias_add, softmax, log_softmax, batch_norm and layer_norm. bias_add and batch_norm are one
// Eigen broadcast expression over the [rows, channels] view, evaluated by parallel_assign; softmax
// works on cache-sized blocks of rows (or columns), the blocks split over the policy's threads.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/parallel_assign.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/nn.hpp>

namespace typeflow::cpu_kernels {

// value [rows, c] + bias [c], the bias broadcast over the rows.
template <class Op, class Device, class T>
struct eigen_bias_add_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    const tensor& bias = ctx.inputs[1];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const std::size_t channel_axis = x.rank() - 1;
    const Eigen::array<Eigen::Index, 2> one_by_channels{1, bias.dim(0)};
    const Eigen::array<Eigen::Index, 2> rows_by_one{x.num_elements() / bias.dim(0), 1};
    parallel_assign(ctx.device, y.unchecked_flat_outer<T>(channel_axis),
                    x.unchecked_flat_outer<const T>(channel_axis) +
                        bias.unchecked_eigen<const T, 1>().reshape(one_by_channels).broadcast(rows_by_one));
    return ok_status();
  }
};

// y = x * scale' + offset' per channel, with scale' = scale / sqrt(variance + epsilon) and
// offset' = offset - mean * scale' computed once per channel.
template <class Op, class Device, class T>
struct eigen_batch_norm_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    using vector = Eigen::Tensor<T, 1, Eigen::RowMajor, Eigen::DenseIndex>;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const std::int64_t channels = x.dim(x.rank() - 1);
    const T* scale = ctx.inputs[1].template unchecked_data<const T>();
    const T* offset = ctx.inputs[2].template unchecked_data<const T>();
    const T* mean = ctx.inputs[3].template unchecked_data<const T>();
    const T* variance = ctx.inputs[4].template unchecked_data<const T>();
    vector folded_scale(channels), folded_offset(channels);
    for (std::int64_t ch = 0; ch < channels; ++ch) {
      folded_scale(ch) = scale[ch] / std::sqrt(variance[ch] + static_cast<T>(op.epsilon));
      folded_offset(ch) = offset[ch] - mean[ch] * folded_scale(ch);
    }
    const std::size_t channel_axis = x.rank() - 1;
    const Eigen::array<Eigen::Index, 2> one_by_channels{1, channels};
    const Eigen::array<Eigen::Index, 2> rows_by_one{x.num_elements() / channels, 1};
    parallel_assign(ctx.device, y.unchecked_flat_outer<T>(channel_axis),
                    x.unchecked_flat_outer<const T>(channel_axis) *
                            folded_scale.reshape(one_by_channels).broadcast(rows_by_one) +
                        folded_offset.reshape(one_by_channels).broadcast(rows_by_one));
    return ok_status();
  }
};

// layer_norm over the trailing `cols` elements of each of `rows` rows: mean and biased variance
// in float (double for f64), two passes over the row (exact enough for rows of any length where
// one pass of sums of squares would cancel), then the affine map with scale and offset. Rows are
// split over the policy's threads.
template <class Op, class Device, class T>
struct layer_norm_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const std::size_t axis = *normalize_axis(op.axis, x.rank());  // checked by inference
    const std::int64_t rows = x.shape().product(0, axis);
    const std::int64_t cols = x.shape().product(axis, x.rank());
    const T* in = x.unchecked_data<const T>();
    const T* scale = ctx.inputs[1].template unchecked_data<const T>();
    const T* offset = ctx.inputs[2].template unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    const acc epsilon = static_cast<acc>(op.epsilon);
    // Eigen's reductions keep several partial sums in vector registers (a scalar loop is one
    // dependent addition an element, as the compiler may not reorder floating-point sums); f16 and
    // bf16 rows are read into float through its cast.
    using row_array = Eigen::Array<T, 1, Eigen::Dynamic>;
    const Eigen::Map<const row_array> g(scale, cols), c(offset, cols);
    ctx.device.parallel_for(rows, 12.0 * static_cast<double>(cols), [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const auto row = Eigen::Map<const row_array>(in + r * cols, cols).template cast<acc>();
        const acc mean = row.mean();
        const acc inv = acc(1) / std::sqrt((row - mean).square().mean() + epsilon);
        Eigen::Map<row_array>(out + r * cols, cols) =
            ((row - mean) * inv * g.template cast<acc>() + c.template cast<acc>()).template cast<T>();
      }
    });
    return ok_status();
  }

 private:
  using acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
};

// softmax and log_softmax along one axis of x, seen as [outer, n, inner] with n the axis.
// Numerically stable: the maximum of each slice is subtracted before exponentiating, so inputs
// of any magnitude give finite results. f16 and bf16 are computed in float.
template <class Op, class Device, class T>
struct softmax_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static_assert(std::is_same_v<Op, ops::softmax> || std::is_same_v<Op, ops::log_softmax>,
                "softmax_kernel<Op, ...>: Op must be ops::softmax or ops::log_softmax");

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const std::size_t axis = *normalize_axis(op.axis, x.rank());  // checked by inference
    const std::int64_t outer = x.shape().product(0, axis);
    const std::int64_t n = x.dim(axis);
    const std::int64_t inner = x.shape().product(axis + 1, x.rank());
    if (inner == 1) normalize_rows(ctx.device, x.unchecked_data<const T>(), y.unchecked_data<T>(), outer, n);
    else normalize_columns(ctx.device, x.unchecked_data<const T>(), y.unchecked_data<T>(), outer, n, inner);
    return ok_status();
  }

 private:
  using acc = std::conditional_t<std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>, float, T>;
  using acc_array = Eigen::Array<acc, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using array = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using strided_map = Eigen::Map<array, Eigen::Unaligned, Eigen::OuterStride<>>;
  using const_strided_map = Eigen::Map<const array, Eigen::Unaligned, Eigen::OuterStride<>>;

  // Elements per block: the working copy of a block (in acc) stays in L1/L2 across its passes.
  static constexpr std::int64_t block_elements = 8192;
  // Cycles per element: a vectorised exp, a max, a sum and a division or a subtraction.
  static constexpr double element_cost = 30;

  // [outer, n] with each row normalised: x and y are contiguous rows.
  static void normalize_rows(Device& device, const T* x, T* y, std::int64_t rows, std::int64_t n) {
    const std::int64_t block_rows = std::max<std::int64_t>(1, block_elements / n);
    device.parallel_for(rows, element_cost * static_cast<double>(n), [&](std::int64_t first, std::int64_t last) {
      const auto most = static_cast<std::size_t>(std::min(block_rows, last - first));
      scratch_buffer<acc> work(most * static_cast<std::size_t>(n));
      scratch_buffer<acc> reduced(most);
      for (std::int64_t r = first; r < last; r += block_rows) {
        const std::int64_t count = std::min(block_rows, last - r);
        Eigen::Map<acc_array> s(work.data(), count, n);
        Eigen::Map<Eigen::Array<acc, Eigen::Dynamic, 1>> per_row(reduced.data(), count);
        s = const_strided_map(x + r * n, count, n, Eigen::OuterStride<>(n)).template cast<acc>();
        per_row = s.rowwise().maxCoeff();
        s.colwise() -= per_row;
        if constexpr (std::is_same_v<Op, ops::log_softmax>) {
          per_row = s.exp().rowwise().sum().log();
          s.colwise() -= per_row;
        } else {
          s = s.exp();
          per_row = s.rowwise().sum();
          s.colwise() /= per_row;
        }
        strided_map(y + r * n, count, n, Eigen::OuterStride<>(n)) = s.template cast<T>();
      }
    });
  }

  // [outer, n, inner] with each column (o, :, j) normalised: the work is split over the
  // outer * inner columns, a block being up to block_elements / n adjacent columns of one o.
  static void normalize_columns(Device& device, const T* x, T* y, std::int64_t outer, std::int64_t n,
                                std::int64_t inner) {
    const std::int64_t block_columns = std::max<std::int64_t>(1, block_elements / n);
    device.parallel_for(outer * inner, element_cost * static_cast<double>(n),
                        [&](std::int64_t first, std::int64_t last) {
      const auto most = static_cast<std::size_t>(std::min(block_columns, last - first));
      scratch_buffer<acc> work(most * static_cast<std::size_t>(n));
      scratch_buffer<acc> reduced(most);
      for (std::int64_t col = first; col < last;) {
        const std::int64_t o = col / inner;
        const std::int64_t j = col % inner;
        const std::int64_t count = std::min({block_columns, inner - j, last - col});
        const std::int64_t start = o * n * inner + j;
        Eigen::Map<acc_array> s(work.data(), n, count);
        Eigen::Map<Eigen::Array<acc, 1, Eigen::Dynamic>> per_column(reduced.data(), count);
        s = const_strided_map(x + start, n, count, Eigen::OuterStride<>(inner)).template cast<acc>();
        per_column = s.colwise().maxCoeff();
        s.rowwise() -= per_column;
        if constexpr (std::is_same_v<Op, ops::log_softmax>) {
          per_column = s.exp().colwise().sum().log();
          s.rowwise() -= per_column;
        } else {
          s = s.exp();
          per_column = s.colwise().sum();
          s.rowwise() /= per_column;
        }
        strided_map(y + start, n, count, Eigen::OuterStride<>(inner)) = s.template cast<T>();
        col += count;
      }
    });
  }
};

struct nn_kernels : named_kernel_list<kernel_list<
    kernel_family<eigen_bias_add_kernel, ops::bias_add, host_devices, dtypes<float, double, std::int32_t, std::int64_t>>,
    kernel_family<softmax_kernel, ops::softmax, host_devices, float_kernel_types>,
    kernel_family<softmax_kernel, ops::log_softmax, host_devices, float_kernel_types>,
    kernel_family<eigen_batch_norm_kernel, ops::batch_norm, host_devices, float_types>,
    kernel_family<layer_norm_kernel, ops::layer_norm, host_devices, float_kernel_types>>> {};

}  // namespace typeflow::cpu_kernels
