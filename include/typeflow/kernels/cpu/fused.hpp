// SPDX-License-Identifier: Apache-2.0
// The host kernel of fused_elementwise<Tree>: the tree becomes one Eigen expression, assigned to
// the output by parallel_assign, so the whole chain is one vectorised (and, on thread_pool,
// parallel) pass with no intermediate tensors. Without row inputs the pass is over
// the flat output; with them it is over [outer, n], the rows broadcast over the outer dimension.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/cpu.hpp>
#include <typeflow/device/parallel_assign.hpp>
#include <typeflow/device/thread_pool.hpp>
#include <typeflow/kernels/cpu/binary.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/fused_inputs.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/fused.hpp>

namespace typeflow::cpu_kernels {

namespace detail {

// The output's and the leaves' Eigen maps and data pointers, made once a call: what fused_eval
// builds the group's expression from (Eigen copies a TensorMap into an expression: it nests by value).
template <class T, int Rank, std::size_t Leaves>
struct fused_maps {
  using map = eigen_const_tensor_map<T, Rank>;
  using row_map = eigen_const_tensor_map<T, 1>;
  eigen_tensor_map<T, Rank> out;
  std::array<map, Leaves> full;
  std::array<row_map, Leaves> row;
  std::array<const T*, Leaves> data;
  Eigen::Index outer, inner;
};

template <class T, class Node>
struct fused_eval;

template <class T, std::size_t I, fused::leaf_layout Layout>
struct fused_eval<T, fused::leaf<I, Layout>> {
  template <class Maps>
  static auto make(const Maps& m) {
    if constexpr (Layout == fused::leaf_layout::scalar) return m.out.constant(*m.data[I]);
    else if constexpr (Layout == fused::leaf_layout::full) return m.full[I];
    else
      return m.row[I]
          .reshape(Eigen::array<Eigen::Index, 2>{1, m.inner})
          .broadcast(Eigen::array<Eigen::Index, 2>{m.outer, 1});
  }
};

template <class T, double Value>
struct fused_eval<T, fused::constant<Value>> {
  template <class Maps>
  static auto make(const Maps& m) {
    return m.out.constant(static_cast<T>(Value));
  }
};

template <class T, auto Op, class X>
struct fused_eval<T, fused::unary<Op, X>> {
  template <class Maps>
  static auto make(const Maps& m) {
    using op_type = std::remove_cvref_t<decltype(Op)>;
    if constexpr (std::is_same_v<op_type, ops::gelu>) return gelu_expression<Op.approximate, T>(fused_eval<T, X>::make(m));
    else return unary_expression<op_type, T>(Op, fused_eval<T, X>::make(m));
  }
};

template <class T, auto Op, class A, class B>
struct fused_eval<T, fused::binary<Op, A, B>> {
  template <class Maps>
  static auto make(const Maps& m) {
    return fused_eval<T, A>::make(m).binaryExpr(fused_eval<T, B>::make(m), binary_functor<std::remove_cvref_t<decltype(Op)>, T>());
  }
};

}  // namespace detail

template <class Op, class Device, class T>
struct fused_elementwise_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  using tree = typename Op::tree;
  static constexpr std::size_t leaves = fused::leaf_count<tree>;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    const tensor& y = ctx.outputs[0];
    if (auto st = fused::check_inputs<tree>(Op::name, ctx.inputs, y); !st.ok()) return st;
    const Eigen::Index n = y.num_elements();
    if (n == 0) return ok_status();
    const Eigen::Index inner = fused::row_length(y);
    if constexpr (tree::has_row) return run<2>(ctx, n / inner, inner, std::make_index_sequence<leaves>{});
    else return run<1>(ctx, n, 1, std::make_index_sequence<leaves>{});
  }

 private:
  template <int Rank, std::size_t... Is>
  static status run(kernel_context<Device>& ctx, Eigen::Index outer, Eigen::Index inner, std::index_sequence<Is...>) {
    using maps_type = detail::fused_maps<T, Rank, leaves>;
    const tensor& y = ctx.outputs[0];
    auto dims = [&] {
      if constexpr (Rank == 1) return Eigen::array<Eigen::Index, 1>{outer};
      else return Eigen::array<Eigen::Index, 2>{outer, inner};
    }();
    const maps_type maps{
        eigen_tensor_map<T, Rank>(y.unchecked_data<T>(), dims),
        {typename maps_type::map(ctx.inputs[Is].template unchecked_data<const T>(), dims)...},
        {typename maps_type::row_map(ctx.inputs[Is].template unchecked_data<const T>(), inner)...},
        {ctx.inputs[Is].template unchecked_data<const T>()...},
        outer,
        inner};
    eigen_tensor_map<T, Rank> out = maps.out;
    parallel_assign(ctx.device, out, detail::fused_eval<T, tree>::make(maps));
    return ok_status();
  }
};

using fused_kernel_types = dtypes<float, double, Eigen::half, Eigen::bfloat16>;

struct fused_kernels
    : named_kernel_list<kernel_list<
          kernel_template_family<fused_elementwise_kernel, ops::fused_elementwise, host_devices, fused_kernel_types>>> {};

}  // namespace typeflow::cpu_kernels
