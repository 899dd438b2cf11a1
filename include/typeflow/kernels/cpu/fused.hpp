// SPDX-License-Identifier: Apache-2.0
// The host kernel of fused_elementwise<Tree>: the tree becomes one Eigen expression, assigned to
// the output by parallel_assign (or, with row inputs, by assign_range on units of rows split over
// the policy's threads), so the whole chain is one vectorised (and, on thread_pool, parallel) pass
// with no intermediate tensors. Without row inputs the pass is over the flat output; with them it
// is row by row of the output, a row input a vector in each. On bare data, fewer elements than a
// packet are computed one by one, op by op (fused_scalar), without building the expression.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
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

// The output's and the leaves' Eigen maps and data pointers over [n]: the whole output, or (with row
// leaves) one row of it, where a row leaf is a vector like the rest. What fused_eval builds the
// group's expression from (Eigen copies a TensorMap into an expression: it nests by value).
template <class T, std::size_t Leaves>
struct fused_maps {
  // Unaligned: a row starts anywhere.
  using out_map = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, Eigen::DenseIndex>>;
  using map = Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor, Eigen::DenseIndex>>;
  out_map out;
  std::array<map, Leaves> leaf;
  std::array<const T*, Leaves> data;
};

template <class T, class Node>
struct fused_eval;

