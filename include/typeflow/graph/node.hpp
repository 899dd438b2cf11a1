// SPDX-License-Identifier: Apache-2.0
// The nodes of a static graph, as types. A node names its inputs by *id*, a 64-bit number computed
// at compile time from the node's own type, never by their types: `relu(x) + x` spells x once, so
// a stack of residual blocks costs O(1) type size per node instead of doubling per block. Two
// nodes with the same op, attributes and inputs are the same type, hence the same id: identical
// pure sub-expressions are one node without any pass that looks for them.
//   input_node<"x", float, static_shape<dyn, 784>>   fed at each run
//   variable_node<"w", float, static_shape<784, 10>> state held by the session
//   constant_node<2.0, dtype::f32>                   a scalar known at compile time
//   op_node<ops::matmul{}, spec, id_x, id_w>         an op applied to other nodes
//   assign_node<id_w, id_value>                      stores a value into a variable
//   output_node<id_topk, 1, spec>                    output 1 of a node with several (top_k's indices)
//   placed_node<thread_pool, Node>                   Node on device type thread_pool (tf::on<D>)
//   transfer_node<thread_pool, id_x, spec, cpu>      node x's value, on cpu, on thread_pool (a send/recv)
// A node that is not a placed_node or a transfer_node is on default_device: the first device of
// the session that runs it.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow {

enum class node_kind : std::uint8_t { input, variable, constant, op, assign, output, transfer };

constexpr std::string_view to_string(node_kind k) noexcept {
  switch (k) {
    case node_kind::input: return "input";
    case node_kind::variable: return "variable";
    case node_kind::constant: return "constant";
    case node_kind::op: return "op";
    case node_kind::assign: return "assign";
    case node_kind::output: return "output";
    case node_kind::transfer: return "transfer";
  }
  return "?";
}

namespace detail {

// The compiler's spelling of a type, as a constant: "... [with T = typeflow::op_node<...>]".
// GCC and Clang both make __PRETTY_FUNCTION__ usable in constant expressions.
template <class T>
constexpr std::string_view type_spelling() noexcept {
  return __PRETTY_FUNCTION__;
}

// 64-bit FNV-1a.
constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 14695981039346656037ull) noexcept {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// The name of type T as the compiler spells it ("typeflow::thread_pool"), for messages.
template <class T>
constexpr std::string_view type_name() noexcept {
  constexpr std::string_view s = type_spelling<T>();
  constexpr std::size_t begin = s.find("T = ") + 4;
  constexpr std::size_t end = s.find_first_of(";]", begin);
  return s.substr(begin, end - begin);
}

}  // namespace detail

// A node's identity: the hash of its type's spelling, which holds the op and its attribute values,
// the spec and the ids of the inputs (numbers, so the spelling stays short however deep the graph).
template <class Node>
inline constexpr std::uint64_t node_id = detail::fnv1a(detail::type_spelling<Node>());

template <detail::fixed_string Name, element_type T, class Shape>
struct input_node {
  static constexpr node_kind kind = node_kind::input;
  static constexpr std::string_view name = Name.view();
  static constexpr tensor_spec spec{dtype_of<T>, Shape::value};
  static constexpr std::uint64_t inputs[1] = {0};  // none: num_inputs is 0
  static constexpr std::size_t num_inputs = 0;
};

template <detail::fixed_string Name, element_type T, class Shape>
struct variable_node {
  static_assert(Shape::value.is_fully_defined(),
                "typeflow::variable<Name, T, Shape>: a variable's shape must be fully known (no dyn)");
  static constexpr node_kind kind = node_kind::variable;
  static constexpr std::string_view name = Name.view();
  static constexpr tensor_spec spec{dtype_of<T>, Shape::value};
  static constexpr std::uint64_t inputs[1] = {0};
  static constexpr std::size_t num_inputs = 0;
};

// A scalar of dtype D with value Value (held as double: exact for every f16/bf16/f32 value and
// every integer up to 2^53).
template <double Value, dtype D>
struct constant_node {
  static constexpr node_kind kind = node_kind::constant;
  static constexpr std::string_view name = "constant";
  static constexpr double value = Value;
  static constexpr tensor_spec spec{D, shape{}};
  static constexpr std::uint64_t inputs[1] = {0};
  static constexpr std::size_t num_inputs = 0;
};

