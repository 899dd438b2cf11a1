// SPDX-License-Identifier: Apache-2.0
// CPU kernels for the array ops. They move elements without computing on them, so they work on
// the elements' bits: every dtype of one size shares one instantiation of the Eigen code (as
// TensorFlow's transpose does), which keeps the compile time of the Eigen rank dispatch to four
// element types instead of nine. Before Eigen sees a tensor, dimensions that stay contiguous
// through the op are collapsed, so most calls run at rank 2 or 3 whatever the tensors' rank.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/device/parallel_assign.hpp>
#include <typeflow/kernels/cpu/detail/broadcast.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/array.hpp>

namespace typeflow::cpu_kernels {

namespace detail::movement {

// The unsigned integer with the size of T: what the kernels copy. TensorFlow's transpose moves
// floats as uint32 the same way; the bits are only copied, never interpreted.
template <class T>
using bits_t = std::conditional_t<
    sizeof(T) == 1, std::uint8_t,
    std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

// Views at arbitrary addresses: borrowed tensors need not be 16-byte aligned, so these maps
// never promise alignment to Eigen (aligned packet loads would fault on them).
template <class S, int Rank>
using map = Eigen::TensorMap<Eigen::Tensor<S, Rank, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;
template <class S, int Rank>
using const_map = Eigen::TensorMap<Eigen::Tensor<const S, Rank, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;

// A tensor's dimensions after collapsing, with per-dimension attributes (slice begins, pad
// widths, a permutation) carried along.
struct collapsed {
  std::array<std::int64_t, max_rank> dims{};
  std::array<std::int64_t, max_rank> a{};  // slice: begin;  pad: before;  transpose: permutation
  std::array<std::int64_t, max_rank> b{};  // slice: size;   pad: after
  int rank = 0;

  template <int Rank>
  Eigen::DSizes<Eigen::DenseIndex, Rank> sizes(const std::array<std::int64_t, max_rank>& v) const {
    Eigen::DSizes<Eigen::DenseIndex, Rank> d;
    for (int i = 0; i < Rank; ++i) d[i] = static_cast<Eigen::DenseIndex>(v[static_cast<std::size_t>(i)]);
    return d;
  }

  // The same view at rank `to` (>= rank): dimensions of size 1 in front, whose a and b are a0
  // and b0. Element order does not change.
  collapsed lifted(int to, std::int64_t a0, std::int64_t b0) const {
    collapsed l;
    l.rank = to;
    const auto lead = static_cast<std::size_t>(to - rank);
    for (std::size_t i = 0; i < static_cast<std::size_t>(to); ++i) {
      l.dims[i] = i < lead ? 1 : dims[i - lead];
      l.a[i] = i < lead ? a0 : a[i - lead];
      l.b[i] = i < lead ? b0 : b[i - lead];
    }
    return l;
  }
};

// Calls f(std::integral_constant<int, R>{}) with the rank R at which Eigen runs a view of
// `rank` (MinRank <= rank <= max_rank) dimensions: R == rank up to 4, and 8 above, the view
// lifted with leading size-1 dimensions (collapsed::lifted). Every R instantiates Eigen's
// executor for both host devices and four element sizes: test_array.cpp took 89 s to compile
// at -O3 (GCC 12) with every rank from 1 to 8, 64 s with these; ranks 5..7 are rare after
// collapsing, and the extra size-1 dimensions cost them only index arithmetic.
template <int MinRank, class F>
void with_rank(int rank, F&& f) {
  static_assert(MinRank == 1 || MinRank == 2, "with_rank<MinRank>: MinRank must be 1 or 2");
  static_assert(max_rank == 8, "with_rank: ranks above 4 run at rank 8; revisit with max_rank");
  switch (rank) {
    case 1:
      if constexpr (MinRank == 1) f(std::integral_constant<int, 1>{});
      break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    default: f(std::integral_constant<int, 8>{}); break;
  }
}



}  // namespace detail::movement

// reshape, squeeze, expand_dims and identity: the output holds the input's elements in the same
// order.
template <class Op, class Device, class T>
struct copy_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    parallel_copy(ctx.device, ctx.inputs[0].data(), ctx.outputs[0].data(),
                                 static_cast<std::int64_t>(ctx.inputs[0].bytes()));
    return ok_status();
  }
};

