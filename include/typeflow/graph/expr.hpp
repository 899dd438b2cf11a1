// SPDX-License-Identifier: Apache-2.0
// Expressions of a static graph. An expression is an empty object whose type holds everything:
// the list of the nodes it depends on, in topological order, ending with its own node. Writing
// `relu(matmul(x, w) + b)` builds that list at compile time; inference runs as each op is applied,
// so a shape or dtype mismatch is a compile error at the line that wrote it, in the words the
// run-time check uses ("add: shapes [2, 3] and [4, 3] do not broadcast: ...").
//
//   using namespace typeflow::literals;
//   constexpr auto x = tf::input<"x", float, tf::static_shape<tf::dyn, 784>>;
//   constexpr auto w = tf::variable<"w", float, tf::static_shape<784, 10>>;
//   constexpr auto y = tf::softmax(tf::matmul(x, w) * 0.5_c);   // [?, 784] x [784, 10] -> [?, 10]
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <concepts>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/dependent_false.hpp>
#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/ops/array.hpp>
#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/linalg.hpp>
#include <typeflow/ops/nn.hpp>
#include <typeflow/ops/static_infer.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow {

namespace detail {
// What an expression says about its node. A base class named by the node alone: the compiler names
// (mangles) every constant and function it instantiates, and a name that spelled the expression
// would spell the whole graph, so an expression's own type carries as few of them as it can.
template <class Node>
struct expr_facts {
  using node = Node;
  using device = device_of_node<Node>;  // default_device: the session's first
  static constexpr std::uint64_t id = node_id<Node>;
  static constexpr tensor_spec spec = Node::spec;
  static constexpr dtype type = spec.type;
  static constexpr shape dims = spec.dims;
};
}  // namespace detail

template <class Nodes>
struct expr;

template <class... Nodes>
struct expr<node_list<Nodes...>> : detail::expr_facts<typename detail::last_of<Nodes...>::type> {
  using nodes = node_list<Nodes...>;
};

namespace detail {
// Class templates rather than variable templates, for the same reason: is_expr<E>::value is
// bool_constant's member, not one constant per expression type.
template <class T>
struct is_expr : std::false_type {};
template <class Nodes>
struct is_expr<expr<Nodes>> : std::true_type {};
}  // namespace detail

// Satisfied by the type of input<"x", float, static_shape<2>> and of relu(x); not by tensor.
template <class E>
concept expression = detail::is_expr<std::remove_cvref_t<E>>::value;

// Leaves.
template <detail::fixed_string Name, element_type T, class Shape>
inline constexpr expr<node_list<input_node<Name, T, Shape>>> input{};

template <detail::fixed_string Name, element_type T, class Shape>
inline constexpr expr<node_list<variable_node<Name, T, Shape>>> variable{};

// A scalar known at compile time whose dtype comes from the other operand: x * 0.5_c, x + scalar<1>.
template <double Value>
struct scalar_constant {
  static constexpr double value = Value;
};
template <double Value>
inline constexpr scalar_constant<Value> scalar{};

// A scalar constant of a given dtype, as an expression of shape [].
template <double Value, element_type T>
inline constexpr expr<node_list<constant_node<Value, dtype_of<T>>>> constant{};

namespace detail {

// True for the characters of a decimal literal: digits, one '.', an exponent, digit separators.
template <char... Cs>
constexpr bool is_decimal_literal() {
  constexpr char text[] = {Cs..., '\0'};
  for (const char* c = text; *c; ++c)
    if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '+' || *c == '-' || *c == '\''))
      return false;
  return true;
}

// 2.5_c, 1e-3_c, 10_c: a decimal literal read at compile time.
template <char... Cs>
constexpr double parse_decimal() {
  constexpr char text[] = {Cs..., '\0'};
  double mantissa = 0;
  int scale = 0;
  int exponent = 0;
  bool fraction = false, in_exponent = false, negative_exponent = false;
  for (const char* c = text; *c; ++c) {
    if (*c == '\'') continue;
    if (*c == '.') { fraction = true; continue; }
    if (*c == 'e' || *c == 'E') { in_exponent = true; continue; }
    if (in_exponent && (*c == '-' || *c == '+')) { negative_exponent = *c == '-'; continue; }
    if (in_exponent) exponent = exponent * 10 + (*c - '0');
    else {
      mantissa = mantissa * 10 + (*c - '0');
      if (fraction) --scale;
    }
  }
  int e = scale + (negative_exponent ? -exponent : exponent);
  double p = 1;
  for (int i = 0; i < (e < 0 ? -e : e); ++i) p *= 10;
  return e < 0 ? mantissa / p : mantissa * p;
}