template <class T, std::size_t I, fused::leaf_layout Layout>
struct fused_eval<T, fused::leaf<I, Layout>> {
  template <class Maps>
  static auto make(const Maps& m) {
    if constexpr (Layout == fused::leaf_layout::scalar) return m.out.constant(*m.data[I]);
    else return m.leaf[I];
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

// Element i of a group's expression, op by op as Eigen's evaluator computes one coefficient (its
// coeff(i), what its loop does for the elements short of a packet), from the leaves' data: for a
// few elements on bare data, where building the maps and the evaluator costs more than the ops. A
// unary op is its own Eigen expression (unary_expression, gelu_expression) on a one-element map of
// its operand, so its scalar form is not written a second time; that expression's evaluator is set
// up and cleaned up as Eigen's loop does it (for the coefficient-wise expressions there are, both
// do nothing). Inline, as Eigen's evaluators are (neither is forced): where the compiler contracts
// a multiply and an add into one instruction (FMA, -ffp-contract=fast), it may do so in one path
// and not the other.
template <class T, class Node>
struct fused_scalar;

template <class T, std::size_t I, fused::leaf_layout Layout>
struct fused_scalar<T, fused::leaf<I, Layout>> {
  template <std::size_t Leaves>
  static EIGEN_STRONG_INLINE T at(const std::array<const T*, Leaves>& data, Eigen::Index i) {
    if constexpr (Layout == fused::leaf_layout::scalar) return *data[I];
    else return data[I][i];
  }
};

template <class T, double Value>
struct fused_scalar<T, fused::constant<Value>> {
  template <std::size_t Leaves>
  static EIGEN_STRONG_INLINE T at(const std::array<const T*, Leaves>&, Eigen::Index) {
    return static_cast<T>(Value);
  }
};

template <class T, auto Op, class X>
struct fused_scalar<T, fused::unary<Op, X>> {
  template <std::size_t Leaves>
  static EIGEN_STRONG_INLINE T at(const std::array<const T*, Leaves>& data, Eigen::Index i) {
    using op_type = std::remove_cvref_t<decltype(Op)>;
    const T x = fused_scalar<T, X>::at(data, i);
    const Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor, Eigen::DenseIndex>> m(&x, 1);
    if constexpr (std::is_same_v<op_type, ops::gelu>) return coefficient(gelu_expression<Op.approximate, T>(m));
    else return coefficient(unary_expression<op_type, T>(Op, m));
  }

 private:
  // The one coefficient of expression e (over a one-element map).
  template <class E>
  static EIGEN_STRONG_INLINE T coefficient(const E& e) {
    const Eigen::DefaultDevice device;
    Eigen::TensorEvaluator<const E, Eigen::DefaultDevice> evaluator(e, device);
    evaluator.evalSubExprsIfNeeded(nullptr);
    const T value = static_cast<T>(evaluator.coeff(0));
    evaluator.cleanup();
    return value;
  }
};

template <class T, auto Op, class A, class B>
struct fused_scalar<T, fused::binary<Op, A, B>> {
  template <std::size_t Leaves>
  static EIGEN_STRONG_INLINE T at(const std::array<const T*, Leaves>& data, Eigen::Index i) {
    return binary_functor<std::remove_cvref_t<decltype(Op)>, T>()(fused_scalar<T, A>::at(data, i), fused_scalar<T, B>::at(data, i));
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
  // A tree that is one leaf would be a copy, which Eigen's evaluator does whole before its loop over a
  // range (assign_range); the graph fuses only ops.
  static_assert(tree::size > 0,
                "typeflow: fused_elementwise<Tree> needs at least one op in Tree; a tree that is a bare leaf or "
                "constant is a copy: use the input itself (static graphs make fused groups of ops only)");

  static status compute(const Op&, kernel_context<Device>& ctx) {
    const tensor& y = ctx.outputs[0];
    if (auto st = fused::check_inputs<tree>(Op::name, ctx.inputs, y); !st.ok()) return st;
    const Eigen::Index n = y.num_elements();
    if (n == 0) return ok_status();
    const Eigen::Index inner = tree::has_row ? fused::row_length(y) : n;
    run(ctx, n / inner, inner, std::make_index_sequence<leaves>{});
    return ok_status();
  }

  // n elements of every leaf and of the output, on bare data (elementwise_data_kernel): one pass on
  // this thread (a row leaf then holds the one row, a scalar leaf is a group of one element). Fewer
  // elements than Eigen's loop takes a packet for: element by element (fused_scalar), the same
  // operations on the same values as that loop, so the same results (to the bit where the compiler
  // contracts no multiply and add into one instruction; within that rounding where it does, as
  // Eigen's own packet and scalar paths differ).
  static status compute_elements(const Op&, const std::array<const void*, leaves>& in, void* out, std::int64_t n) {
    if (n < scalar_below) {
      const std::array<const T*, leaves> data = [&]<std::size_t... Is>(std::index_sequence<Is...>) {
        return std::array<const T*, leaves>{static_cast<const T*>(in[Is])...};
      }(std::make_index_sequence<leaves>{});
      T* y = static_cast<T*>(out);
      for (Eigen::Index i = 0; i < n; ++i) y[i] = detail::fused_scalar<T, tree>::at(data, i);
    } else {
      elements(in, static_cast<T*>(out), n, std::make_index_sequence<leaves>{});
    }
    return ok_status();
  }

  // The size below which Eigen's loop evaluates the group's expression (elements) coefficient by
  // coefficient: its packet, or any size when it does not vectorise.
  using maps_type = detail::fused_maps<T, leaves>;
  using assignment_type = typeflow::detail::assignment<
      typename maps_type::out_map, decltype(detail::fused_eval<T, tree>::make(std::declval<const maps_type&>()))>;
  static constexpr Eigen::Index scalar_below = [] {
    if constexpr (assignment_type::vectorized) return Eigen::Index{assignment_type::range::PacketSize};
    else return std::numeric_limits<Eigen::Index>::max();
  }();

 private:
  template <std::size_t... Is>
  static void elements(const std::array<const void*, leaves>& in, T* out, Eigen::Index n, std::index_sequence<Is...>) {
    const std::array<const T*, leaves> data{static_cast<const T*>(in[Is])...};
    const Eigen::array<Eigen::Index, 1> dims{n};
    const maps_type m{typename maps_type::out_map(out, dims), {typename maps_type::map(data[Is], dims)...}, data};
    assign_range(m.out, detail::fused_eval<T, tree>::make(m), 0, n);
  }

  // Output elements a unit of the split covers at most: a long row is cut into chunks, so that a few
  // rows still spread over the threads.
  static constexpr Eigen::Index max_chunk = Eigen::Index{1} << 14;
  // Rows shorter than this go several to a unit: each row input is then repeated over `tile`
  // elements, and a unit is as many rows as the tile holds.
  static constexpr Eigen::Index tile = 256;

  // The output as `outer` rows of `inner` (one row without row leaves), each unit of rows one pass
  // of the group's expression over vectors, where a row leaf is the same vector (its row, or the
  // tile of it) in every unit. Eigen's broadcast of a row over [outer, inner] instead divides each
  // packet's index by the row's length, a 64-bit division (tens of cycles on Skylake-class cores):
  // relu(x + bias) over the CNN's [784, 32] and [784, 64] outputs took 13% of the CNN's cycles at
  // batch 1 on a 2-core Xeon.
  template <std::size_t... Is>
  static void run(kernel_context<Device>& ctx, Eigen::Index outer, Eigen::Index inner, std::index_sequence<Is...>) {
    static constexpr auto layouts = fused::leaf_layouts<tree>;
    T* out = ctx.outputs[0].template unchecked_data<T>();
    std::array<const T*, leaves> data{ctx.inputs[Is].template unchecked_data<const T>()...};
    const Eigen::Index rows_per_unit = std::max<Eigen::Index>(1, std::min(outer, tile / inner));
    const Eigen::Index length = rows_per_unit * inner;  // of every map
    std::array<std::array<T, tree::has_row ? tile : 0>, leaves> tiles;
    if constexpr (tree::has_row)
      if (rows_per_unit > 1)
        for (std::size_t i = 0; i < leaves; ++i)
          if (layouts[i] == fused::leaf_layout::row) {
            for (Eigen::Index j = 0; j < length; ++j) tiles[i][static_cast<std::size_t>(j)] = data[i][j % inner];
            data[i] = tiles[i].data();
          }
    const Eigen::array<Eigen::Index, 1> dims{length};
    auto at_row = [&](Eigen::Index r) {
      return maps_type{typename maps_type::out_map(out + r * inner, dims),
                       {typename maps_type::map(data[Is] + (layouts[Is] == fused::leaf_layout::full ? r * inner : 0), dims)...},
                       data};
    };
    const maps_type first_unit = at_row(0);
    if (rows_per_unit == outer) {  // one unit: Eigen's split of it
      typename maps_type::out_map target = first_unit.out;
      parallel_assign(ctx.device, target, detail::fused_eval<T, tree>::make(first_unit));
      return;
    }
    // A chunk is a multiple of 64 elements (four packets of any type): where Eigen's assertions are
    // on, its vectorised loop asserts that a range starts on a packet.
    const Eigen::Index even = (length + max_chunk - 1) / max_chunk;
    const Eigen::Index chunk = (length + even * 64 - 1) / (even * 64) * 64;
    const Eigen::Index chunks = (length + chunk - 1) / chunk;
    const double cycles = assign_cycles(first_unit.out, detail::fused_eval<T, tree>::make(first_unit)) * static_cast<double>(chunk);
    const Eigen::Index groups = (outer + rows_per_unit - 1) / rows_per_unit;
    ctx.device.parallel_for(groups * chunks, cycles, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t unit = first; unit < last; ++unit) {
        const Eigen::Index r = unit / chunks * rows_per_unit;
        const maps_type m = at_row(r);
        const Eigen::Index begin = unit % chunks * chunk;
        const Eigen::Index end = std::min(std::min(outer - r, rows_per_unit) * inner, begin + chunk);
        assign_range(m.out, detail::fused_eval<T, tree>::make(m), begin, end);
      }
    });
  }
};

using fused_kernel_types = dtypes<float, double, Eigen::half, Eigen::bfloat16>;

struct fused_kernels
    : named_kernel_list<kernel_list<
          kernel_template_family<fused_elementwise_kernel, ops::fused_elementwise, host_devices, fused_kernel_types>>> {};

}  // namespace typeflow::cpu_kernels