// transpose: Eigen's shuffle, after dropping size-1 dimensions and merging input dimensions that
// stay adjacent and in order in the output ([a, b, c] with perm (2, 0, 1) is [a*b, c] with
// perm (1, 0)).
template <class Op, class Device, class T>
struct transpose_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    namespace mv = detail::movement;
    using S = mv::bits_t<T>;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const auto c = collapse(x.shape(), op.permutation(x.rank()));
    if (c.rank <= 1) {  // the order of the elements does not change
      parallel_copy(ctx.device, x.data(), y.data(), static_cast<std::int64_t>(x.bytes()));
      return ok_status();
    }
    mv::with_rank<2>(c.rank, [&](auto r) {
      constexpr int R = decltype(r)::value;
      // Leading size-1 dimensions stay in front: the permutation fixes them.
      const int lead = R - c.rank;
      const auto v = c.lifted(R, 0, 0);
      Eigen::array<int, R> perm;
      Eigen::DSizes<Eigen::DenseIndex, R> out_dims;
      for (int i = 0; i < R; ++i) {
        perm[i] = i < lead ? i : lead + static_cast<int>(v.a[static_cast<std::size_t>(i)]);
        out_dims[i] = static_cast<Eigen::DenseIndex>(v.dims[static_cast<std::size_t>(perm[i])]);
      }
      const mv::const_map<S, R> in(x.unchecked_data<const S>(), v.template sizes<R>(v.dims));
      mv::map<S, R> out(y.unchecked_data<S>(), out_dims);
      out.device(ctx.device.eigen()) = in.shuffle(perm);
    });
    return ok_status();
  }

  // The input's dimensions (c.dims) and the permutation (c.a) after collapsing.
  static detail::movement::collapsed collapse(const shape& s, const int_list& perm) {
    // Input axes of size 1 do not move any element: drop them and renumber the others.
    std::array<std::int64_t, max_rank> renumbered{};
    std::int64_t kept = 0;
    for (std::size_t i = 0; i < s.rank(); ++i) renumbered[i] = s[i] == 1 ? -1 : kept++;
    std::array<std::int64_t, max_rank> p{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < perm.size(); ++i) {
      const auto axis = static_cast<std::size_t>(perm[i]);
      if (renumbered[axis] >= 0) p[n++] = renumbered[axis];
    }
    std::array<std::int64_t, max_rank> dims{};
    for (std::size_t i = 0; i < s.rank(); ++i)
      if (renumbered[i] >= 0) dims[static_cast<std::size_t>(renumbered[i])] = s[i];
    // Runs p[j], p[j] + 1, ... in the output are one input dimension. group_of[input axis] is
    // the run that starts at that axis, or -1 for an axis inside a run.
    std::array<std::int64_t, max_rank> group_of{};
    group_of.fill(-1);
    std::array<std::int64_t, max_rank> group_dims{};
    std::int64_t groups = 0;
    for (std::size_t j = 0; j < n;) {
      std::size_t k = j + 1;
      std::int64_t d = dims[static_cast<std::size_t>(p[j])];
      while (k < n && p[k] == p[k - 1] + 1) d *= dims[static_cast<std::size_t>(p[k++])];
      group_of[static_cast<std::size_t>(p[j])] = groups;
      group_dims[static_cast<std::size_t>(groups++)] = d;
      j = k;
    }
    // Number the runs by their position in the input; the output lists them in run order.
    detail::movement::collapsed c;
    std::array<std::int64_t, max_rank> input_position{};
    for (std::size_t axis = 0; axis < n; ++axis) {
      const std::int64_t g = group_of[axis];
      if (g < 0) continue;
      input_position[static_cast<std::size_t>(g)] = c.rank;
      c.dims[static_cast<std::size_t>(c.rank++)] = group_dims[static_cast<std::size_t>(g)];
    }
    for (std::int64_t g = 0; g < groups; ++g)
      c.a[static_cast<std::size_t>(g)] = input_position[static_cast<std::size_t>(g)];
    return c;
  }
};