// Every node of several lists, each once, in an order that keeps each list's.
template <class... Lists>
struct merge_all;
template <class List>
struct merge_all<List> {
  using type = List;
};
template <class A, class B, class... Rest>
struct merge_all<A, B, Rest...> {
  using type = typename merge_all<merge_nodes<A, B>, Rest...>::type;
};

template <class List, class Node>
struct append_one;
template <class... Nodes, class Node>
struct append_one<node_list<Nodes...>, Node> {
  using type = node_list<Nodes..., Node>;
};
template <class List, class Node>
using append_node = typename append_one<List, Node>::type;

// Node on device type D (itself on default_device).
template <class D, class Node>
using place = std::conditional_t<std::is_same_v<D, default_device>, Node, placed_node<D, Node>>;

// The device a node made from these inputs runs on: the first placed input's, else the default.
template <class... In>
struct device_for {
  using type = default_device;
};
template <class E, class... Rest>
struct device_for<E, Rest...> {
  using type = std::conditional_t<std::is_same_v<typename E::device, default_device>,
                                  typename device_for<Rest...>::type, typename E::device>;
};

template <class List, class Node>
using append_missing = merge_nodes<List, node_list<Node>>;

// How node Node (id Id, last of list Nodes or within it) is read on device D: `id` is the node to
// read and `nodes` a list that holds it.
//   here       it is on D: itself
//   constant   a constant on another device: the same number made on D (nothing to copy)
//   moved      a transfer: its source, read on D (never a copy of a copy)
//   transfer   else: a transfer of its value to D
// Only what a case names is instantiated, so an input on the node's device costs no more types.
enum class read_kind { here, constant, moved, transfer };
template <class D, class Node>
constexpr read_kind read_kind_of() {
  if constexpr (Node::kind == node_kind::transfer) return read_kind::moved;
  else if constexpr (std::is_same_v<device_of_node<Node>, D>) return read_kind::here;
  else if constexpr (Node::kind == node_kind::constant) return read_kind::constant;
  else return read_kind::transfer;
}
// (`id` is an enumerator: a static member would be a constant the compiler names after the list.)
template <class Nodes, std::uint64_t Id>
struct read_here {
  enum : std::uint64_t { id = Id };
  using nodes = Nodes;
};
template <class Nodes, class Node>
struct read_new {
  enum : std::uint64_t { id = node_id<Node> };
  using nodes = append_missing<Nodes, Node>;
};
template <class D, class Nodes, std::uint64_t Id, class Node, read_kind Kind = read_kind_of<D, Node>()>
struct read_on : read_here<Nodes, Id> {};
template <class D, class Nodes, std::uint64_t Id, class Node>
struct read_on<D, Nodes, Id, Node, read_kind::constant> : read_new<Nodes, placed_node<D, unplaced_node_t<Node>>> {};
template <class D, class Nodes, std::uint64_t Id, class Node>
struct read_on<D, Nodes, Id, Node, read_kind::transfer>
    : read_new<Nodes, transfer_node<D, Id, Node::spec, device_of_node<Node>>> {};
template <class D, class Nodes, std::uint64_t Id, class Node>
struct read_on<D, Nodes, Id, Node, read_kind::moved>
    : std::conditional_t<std::is_same_v<typename Node::source_device, D>, read_here<Nodes, Node::inputs[0]>,
                         read_new<Nodes, transfer_node<D, Node::inputs[0], Node::spec, typename Node::source_device>>> {};
template <class D, expression E>
using read_expr_on = read_on<D, typename E::nodes, E::id, typename E::node>;

