// SPDX-License-Identifier: Apache-2.0
// fused_elementwise<Tree>: one op that evaluates a tree of elementwise ops in one pass over
// memory. Static graphs generate it (graph/plan.hpp) from chains and trees of unary and binary
// elementwise nodes; it is an op like any other, so each device gives it a kernel through its
// kernel list (kernels/cpu/fused.hpp for the host).
// The tree is a type whose leaves are the op's inputs:
//   binary<ops::mul{}, unary<ops::relu{}, leaf<0, leaf_layout::full>>, leaf<1, leaf_layout::row>>
// is relu(in0) * in1 with in1 a row ([n]) broadcast over the output's leading dimensions.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow {

namespace fused {

// How an input covers the output: every element (full), its last dimension repeated over the
// others (row: [n] or [1, n] against [..., n]), or one value (scalar).
enum class leaf_layout : unsigned char { full, row, scalar };

template <std::size_t Index, leaf_layout Layout>
struct leaf {
  static constexpr std::size_t index = Index;
  static constexpr leaf_layout layout = Layout;
  static constexpr bool has_row = Layout == leaf_layout::row;
  static constexpr std::size_t size = 0;  // ops in the tree
  static constexpr void append_to(detail::text& out) {
    out.push_back('#');
    detail::append_int(out, static_cast<std::int64_t>(Index));
  }
};

// A compile-time scalar (a constant node of the graph, folded into the tree).
template <double Value>
struct constant {
  static constexpr bool has_row = false;
  static constexpr std::size_t size = 0;
  static constexpr void append_to(detail::text& out) { out.append("constant"); }
};

template <auto Op, class X>
struct unary {
  static constexpr bool has_row = X::has_row;
  static constexpr std::size_t size = X::size + 1;
  static constexpr void append_to(detail::text& out) {
    out.append(decltype(Op)::name);
    out.push_back('(');
    X::append_to(out);
    out.push_back(')');
  }
};

template <auto Op, class A, class B>
struct binary {
  static constexpr bool has_row = A::has_row || B::has_row;
  static constexpr std::size_t size = A::size + B::size + 1;
  static constexpr void append_to(detail::text& out) {
    out.append(decltype(Op)::name);
    out.push_back('(');
    A::append_to(out);
    out.append(", ");
    B::append_to(out);
    out.push_back(')');
  }
};

// How many inputs a tree reads (its leaves are numbered from 0), and the layout of each.
template <class Node>
inline constexpr std::size_t leaf_count = 0;
template <std::size_t I, leaf_layout L>
inline constexpr std::size_t leaf_count<leaf<I, L>> = I + 1;
template <auto Op, class X>
inline constexpr std::size_t leaf_count<unary<Op, X>> = leaf_count<X>;
template <auto Op, class A, class B>
inline constexpr std::size_t leaf_count<binary<Op, A, B>> =
    leaf_count<A> > leaf_count<B> ? leaf_count<A> : leaf_count<B>;

namespace detail {
template <class Node>
struct collect_layouts {
  static constexpr void into(std::span<leaf_layout>) {}
};
template <std::size_t I, leaf_layout L>
struct collect_layouts<leaf<I, L>> {
  static constexpr void into(std::span<leaf_layout> out) { out[I] = L; }
};
template <auto Op, class X>
struct collect_layouts<unary<Op, X>> {
  static constexpr void into(std::span<leaf_layout> out) { collect_layouts<X>::into(out); }
};
template <auto Op, class A, class B>
struct collect_layouts<binary<Op, A, B>> {
  static constexpr void into(std::span<leaf_layout> out) {
    collect_layouts<A>::into(out);
    collect_layouts<B>::into(out);
  }
};
}  // namespace detail

template <class Tree>
inline constexpr std::array<leaf_layout, leaf_count<Tree>> leaf_layouts = [] {
  std::array<leaf_layout, leaf_count<Tree>> l{};
  detail::collect_layouts<Tree>::into(l);
  return l;
}();

}  // namespace fused

namespace ops {

template <class Tree>
struct fused_elementwise {
  static constexpr std::string_view name = "fused_elementwise";
  static constexpr int num_inputs = variadic;
  using tree = Tree;

  // The inputs share one floating dtype (the graph fuses only such nodes).
  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i] != in[0] || !is_floating(in[i]))
        return errors::invalid_argument(name, ": input ", i, " has dtype ", in[i], ", expected ", in[0],
                                        " (one floating dtype for all inputs)");
    return in[0];
  }
  // The broadcast of every input: the tree's interior nodes all have the output's shape.
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    shape out = in[0];
    for (std::size_t i = 1; i < in.size(); ++i) {
      auto b = broadcast(out, in[i]);
      if (!b.ok()) return b.status().with_context(name);
      out = *b;
    }
    return out;
  }
  // "relu(add(#0, #1))"
  static constexpr void append_to(typeflow::detail::text& out) { Tree::append_to(out); }
  friend constexpr bool operator==(const fused_elementwise&, const fused_elementwise&) = default;
};

}  // namespace ops
}  // namespace typeflow