// concat: the output is [outer, sum of axis_i * inner] and input i is an [outer, axis_i * inner]
// slab of it; each row of each slab is one contiguous copy.
template <class Op, class Device, class T>
struct concat_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const std::size_t axis = *normalize_axis(op.axis, y.rank());
    const std::int64_t outer = y.shape().product(0, axis);
    const std::int64_t inner = y.shape().product(axis + 1, y.rank()) * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t out_row = y.dim(axis) * inner;  // bytes
    auto* out = static_cast<unsigned char*>(y.data());
    if (outer == 1) {  // each input is one contiguous block of the output
      std::int64_t offset = 0;
      for (const tensor& x : ctx.inputs) {
        parallel_copy(ctx.device, x.data(), out + offset, static_cast<std::int64_t>(x.bytes()));
        offset += static_cast<std::int64_t>(x.bytes());
      }
      return ok_status();
    }
    ctx.device.parallel_for(outer, copy_cycles_per_byte * static_cast<double>(out_row),
                            [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        unsigned char* dst = out + r * out_row;
        for (const tensor& x : ctx.inputs) {
          const std::int64_t row = x.dim(axis) * inner;
          if (row == 0) continue;
          std::memcpy(dst, static_cast<const unsigned char*>(x.data()) + r * row, static_cast<std::size_t>(row));
          dst += row;
        }
      }
    });
    return ok_status();
  }
};

// slice with unit strides: Eigen's slice, after merging each dimension that is taken whole into
// the one before it; a slice that collapses to one dimension is a single contiguous copy. With
// other strides (negative too): output rows (the last dimension) split over the policy's threads,
// each row's start found from its index, its elements read `stride` apart.
template <class Op, class Device, class T>
struct slice_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    namespace mv = detail::movement;
    using S = mv::bits_t<T>;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    std::array<ops::slice_axis, max_rank> axes{};
    bool unit = true;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      auto a = op.resolve(x.shape(), i);
      if (!a.ok()) return a.status();
      axes[i] = *a;
      unit = unit && (a->stride == 1 || a->count == 1);
    }
    if (!unit) return strided(axes, x, y, ctx);
    // c.a: begin, c.b: size, per collapsed dimension.
    mv::collapsed c;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      const std::int64_t d = x.dim(i), begin = axes[i].begin, size = y.dim(i);
      if (c.rank > 0 && begin == 0 && size == d) {
        const auto last = static_cast<std::size_t>(c.rank - 1);
        c.dims[last] *= d;
        c.a[last] *= d;
        c.b[last] *= d;
      } else {
        const auto next = static_cast<std::size_t>(c.rank++);
        c.dims[next] = d;
        c.a[next] = begin;
        c.b[next] = size;
      }
    }
    if (c.rank <= 1) {
      const std::int64_t first = c.rank == 0 ? 0 : c.a[0];
      parallel_copy(ctx.device, x.unchecked_data<const T>() + first, y.data(), static_cast<std::int64_t>(y.bytes()));
      return ok_status();
    }
    mv::with_rank<2>(c.rank, [&](auto r) {
      constexpr int R = decltype(r)::value;
      const auto v = c.lifted(R, 0, 1);  // leading dimensions: begin 0, size 1
      const mv::const_map<S, R> in(x.unchecked_data<const S>(), v.template sizes<R>(v.dims));
      mv::map<S, R> out(y.unchecked_data<S>(), v.template sizes<R>(v.b));
      out.device(ctx.device.eigen()) = in.slice(v.template sizes<R>(v.a), v.template sizes<R>(v.b));
    });
    return ok_status();
  }

 private:
  static status strided(const std::array<ops::slice_axis, max_rank>& axes, const tensor& x, tensor& y,
                        kernel_context<Device>& ctx) {
    using S = detail::movement::bits_t<T>;
    const std::size_t rank = x.rank();
    // Input elements between neighbours along each axis, times the axis's stride, and where
    // element [0, ..., 0] of the output is read from.
    std::array<std::int64_t, max_rank> step{};
    std::int64_t origin = 0, stride = 1;
    for (std::size_t i = rank; i-- > 0;) {
      step[i] = stride * axes[i].stride;
      origin += stride * axes[i].begin;
      stride *= x.dim(i);
    }
    const std::int64_t row = y.dim(rank - 1), rows = y.num_elements() / row, last_step = step[rank - 1];
    const S* in = x.unchecked_data<const S>();
    S* out = y.unchecked_data<S>();
    ctx.device.parallel_for(rows, static_cast<double>(row) * 2.0, [&](std::int64_t first, std::int64_t end) {
      for (std::int64_t r = first; r < end; ++r) {
        std::int64_t at = origin;
        for (std::size_t i = rank - 1, rest = static_cast<std::size_t>(r); i-- > 0;) {
          const auto d = static_cast<std::size_t>(y.dim(i));
          at += static_cast<std::int64_t>(rest % d) * step[i];
          rest /= d;
        }
        S* dst = out + r * row;
        for (std::int64_t j = 0; j < row; ++j) dst[j] = in[at + j * last_step];
      }
    });
    return ok_status();
  }
};