// The node of list Nodes with id Id, and the list without its last node.
template <class Nodes, std::uint64_t Id>
using node_with_id = node_at_t<position_of<Nodes, Id>, Nodes>;
template <class Nodes, class Is = std::make_index_sequence<Nodes::size - 1>>
struct drop_last;
template <class Nodes, std::size_t... Is>
struct drop_last<Nodes, std::index_sequence<Is...>> {
  using type = node_list<node_at_t<Is, Nodes>...>;
};

// An op node made again on device D, its inputs read there (itself when it is on D already). The
// node it was stays in the list, read by nothing: a plan leaves it out.
template <class D, class Nodes, class Node>
struct op_on;
template <class D, class Nodes, auto Op, tensor_spec Spec, std::uint64_t... In>
struct op_on<D, Nodes, op_node<Op, Spec, In...>> {
  template <std::uint64_t I>
  using input = read_on<D, Nodes, I, node_with_id<Nodes, I>>;
  using node = place<D, op_node<Op, Spec, input<In>::id...>>;
  using nodes = append_missing<typename merge_all<Nodes, typename input<In>::nodes...>::type, node>;  // it may be there
};

}  // namespace detail

namespace literals {
template <char... Cs>
constexpr auto operator""_c() {
  static_assert(detail::is_decimal_literal<Cs...>(),
                "typeflow::literals::_c takes a decimal number such as 2.5_c or 1e-3_c (no hexadecimal or binary)");
  if constexpr (detail::is_decimal_literal<Cs...>()) return scalar_constant<detail::parse_decimal<Cs...>()>{};
  else return scalar_constant<0.0>{};
}
}  // namespace literals

// The op value Op applied to expressions: inference at compile time, then a new node.
// apply<ops::matmul{.transpose_b = true}>(x, w)
namespace detail {
// The expression of Op applied to In (a class, so that the operators below return it without
// instantiating a function apply<Op, In...> as well: each function instantiated with expression
// types is a name the compiler spells out, graph and all).
template <auto Op, class... In>
struct applied {
  using device = typename device_for<In...>::type;
  using node = place<device, op_node<Op, static_infer_specs<Op, In::spec...>::value, read_expr_on<device, In>::id...>>;
  using type = expr<append_node<typename merge_all<typename read_expr_on<device, In>::nodes...>::type, node>>;
};
}  // namespace detail

template <auto Op, expression... In>
  requires op<decltype(Op)>
constexpr auto apply(In...) {
  static_assert(!multi_output_op<decltype(Op)>,
                "typeflow::apply<Op>: this op has several outputs; apply_outputs<Op>(inputs...) gives each as an "
                "expression: auto [values, indices] = tf::apply_outputs<tf::ops::top_k{.k = 5}>(x)");
  return typename detail::applied<Op, In...>::type{};
}

// An op with several outputs applied to expressions: a std::tuple of one expression per output,
// each the op's node followed by an output node, so the op runs once however many are used.
// auto [values, indices] = apply_outputs<ops::top_k{.k = 5}>(x)
template <auto Op, expression... In>
  requires multi_output_op<decltype(Op)>
constexpr auto apply_outputs(In...) {
  using inferred = static_infer_specs<Op, In::spec...>;
  using device = typename detail::device_for<In...>::type;
  using node = detail::place<device, op_node<Op, inferred::value, detail::read_expr_on<device, In>::id...>>;
  using nodes =
      detail::append_node<typename detail::merge_all<typename detail::read_expr_on<device, In>::nodes...>::type, node>;
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple<expr<
        detail::append_node<nodes, detail::place<device, output_node<node_id<node>, K, inferred::outputs[K]>>>>...>{};
  }(std::make_index_sequence<inferred::outputs.size()>{});  // one when inference failed: no flood after the message
}

