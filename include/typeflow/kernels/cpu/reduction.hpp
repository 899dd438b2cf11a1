// SPDX-License-Identifier: Apache-2.0
// CPU kernels for the reductions and argmax. As in TensorFlow's ReductionHelper, the input's
// dimensions are first regrouped: size-1 dimensions are dropped and neighbours that are both
// kept or both reduced are merged, so [2, 3, 4, 5] over axes (2, 3) is [6, 20] over axis 1.
// The common results, [r], [k, r], [r, k], [k, r, k] and [r, k, r], are one Eigen reduction
// each (vectorised; split over threads on thread_pool). Anything else is first copied into
// [kept, reduced] order and reduced as [k, r].
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <typeflow/core/detail/dependent_false.hpp>
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/reduction.hpp>

namespace typeflow::cpu_kernels {

namespace detail {

// The input's dimensions after regrouping: dims[0, count) alternate between kept and reduced
// groups, none of extent 1. kept and reduced are the element counts of each role (1 when none).
struct reduction_layout {
  std::array<std::int64_t, max_rank> dims{};
  std::array<bool, max_rank> is_reduced{};
  std::size_t count = 0;
  std::int64_t kept = 1;
  std::int64_t reduced = 1;
};

inline reduction_layout make_reduction_layout(const shape& x, const ops::detail::reduction_mask& reduced) {
  reduction_layout l;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    const std::int64_t d = x[i];
    if (reduced[i]) l.reduced *= d;
    else l.kept *= d;
    if (d == 1) continue;
    if (l.count > 0 && l.is_reduced[l.count - 1] == reduced[i]) {
      l.dims[l.count - 1] *= d;
    } else {
      l.dims[l.count] = d;
      l.is_reduced[l.count] = reduced[i];
      ++l.count;
    }
  }
  return l;
}

// Copies `in` (laid out as `l`) to `out` as a row-major [l.kept, l.reduced] matrix: the kept
// groups in order, then the reduced groups in order. Precondition: at least one reduced group.
template <class T, class Device>
void gather_reduced_last(Device& device, const reduction_layout& l, const T* in, T* out) {
  std::array<std::int64_t, max_rank> kept_dims{}, kept_strides{}, reduced_dims{}, reduced_strides{};
  std::size_t num_kept = 0, num_reduced = 0;
  std::int64_t stride = 1;
  for (std::size_t g = l.count; g-- > 0;) {
    if (l.is_reduced[g]) {
      reduced_dims[num_reduced] = l.dims[g];
      reduced_strides[num_reduced++] = stride;
    } else {
      kept_dims[num_kept] = l.dims[g];
      kept_strides[num_kept++] = stride;
    }
    stride *= l.dims[g];
  }
  // Both lists were filled innermost first; index 0 is the innermost group of each role.
  const std::int64_t run = reduced_dims[0], run_stride = reduced_strides[0];
  device.parallel_for(l.kept, static_cast<double>(l.reduced), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t row = first; row < last; ++row) {
      std::int64_t offset = 0;
      for (std::size_t j = 0, rest = static_cast<std::size_t>(row); j < num_kept; ++j) {
        offset += static_cast<std::int64_t>(rest % static_cast<std::size_t>(kept_dims[j])) * kept_strides[j];
        rest /= static_cast<std::size_t>(kept_dims[j]);
      }
      T* dst = out + row * l.reduced;
      std::array<std::int64_t, max_rank> index{};  // over the reduced groups outside the innermost
      for (std::int64_t r = 0; r < l.reduced; r += run) {
        const T* src = in + offset;
        for (std::int64_t i = 0; i < run; ++i) dst[r + i] = src[i * run_stride];
        for (std::size_t j = 1; j < num_reduced; ++j) {
          offset += reduced_strides[j];
          if (++index[j] < reduced_dims[j]) break;
          offset -= reduced_strides[j] * reduced_dims[j];
          index[j] = 0;
        }
      }
    }
  });
}