// An op applied to nodes In. Spec is its output's, or for an op with several outputs its first
// output's; output_node names each output of such a node.
template <auto Op, tensor_spec Spec, std::uint64_t... In>
struct op_node {
  using op_type = std::remove_cvref_t<decltype(Op)>;
  static constexpr node_kind kind = node_kind::op;
  static constexpr std::string_view name = op_type::name;
  static constexpr op_type op = Op;
  static constexpr tensor_spec spec = Spec;
  static constexpr std::size_t num_outputs = num_outputs_of(Op);
  static constexpr bool multi_output = multi_output_op<op_type>;  // read through output nodes, even split<1>
  static constexpr std::uint64_t inputs[sizeof...(In) + 1] = {In..., 0};
  static constexpr std::size_t num_inputs = sizeof...(In);
};

// Stores its input (node Value) into the variable node Variable when it runs; its output is the
// value stored. The variable is not an input: assigning needs no earlier value.
template <std::uint64_t Variable, std::uint64_t Value, tensor_spec Spec>
struct assign_node {
  static constexpr node_kind kind = node_kind::assign;
  static constexpr std::string_view name = "assign";
  static constexpr std::uint64_t variable = Variable;
  static constexpr tensor_spec spec = Spec;
  static constexpr std::uint64_t inputs[2] = {Value, 0};
  static constexpr std::size_t num_inputs = 1;
};

// Output Port of node Node, which has several (split, top_k): no work of its own, its value is the
// tensor Node's kernel wrote there. Its one input is Node.
template <std::uint64_t Node, std::size_t Port, tensor_spec Spec>
struct output_node {
  static constexpr node_kind kind = node_kind::output;
  static constexpr std::string_view name = "output";
  static constexpr std::size_t port = Port;
  static constexpr tensor_spec spec = Spec;
  static constexpr std::uint64_t inputs[2] = {Node, 0};
  static constexpr std::size_t num_inputs = 1;
};

// The device type of a node that is not placed: the first device of the session that runs it.
struct default_device {
  static constexpr std::string_view device_type = "default";
  static constexpr bool fuses_elementwise = true;  // as an unplaced graph always has
};

// Node on device type D: everything of Node (its kind, op, spec and inputs) and the device. A
// different type from Node, so the same op on two devices is two nodes.
template <class D, class Node>
struct placed_node : Node {
  using device = D;
  using unplaced = Node;
};

// The value of node Src on device type D: a copy between the devices' memory spaces when they
// differ, the same tensor when both are host memory or the session gives both one device (the
// static graph's send/recv, keyed by its position, never by a string).
template <class D, std::uint64_t Src, tensor_spec Spec, class From>
struct transfer_node {
  using device = D;
  using source_device = From;
  static constexpr node_kind kind = node_kind::transfer;
  static constexpr std::string_view name = "transfer";
  static constexpr tensor_spec spec = Spec;
  static constexpr std::uint64_t inputs[2] = {Src, 0};
  static constexpr std::size_t num_inputs = 1;
};

namespace detail {
template <class Node>
struct node_device {
  using type = default_device;
};
template <class Node>
  requires requires { typename Node::device; }
struct node_device<Node> {
  using type = typename Node::device;
};
template <class Node>
struct unplaced_node {
  using type = Node;
};
template <class D, class Node>
struct unplaced_node<placed_node<D, Node>> {
  using type = Node;
};
}  // namespace detail

// The device type a node runs on (default_device: the session's first).
template <class Node>
using device_of_node = typename detail::node_device<Node>::type;
// A node without its placement (placed_node<D, N> -> N).
template <class Node>
using unplaced_node_t = typename detail::unplaced_node<Node>::type;

// How many outputs a node has (an op_node may have several), whether it is an op of a
// multi_output_op type (its readers are output nodes, however many outputs this one has), and which
// output of its input an output_node is (0 for other nodes).
template <class Node>
constexpr std::size_t num_outputs_of_node() {
  if constexpr (Node::kind == node_kind::op) return Node::num_outputs;
  else return 1;
}
template <class Node>
constexpr bool is_multi_output_node() {
  if constexpr (Node::kind == node_kind::op) return Node::multi_output;
  else return false;
}
template <class Node>
constexpr std::size_t port_of_node() {
  if constexpr (Node::kind == node_kind::output) return Node::port;
  else return 0;
}

}  // namespace typeflow