// The expression on device type D (TensorFlow's tf.device), where its node runs: an op runs on D
// and reads its inputs there (a transfer_node for each input on another device; a constant is
// made again on D); an input, variable or constant lives on D (a fed tensor is copied there, a
// variable is kept there); an output of an op with several, an assign or a transfer gives its value
// on D (a transfer's source itself when that is on D). Nodes made from placed expressions run on
// their first placed input's device:
//   constexpr auto h = tf::on<tf::thread_pool>(tf::relu(tf::matmul(x, w1)));   // relu on thread_pool
//   constexpr auto y = tf::softmax(tf::matmul(h, w2));  // y's matmul and softmax follow h there
// Placing an op on the device its session runs unplaced nodes on still makes it a placed node
// (a separate node from the unplaced one, kept out of the memory plan's arena).
template <device_policy D, expression E>
constexpr auto on(E) {
  using node = unplaced_node_t<typename E::node>;
  if constexpr (node::kind == node_kind::op) {
    return expr<typename detail::op_on<D, typename E::nodes, node>::nodes>{};
  } else if constexpr (node::kind == node_kind::input || node::kind == node_kind::variable ||
                       node::kind == node_kind::constant) {
    return expr<node_list<placed_node<D, node>>>{};
  } else if constexpr (node::kind == node_kind::transfer) {
    if constexpr (std::is_same_v<typename node::source_device, D>)
      return expr<typename detail::drop_last<typename E::nodes>::type>{};  // back on its source's device: the source
    else
      return expr<typename detail::read_expr_on<D, E>::nodes>{};
  } else {
    return expr<typename detail::read_expr_on<D, E>::nodes>{};
  }
}

// The value of `value` stored into variable `var` when this node runs; its dtype and shape must
// be the variable's.
template <expression Var, expression Value>
constexpr auto assign(Var, Value) {
  static_assert(Var::node::kind == node_kind::variable, "typeflow::assign(var, value): var must be a variable<...>");
  static_assert(Var::spec == Value::spec || compile_error<detail::text_constant<[] {
                  if (Var::spec == Value::spec) return detail::text();
                  return detail::cat("assign to variable '", Var::node::name, "': the value is ", Value::spec,
                                     ", the variable is ", Var::spec);
                }>::value>::value,
                "typeflow::assign(var, value): the value's dtype and shape must be the variable's");
  using value = detail::read_expr_on<typename Var::device, Value>;  // stored where the variable lives
  using node = detail::place<typename Var::device, assign_node<Var::id, value::id, Var::spec>>;
  return expr<detail::append_node<merge_nodes<typename value::nodes, typename Var::nodes>, node>>{};
}

namespace detail {

// The constant expression of a scalar_constant, in the dtype of the expression beside it.
template <class Scalar, expression Other>
using constant_for = expr<node_list<place<typename Other::device, constant_node<Scalar::value, Other::type>>>>;

template <class T>
struct is_scalar_constant : std::false_type {};
template <double V>
struct is_scalar_constant<scalar_constant<V>> : std::true_type {};

// Run-time numbers cannot be part of a graph's type.
template <class T>
concept runtime_number = std::is_arithmetic<std::remove_cvref_t<T>>::value;

// Operand X of a binary op as an expression: itself, or the constant it is in Other's dtype.
template <class X, class Other, bool = expression<X>>
struct as_expression {
  using type = X;
};
template <class X, class Other>
struct as_expression<X, Other, false> {
  using type = constant_for<X, Other>;
};

}  // namespace detail

// An operand of a binary op: an expression or a compile-time scalar.
template <class T>
concept operand = expression<T> || detail::is_scalar_constant<std::remove_cvref_t<T>>::value;

// A binary op on two operands, at least one an expression.
template <auto Op, operand A, operand B>
  requires(expression<A> || expression<B>)
constexpr auto apply_binary(A, B) {
  return apply<Op>(typename detail::as_expression<A, B>::type{}, typename detail::as_expression<B, A>::type{});
}

#define TYPEFLOW_GRAPH_BINARY(function, op_type)                              \
  template <operand A, operand B>                                            \
    requires(expression<A> || expression<B>)                                 \
  constexpr auto function(A, B) {                                            \
    return typename detail::applied<op_type{}, typename detail::as_expression<A, B>::type, \
                                    typename detail::as_expression<B, A>::type>::type{};  \
  }