// What each reduction gives over an empty extent (TensorFlow's identities; see ops/reduction.hpp).
template <class Op, class T>
T reduction_identity() {
  using traits = Eigen::NumTraits<T>;
  constexpr bool integer = traits::IsInteger;
  if constexpr (std::is_same_v<Op, ops::reduce_sum>) return T(0);
  else if constexpr (std::is_same_v<Op, ops::reduce_prod>) return T(1);
  else if constexpr (std::is_same_v<Op, ops::reduce_mean>) return integer ? T(0) : traits::quiet_NaN();
  else if constexpr (std::is_same_v<Op, ops::reduce_max>) return integer ? traits::lowest() : T(-traits::infinity());
  else if constexpr (std::is_same_v<Op, ops::reduce_min>) return integer ? traits::highest() : traits::infinity();
  else static_assert(typeflow::detail::dependent_false<Op>, "reduction_identity: Op is not a reduction");
}

// The Eigen reduction of `in` over `dims` for Op, accumulating in Acc. `count` is the number of
// elements each output combines (> 0), which the mean divides by.
template <class Op, class Acc, class In, class Dims>
auto reduction_expression(const In& in, const Dims& dims, std::int64_t count) {
  if constexpr (std::is_same_v<Op, ops::reduce_sum>) return in.sum(dims);
  else if constexpr (std::is_same_v<Op, ops::reduce_mean>) return in.sum(dims) / static_cast<Acc>(count);
  else if constexpr (std::is_same_v<Op, ops::reduce_prod>) return in.prod(dims);
  else if constexpr (std::is_same_v<Op, ops::reduce_max>) return in.template maximum<Dims, Eigen::PropagateNaN>(dims);
  else if constexpr (std::is_same_v<Op, ops::reduce_min>) return in.template minimum<Dims, Eigen::PropagateNaN>(dims);
  else static_assert(typeflow::detail::dependent_false<Op>, "reduction_expression: Op is not a reduction");
}

// out = Op over `dims` of `in`. f16 accumulates in f32 and rounds once at the end.
template <class Op, class T, class EigenDevice, class Out, class In, class Dims>
void evaluate_reduction(const EigenDevice& device, Out out, const In& in, const Dims& dims, std::int64_t count) {
  if constexpr (std::is_same_v<T, Eigen::half>)
    out.device(device) =
        reduction_expression<Op, float>(in.template cast<float>(), dims, count).template cast<Eigen::half>();
  else out.device(device) = reduction_expression<Op, T>(in, dims, count);
}

}  // namespace detail

// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod.
template <class Op, class Device, class T>
struct reduction_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    const auto& device = ctx.device.eigen();
    if (y.num_elements() == 0) return ok_status();
    if (x.num_elements() == 0) {  // a reduced extent is empty: every output is the identity
      auto out = y.unchecked_flat<T>();
      out.device(device) = out.constant(detail::reduction_identity<Op, T>());
      return ok_status();
    }
    auto reduced = ops::detail::reduced_axes(Op::name, op.axes, x.shape());
    if (!reduced.ok()) return reduced.status();
    const detail::reduction_layout l = detail::make_reduction_layout(x.shape(), *reduced);
    const T* in = x.unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    const std::int64_t count = l.reduced;
    using Eigen::type2index;

    if (l.reduced == 1) {  // only size-1 axes are reduced: every output is its one input
      eigen_tensor_map<T, 1>(out, l.kept).device(device) = eigen_const_tensor_map<T, 1>(in, l.kept);
      return ok_status();
    }
    if (l.count == 1) {  // [r] -> []
      detail::evaluate_reduction<Op, T>(device, eigen_tensor_map<T, 0>(out), eigen_const_tensor_map<T, 1>(in, count),
                                        Eigen::IndexList<type2index<0>>(), count);
      return ok_status();
    }
    if (l.count == 2) {
      const eigen_const_tensor_map<T, 2> x2(in, l.dims[0], l.dims[1]);
      if (l.is_reduced[1])  // [k, r] -> [k]
        detail::evaluate_reduction<Op, T>(device, eigen_tensor_map<T, 1>(out, l.kept), x2,
                                          Eigen::IndexList<type2index<1>>(), count);
      else  // [r, k] -> [k]
        detail::evaluate_reduction<Op, T>(device, eigen_tensor_map<T, 1>(out, l.kept), x2,
                                          Eigen::IndexList<type2index<0>>(), count);
      return ok_status();
    }
    if (l.count == 3) {
      const eigen_const_tensor_map<T, 3> x3(in, l.dims[0], l.dims[1], l.dims[2]);
      if (l.is_reduced[1])  // [k0, r, k1] -> [k0, k1]
        detail::evaluate_reduction<Op, T>(device, eigen_tensor_map<T, 2>(out, l.dims[0], l.dims[2]), x3,
                                          Eigen::IndexList<type2index<1>>(), count);
      else  // [r0, k, r1] -> [k]
        detail::evaluate_reduction<Op, T>(device, eigen_tensor_map<T, 1>(out, l.kept), x3,
                                          Eigen::IndexList<type2index<0>, type2index<2>>(), count);
      return ok_status();
    }
    // Four or more groups: copy into [kept, reduced] (as much memory as the input), then [k, r].
    auto scratch = ctx.device.allocate(dtype_of<T>, shape{l.kept, l.reduced});
    if (!scratch.ok()) return scratch.status();
    T* gathered = scratch->template unchecked_data<T>();
    detail::gather_reduced_last(ctx.device, l, in, gathered);
    detail::evaluate_reduction<Op, T>(device, eigen_tensor_map<T, 1>(out, l.kept),
                                      eigen_const_tensor_map<T, 2>(gathered, l.kept, l.reduced),
                                      Eigen::IndexList<type2index<1>>(), count);
    return ok_status();
  }
};