// split: the input as [outer, d, inner] and output k as [outer, d / n, inner]; each output row is
// one copy from x[o, k * d / n, 0]. With outer == 1 every output is one contiguous block.
template <class Op, class Device, class T>
struct split_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    namespace mv = detail::movement;
    const tensor& x = ctx.inputs[0];
    if (x.num_elements() == 0) return ok_status();
    const std::size_t axis = *normalize_axis(op.axis, x.rank());
    const std::int64_t outer = x.shape().product(0, axis);
    const std::int64_t row = ctx.outputs[0].dim(axis) * x.shape().product(axis + 1, x.rank()) *
                             static_cast<std::int64_t>(sizeof(T));  // bytes of one output row
    const auto parts = static_cast<std::int64_t>(ctx.outputs.size());
    const auto* in = static_cast<const unsigned char*>(x.data());
    if (outer == 1) {
      for (std::int64_t k = 0; k < parts; ++k)
        parallel_copy(ctx.device, in + k * row, ctx.outputs[static_cast<std::size_t>(k)].data(), row);
      return ok_status();
    }
    ctx.device.parallel_for(outer * parts, copy_cycles_per_byte * static_cast<double>(row),
                            [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const std::int64_t o = r / parts, k = r % parts;
        std::memcpy(static_cast<unsigned char*>(ctx.outputs[static_cast<std::size_t>(k)].data()) + o * row,
                    in + (o * parts + k) * row, static_cast<std::size_t>(row));
      }
    });
    return ok_status();
  }
};

