// SPDX-License-Identifier: Apache-2.0
// op_list<Ops...>: op types named as a list, and standard_ops, every op type typeflow defines.
// A graph_builder holds the ops of its list (graph/graph_builder.hpp): a node there records which
// of the list's types its op is, and the graph's type is made from that number. A program with ops
// of its own builds with graph_builder_of<op_list_cat<standard_ops, op_list<my_op>>>.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <type_traits>

#include <typeflow/ops/array.hpp>
#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/linalg.hpp>
#include <typeflow/ops/nn.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/ops/pool.hpp>
#include <typeflow/ops/reduction.hpp>
#include <typeflow/ops/resize.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow {

template <class... Ops>
  requires(op<Ops> && ...)
struct op_list {
  static constexpr std::size_t size = sizeof...(Ops);
};

namespace detail {
template <class A, class B>
struct op_list_cat;
template <class... A, class... B>
struct op_list_cat<op_list<A...>, op_list<B...>> {
  using type = op_list<A..., B...>;
};

// The position of Op in the list, or the list's size when it is not there.
template <class Op, class... Ops>
constexpr std::size_t op_index_in() {
  constexpr bool same[] = {std::is_same_v<Op, Ops>..., false};
  std::size_t i = 0;
  while (i < sizeof...(Ops) && !same[i]) ++i;
  return i;
}
}  // namespace detail

template <class A, class B>
using op_list_cat = typename detail::op_list_cat<A, B>::type;

template <class List, class Op>
inline constexpr std::size_t op_index = List::size;
template <class... Ops, class Op>
inline constexpr std::size_t op_index<op_list<Ops...>, Op> = detail::op_index_in<Op, Ops...>();

// Every op type of typeflow (the fused group's op is the planner's, not a user's).
using standard_ops =
    op_list<ops::neg, ops::abs, ops::exp, ops::log, ops::sqrt, ops::rsqrt, ops::square, ops::tanh, ops::sigmoid,
            ops::relu, ops::softplus, ops::erf, ops::leaky_relu, ops::hard_sigmoid, ops::clip, ops::gelu, ops::cast,
            ops::add, ops::sub, ops::mul, ops::div, ops::maximum, ops::minimum, ops::pow, ops::equal, ops::less,
            ops::greater, ops::matmul, ops::bias_add, ops::softmax, ops::log_softmax, ops::layer_norm,
            ops::batch_norm, ops::top_k, ops::conv2d, ops::max_pool2d, ops::avg_pool2d, ops::resize, ops::reshape,
            ops::identity, ops::where, ops::broadcast_to, ops::transpose, ops::concat, ops::split, ops::slice,
            ops::squeeze, ops::expand_dims, ops::pad, ops::gather, ops::fill, ops::reduce_sum,
            ops::reduce_mean, ops::reduce_max, ops::reduce_min, ops::reduce_prod, ops::argmax>;

}  // namespace typeflow