// argmax over [outer, n, inner] -> [outer, inner], with Eigen's tuple reducer (which keeps the
// smaller index on ties, so the first maximum wins); select_last_index reduces the input reversed
// along the axis and counts from the end.
template <class Op, class Device, class T>
struct argmax_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    auto axis = normalize_axis(op.axis, x.rank());
    if (!axis.ok()) return errors::invalid_argument(Op::name, ": ", axis.status().message());
    const std::int64_t n = x.dim(*axis);
    // Inference rejects an empty axis it can see; one that was unknown until now lands here.
    if (n == 0)
      return errors::invalid_argument(Op::name, ": axis ", *axis, " of the input (shape ", x.shape(),
                                      ") is empty, so it has no largest element");
    const std::int64_t outer = x.shape().product(0, *axis);
    const std::int64_t inner = x.shape().product(*axis + 1, x.rank());
    if (outer == 0 || inner == 0) return ok_status();
    const eigen_const_tensor_map<T, 3> x3(x.unchecked_data<const T>(), outer, n, inner);
    eigen_tensor_map<std::int64_t, 2> y2(y.unchecked_data<std::int64_t>(), outer, inner);
    if (op.select_last_index) {
      const Eigen::array<bool, 3> along{false, true, false};
      y2.device(ctx.device.eigen()) = (n - 1) - x3.reverse(along).argmax(1).template cast<std::int64_t>();
    } else {
      y2.device(ctx.device.eigen()) = x3.argmax(1).template cast<std::int64_t>();
    }
    return ok_status();
  }
};

using sum_kernel_types = dtypes<float, double, std::int32_t, std::int64_t, Eigen::half>;
using reduction_kernel_types = dtypes<float, double, std::int32_t, std::int64_t>;

struct reduction_kernels : named_kernel_list<kernel_list<
    kernel_family<reduction_kernel, ops::reduce_sum, host_devices, sum_kernel_types>,
    kernel_family<reduction_kernel, ops::reduce_mean, host_devices, sum_kernel_types>,
    kernel_family<reduction_kernel, ops::reduce_max, host_devices, reduction_kernel_types>,
    kernel_family<reduction_kernel, ops::reduce_min, host_devices, reduction_kernel_types>,
    kernel_family<reduction_kernel, ops::reduce_prod, host_devices, reduction_kernel_types>,
    kernel_family<argmax_kernel, ops::argmax, host_devices, dtypes<float, double, std::int32_t, std::int64_t,
                                                                     std::uint8_t>>>> {};

}  // namespace typeflow::cpu_kernels