// pad: in mode constant, Eigen's pad with the value's bits, after merging each unpadded dimension
// into the one before it (an empty input pads to a tensor that is all value). In the other modes
// every output element reads one input element: each output row (the last dimension) reads the
// input row its outer indices map to, copied whole, with its border mapped element by element.
template <class Op, class Device, class T>
struct pad_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    namespace mv = detail::movement;
    using S = mv::bits_t<T>;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    if (op.mode != ops::pad_mode::constant) return from_input(op, ctx);
    const S value = std::bit_cast<S>(ops::detail::convert_value<T>(op.value));
    if (x.num_elements() == 0) {
      mv::map<S, 1> out(y.unchecked_data<S>(), y.num_elements());
      parallel_assign(ctx.device, out, out.constant(value));
      return ok_status();
    }
    // c.a: before, c.b: after, per collapsed dimension.
    mv::collapsed c;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      const std::int64_t d = x.dim(i), before = op.paddings[2 * i], after = op.paddings[2 * i + 1];
      if (c.rank > 0 && before == 0 && after == 0) {
        const auto last = static_cast<std::size_t>(c.rank - 1);
        c.dims[last] *= d;
        c.a[last] *= d;
        c.b[last] *= d;
      } else {
        const auto next = static_cast<std::size_t>(c.rank++);
        c.dims[next] = d;
        c.a[next] = before;
        c.b[next] = after;
      }
    }
    if (c.rank == 0 || (c.rank == 1 && c.a[0] == 0 && c.b[0] == 0)) {  // nothing to pad
      parallel_copy(ctx.device, x.data(), y.data(), static_cast<std::int64_t>(x.bytes()));
      return ok_status();
    }
    mv::with_rank<1>(c.rank, [&](auto r) {
      constexpr int R = decltype(r)::value;
      const auto v = c.lifted(R, 0, 0);  // leading dimensions: no padding
      Eigen::array<std::pair<Eigen::DenseIndex, Eigen::DenseIndex>, R> widths;
      Eigen::DSizes<Eigen::DenseIndex, R> out_dims;
      for (int i = 0; i < R; ++i) {
        const auto k = static_cast<std::size_t>(i);
        widths[i] = {static_cast<Eigen::DenseIndex>(v.a[k]), static_cast<Eigen::DenseIndex>(v.b[k])};
        out_dims[i] = static_cast<Eigen::DenseIndex>(v.dims[k] + v.a[k] + v.b[k]);
      }
      const mv::const_map<S, R> in(x.unchecked_data<const S>(), v.template sizes<R>(v.dims));
      mv::map<S, R> out(y.unchecked_data<S>(), out_dims);
      out.device(ctx.device.eigen()) = in.pad(widths, value);
    });
    return ok_status();
  }
  // The input index that output index `o` of a dimension of d padded by `before` reads.
  static std::int64_t source_index(ops::pad_mode mode, std::int64_t o, std::int64_t d, std::int64_t before) {
    std::int64_t i = o - before;
    if (i >= 0 && i < d) return i;
    switch (mode) {
      case ops::pad_mode::reflect: return i < 0 ? -i : 2 * (d - 1) - i;
      case ops::pad_mode::symmetric: return i < 0 ? -i - 1 : 2 * d - 1 - i;
      default: return i < 0 ? 0 : d - 1;  // edge
    }
  }

  static status from_input(const Op& op, kernel_context<Device>& ctx) {
    namespace mv = detail::movement;
    using S = mv::bits_t<T>;
    const tensor& x = ctx.inputs[0];
    tensor& y = ctx.outputs[0];
    const std::size_t rank = x.rank();
    // Inference checked the dimensions it knew; those known only now are checked here.
    std::array<std::int64_t, max_rank> in_stride{};
    std::int64_t stride = 1;
    for (std::size_t k = rank; k-- > 0;) {
      if (auto st = ops::detail::check_pad_mode(Op::name, op.mode, k, x.dim(k), op.paddings[2 * k], op.paddings[2 * k + 1]);
          !st.ok())
        return st;
      in_stride[k] = stride;
      stride *= x.dim(k);
    }
    const S* in = x.unchecked_data<const S>();
    S* out = y.unchecked_data<S>();
    if (rank == 0) {
      out[0] = in[0];
      return ok_status();
    }
    const std::size_t last = rank - 1;
    const std::int64_t row = y.dim(last), d = x.dim(last), before = op.paddings[2 * last];
    const std::int64_t rows = y.num_elements() / row;
    ctx.device.parallel_for(rows, copy_cycles_per_byte * static_cast<double>(row * static_cast<std::int64_t>(sizeof(S))),
                            [&](std::int64_t first, std::int64_t end) {
      for (std::int64_t r = first; r < end; ++r) {
        // The input row this output row reads: each outer index mapped by the mode.
        std::int64_t at = 0;
        for (std::int64_t k = static_cast<std::int64_t>(last) - 1, rest = r; k >= 0; --k) {
          const auto u = static_cast<std::size_t>(k);
          at += source_index(op.mode, rest % y.dim(u), x.dim(u), op.paddings[2 * u]) * in_stride[u];
          rest /= y.dim(u);
        }
        // The row: its border element by element, the input row itself in one copy.
        S* dst = out + r * row;
        for (std::int64_t j = 0; j < before; ++j) dst[j] = in[at + source_index(op.mode, j, d, before)];
        std::memcpy(dst + before, in + at, static_cast<std::size_t>(d) * sizeof(S));
        for (std::int64_t j = before + d; j < row; ++j) dst[j] = in[at + source_index(op.mode, j, d, before)];
      }
    });
    return ok_status();
  }
};