// The binary and unary functions of a graph, each with its op: expressions here, a graph_builder's
// nodes (graph/graph_builder.hpp) the same, from these lists.
#define TYPEFLOW_GRAPH_BINARY_FUNCTIONS(X) \
  X(operator+, ops::add)                   \
  X(operator-, ops::sub)                   \
  X(operator*, ops::mul)                   \
  X(operator/, ops::div)                   \
  X(maximum, ops::maximum)                 \
  X(minimum, ops::minimum)                 \
  X(pow, ops::pow)                         \
  X(equal, ops::equal)                     \
  X(less, ops::less)                       \
  X(greater, ops::greater)
#define TYPEFLOW_GRAPH_UNARY_FUNCTIONS(X) \
  X(operator-, ops::neg)                  \
  X(neg, ops::neg)                        \
  X(abs, ops::abs)                        \
  X(exp, ops::exp)                        \
  X(log, ops::log)                        \
  X(sqrt, ops::sqrt)                      \
  X(rsqrt, ops::rsqrt)                    \
  X(square, ops::square)                  \
  X(tanh, ops::tanh)                      \
  X(sigmoid, ops::sigmoid)                \
  X(relu, ops::relu)                      \
  X(gelu, ops::gelu)                      \
  X(erf, ops::erf)                        \
  X(softplus, ops::softplus)              \
  X(softmax, ops::softmax)                \
  X(log_softmax, ops::log_softmax)        \
  X(identity, ops::identity)
TYPEFLOW_GRAPH_BINARY_FUNCTIONS(TYPEFLOW_GRAPH_BINARY)
#undef TYPEFLOW_GRAPH_BINARY

// x * 2.0 with a run-time number: refused with a message saying what to write instead.
#define TYPEFLOW_GRAPH_RUNTIME_NUMBER(function)                                                            \
  template <class A, class B>                                                                              \
    requires((expression<A> && detail::runtime_number<B>) || (detail::runtime_number<A> && expression<B>)) \
  constexpr auto function(A, B) {                                                                          \
    static_assert(detail::dependent_false<A>,                                                              \
                  "typeflow: a number in a static graph must be known at compile time: write x * 2.5_c "   \
                  "(using namespace typeflow::literals) or x * typeflow::scalar<2.5>; a value that changes " \
                  "between runs is an input<\"name\", T, static_shape<>>");                               \
  }
TYPEFLOW_GRAPH_RUNTIME_NUMBER(operator+)
TYPEFLOW_GRAPH_RUNTIME_NUMBER(operator-)
TYPEFLOW_GRAPH_RUNTIME_NUMBER(operator*)
TYPEFLOW_GRAPH_RUNTIME_NUMBER(operator/)
#undef TYPEFLOW_GRAPH_RUNTIME_NUMBER

#define TYPEFLOW_GRAPH_UNARY(function, op_type) \
  template <expression X>                      \
  constexpr auto function(X) {                 \
    return typename detail::applied<op_type{}, X>::type{}; \
  }
TYPEFLOW_GRAPH_UNARY_FUNCTIONS(TYPEFLOW_GRAPH_UNARY)
#undef TYPEFLOW_GRAPH_UNARY

template <dtype To, expression X>
constexpr auto cast(X x) {
  return apply<ops::cast{.to = To}>(x);
}

// [..., m, k] x [..., k, n] -> [..., m, n]
template <expression A, expression B>
constexpr auto matmul(A a, B b) {
  return apply<ops::matmul{}>(a, b);
}
// [..., c] + [c]
template <expression X, expression B>
constexpr auto bias_add(X x, B b) {
  return apply<ops::bias_add{}>(x, b);
}
// The input cut into Parts equal parts along Axis: auto [a, b, c] = tf::split<3, 1>(x).
template <std::int64_t Parts, std::int64_t Axis = 0, expression X>
constexpr auto split(X x) {
  return apply_outputs<ops::split{.axis = Axis, .num_split = Parts}>(x);
}
// The K largest entries of each row and their positions: auto [values, indices] = tf::top_k<5>(x).
template <std::int64_t K, bool Sorted = true, expression X>
constexpr auto top_k(X x) {
  return apply_outputs<ops::top_k{.k = K, .sorted = Sorted}>(x);
}
// The input as shape To (one dimension may be -1, dyn: inferred).
template <shape To, expression X>
constexpr auto reshape(X x) {
  return apply<ops::reshape{.to = To}>(x);
}

}  // namespace typeflow