// gather: params as [outer, n, inner], the output as [outer, indices, inner]; each output row of
// `inner` elements is one copy of params[o, index, :]. Every index is checked before any copy.
template <class Op, class Device, class T>
struct gather_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    if (ctx.inputs[1].dtype() == dtype::i32) return gather<std::int32_t>(op, ctx);
    return gather<std::int64_t>(op, ctx);
  }

  template <class Index>
  static status gather(const Op& op, kernel_context<Device>& ctx) {
    const tensor& params = ctx.inputs[0];
    const tensor& indices = ctx.inputs[1];
    tensor& y = ctx.outputs[0];
    const std::size_t axis = *normalize_axis(op.axis, params.rank());
    const std::int64_t n = params.dim(axis);
    const auto index = indices.unchecked_values<const Index>();
    for (std::size_t i = 0; i < index.size(); ++i)
      if (index[i] < -n || index[i] >= n) return out_of_range(indices.shape(), static_cast<std::int64_t>(i), index[i], n);
    if (y.num_elements() == 0) return ok_status();

    const std::int64_t outer = params.shape().product(0, axis);
    const std::int64_t row = params.shape().product(axis + 1, params.rank()) * static_cast<std::int64_t>(sizeof(T));
    const auto count = static_cast<std::int64_t>(index.size());
    const auto* in = static_cast<const unsigned char*>(params.data());
    auto* out = static_cast<unsigned char*>(y.data());
    // One unit per output row; ~20 cycles of index arithmetic on top of the copy.
    ctx.device.parallel_for(outer * count, 20 + copy_cycles_per_byte * static_cast<double>(row),
                            [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const std::int64_t o = r / count, i = static_cast<std::int64_t>(index[static_cast<std::size_t>(r % count)]);
        const std::int64_t k = i < 0 ? i + n : i;  // negative counts from the end
        std::memcpy(out + r * row, in + (o * n + k) * row, static_cast<std::size_t>(row));
      }
    });
    return ok_status();
  }

  // "gather: indices[1, 2] = 7 is not in [-5, 5), the range of the gathered axis (indices shape [2, 3])"
  static status out_of_range(const shape& indices, std::int64_t flat, std::int64_t value, std::int64_t n) {
    typeflow::detail::text position;
    position.push_back('[');
    std::array<std::int64_t, max_rank> digit{};
    for (std::size_t i = indices.rank(); i-- > 0;) {
      digit[i] = flat % indices[i];
      flat /= indices[i];
    }
    for (std::size_t i = 0; i < indices.rank(); ++i) {
      if (i) position.append(", ");
      typeflow::detail::append_int(position, digit[i]);
    }
    position.push_back(']');
    return errors::invalid_argument(Op::name, ": indices", position, " = ", value, " is not in [", -n, ", ", n,
                                    "), the range of the gathered axis (indices shape ", indices, ")");
  }
};

// fill: every element of the output is the value's bits.
template <class Op, class Device, class T>
struct fill_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    namespace mv = detail::movement;
    using S = mv::bits_t<T>;
    tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    mv::map<S, 1> out(y.unchecked_data<S>(), y.num_elements());
    parallel_assign(ctx.device, out, out.constant(std::bit_cast<S>(ops::detail::convert_value<T>(op.value))));
    return ok_status();
  }
};

// where(condition, x, y), broadcast: a select over dense inputs, else the strided walk of the
// broadcast layout, split over the policy's threads.
template <class Op, class Device, class T>
struct where_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    const tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const auto l = detail::make_broadcast_layout<3>({ctx.inputs[0].shape(), ctx.inputs[1].shape(), ctx.inputs[2].shape()},
                                                    y.shape());
    const bool* c = ctx.inputs[0].template unchecked_data<const bool>();
    const T* a = ctx.inputs[1].template unchecked_data<const T>();
    const T* b = ctx.inputs[2].template unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    if (l.is_dense(0) && l.is_dense(1) && l.is_dense(2)) {
      const Eigen::Index n = y.num_elements();
      parallel_assign(ctx.device, eigen_tensor_map<T, 1>(out, n),
                      eigen_const_tensor_map<bool, 1>(c, n).select(eigen_const_tensor_map<T, 1>(a, n),
                                                                   eigen_const_tensor_map<T, 1>(b, n)));
      return ok_status();
    }
    ctx.device.parallel_for(l.num_elements(), 6.0, [&](std::int64_t first, std::int64_t last) {
      l.for_each_offset(first, last, [&](std::int64_t i, const std::array<std::int64_t, 3>& at) {
        out[i] = c[at[0]] ? a[at[1]] : b[at[2]];
      });
    });
    return ok_status();
  }
};

// broadcast_to: every output element reads its input element through the broadcast layout.
template <class Op, class Device, class T>
struct broadcast_to_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op&, kernel_context<Device>& ctx) {
    const tensor& y = ctx.outputs[0];
    if (y.num_elements() == 0) return ok_status();
    const auto l = detail::make_broadcast_layout<1>({ctx.inputs[0].shape()}, y.shape());
    const T* x = ctx.inputs[0].template unchecked_data<const T>();
    T* out = y.unchecked_data<T>();
    ctx.device.parallel_for(l.num_elements(), 3.0, [&](std::int64_t first, std::int64_t last) {
      l.for_each_offset(first, last, [&](std::int64_t i, const std::array<std::int64_t, 1>& at) { out[i] = x[at[0]]; });
    });
    return ok_status();
  }
};

struct array_kernels : named_kernel_list<kernel_list<
    kernel_family<copy_kernel, ops::reshape, host_devices, all_types>,
    kernel_family<copy_kernel, ops::squeeze, host_devices, all_types>,
    kernel_family<copy_kernel, ops::expand_dims, host_devices, all_types>,
    kernel_family<copy_kernel, ops::identity, host_devices, all_types>,
    kernel_family<transpose_kernel, ops::transpose, host_devices, all_types>,
    kernel_family<concat_kernel, ops::concat, host_devices, all_types>,
    kernel_family<slice_kernel, ops::slice, host_devices, all_types>,
    kernel_family<split_kernel, ops::split, host_devices, all_types>,
    kernel_family<pad_kernel, ops::pad, host_devices, all_types>,
    kernel_family<gather_kernel, ops::gather, host_devices, all_types>,
    kernel_family<fill_kernel, ops::fill, host_devices, all_types>,
    kernel_family<where_kernel, ops::where, host_devices, all_types>,
    kernel_family<broadcast_to_kernel, ops::broadcast_to, host_devices, all_types>>> {};

}  // namespace typeflow::cpu_kernels
