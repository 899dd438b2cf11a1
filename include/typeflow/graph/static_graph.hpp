// SPDX-License-Identifier: Apache-2.0
// static_graph: a whole graph as a type. graph(y, z) collects every node the outputs depend on,
// each once, in topological order (the order the expressions were written in), and turns the
// types into small constexpr arrays -- kinds, specs, names, input positions -- on which the
// planner (pruning, fusion) runs as ordinary constexpr loops.
//   constexpr auto g = tf::graph(y);
//   std::puts(decltype(g)::describe().c_str());   // one line per node: op, inputs, dtype and shape
//   std::puts(decltype(g)::to_dot().c_str());     // Graphviz
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/graph/expr.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>

namespace typeflow {

namespace detail {
template <class Node>
constexpr double constant_value() {
  if constexpr (Node::kind == node_kind::constant) return Node::value;
  else return 0;
}
template <class Node>
constexpr std::uint64_t assigned_id() {
  if constexpr (Node::kind == node_kind::assign) return Node::variable;
  else return 0;
}
}  // namespace detail

// What a graph knows of each node, as arrays: read from the node types of a node_list, or from the
// records of a graph_builder (built_nodes, graph/graph_builder.hpp, which has the same members).
template <class Nodes>
struct graph_nodes;
template <auto Build>
struct graph_nodes<built_nodes<Build>> : built_nodes<Build> {};

template <class... Nodes>
struct graph_nodes<node_list<Nodes...>> {
  static constexpr std::size_t size = sizeof...(Nodes);
  static constexpr std::array<node_kind, size> kinds{Nodes::kind...};
  static constexpr std::array<tensor_spec, size> specs{Nodes::spec...};
  static constexpr std::array<std::string_view, size> names{Nodes::name...};
  static constexpr std::array<std::size_t, size> num_inputs{Nodes::num_inputs...};
  static constexpr std::array<double, size> constant_values{detail::constant_value<Nodes>()...};
  static constexpr std::array<std::uint64_t, size> assigned{detail::assigned_id<Nodes>()...};  // assigns: the variable's id
  static constexpr std::array<std::size_t, size> num_outputs{num_outputs_of_node<Nodes>()...};
  static constexpr std::array<bool, size> multi_output{is_multi_output_node<Nodes>()...};
  static constexpr std::array<std::size_t, size> ports{port_of_node<Nodes>()...};  // output nodes: which output
  // Where each node runs: placed (tf::on<D>) or a transfer, on that device type; else on the
  // session's first device ("default").
  static constexpr std::array<bool, size> placed{!std::is_same_v<device_of_node<Nodes>, default_device>...};
  static constexpr std::array<std::string_view, size> device_types{device_of_node<Nodes>::device_type...};
  static constexpr std::array<std::uint64_t, size> ids{node_id<Nodes>...};
  // The ids of node i's inputs are input_ids(i)[0 .. num_inputs[i]).
  static constexpr std::array<const std::uint64_t*, size> input_id_lists{Nodes::inputs...};  // a list, not a fold
  static constexpr const std::uint64_t* input_ids(std::size_t i) { return input_id_lists[i]; }
};

template <class Nodes>
struct static_graph : graph_nodes<Nodes> {
  using nodes = Nodes;
  using facts = graph_nodes<Nodes>;
  using facts::size, facts::kinds, facts::specs, facts::names, facts::num_inputs, facts::constant_values,
      facts::assigned, facts::num_outputs, facts::multi_output, facts::ports, facts::placed, facts::device_types,
      facts::ids;

  static constexpr std::size_t count_kind(node_kind k) {
    std::size_t n = 0;
    for (node_kind c : kinds) n += c == k;
    return n;
  }

  // Where a run keeps each node's tensors: node p's output in slot p, except that an op with several
  // outputs (multi_output) keeps them side by side in slots after the nodes', so its kernel writes
  // them in one span: output_slot(p, k) is output k of node p.
  static constexpr std::array<std::size_t, size + 1> extra_output_begin = [] {
    std::array<std::size_t, size + 1> b{};
    for (std::size_t i = 0; i < size; ++i) b[i + 1] = b[i] + (multi_output[i] ? num_outputs[i] : 0);
    return b;
  }();
  static constexpr std::size_t num_slots = size + extra_output_begin[size];
  static constexpr std::size_t output_slot(std::size_t p, std::size_t k) {
    return multi_output[p] ? size + extra_output_begin[p] + k : p;
  }
  static constexpr std::size_t num_edges = [] {
    std::size_t n = 0;
    for (std::size_t k : num_inputs) n += k;
    return n;
  }();
  // The inputs of node i are input_positions[input_begin[i] .. input_begin[i + 1]).
  static constexpr std::array<std::size_t, size + 1> input_begin = [] {
    std::array<std::size_t, size + 1> b{};
    for (std::size_t i = 0; i < size; ++i) b[i + 1] = b[i] + num_inputs[i];
    return b;
  }();

  // The positions sorted by id, and the position of an id (size when it is not in the graph): a
  // binary search, not a lookup that instantiates a type per id (graphs of thousands of nodes).
  static constexpr std::array<std::size_t, size> by_id = [] {
    std::array<std::size_t, size> order{};
    for (std::size_t i = 0; i < size; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
    return order;
  }();
  static constexpr std::size_t position_of_id(std::uint64_t id) {
    std::size_t lo = 0, hi = size;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (ids[by_id[mid]] < id) lo = mid + 1;
      else hi = mid;
    }
    return lo < size && ids[by_id[lo]] == id ? by_id[lo] : size;
  }

  static constexpr std::array<std::size_t, num_edges + 1> input_positions = [] {
    std::array<std::size_t, num_edges + 1> e{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < size; ++i)
      for (std::size_t j = 0; j < num_inputs[i]; ++j) e[k++] = position_of_id(facts::input_ids(i)[j]);
    return e;
  }();

  static constexpr std::size_t input(std::size_t node, std::size_t j) { return input_positions[input_begin[node] + j]; }

  // The position of an expression's node in this graph; a compile error when it is not in it.
  template <expression E>
  static constexpr std::size_t position() {
    static_assert(position_of_id(E::id) < size,
                  "typeflow: this expression is not part of the graph: build the graph from outputs that depend on it");
    return position_of_id(E::id);
  }

  // Variables get numbers 0, 1, ... in graph order: where a session keeps their values.
  static constexpr std::size_t num_variables = count_kind(node_kind::variable);
  static constexpr std::array<std::size_t, size> variable_index = [] {
    std::array<std::size_t, size> v{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < size; ++i) v[i] = kinds[i] == node_kind::variable ? k++ : size;
    return v;
  }();

  // Inputs get numbers 0, 1, ... in graph order: where a run finds their feeds.
  static constexpr std::size_t num_input_nodes = count_kind(node_kind::input);
  static constexpr std::array<std::size_t, size> input_node_index = [] {
    std::array<std::size_t, size> v{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < size; ++i) v[i] = kinds[i] == node_kind::input ? k++ : size;
    return v;
  }();

  // The inputs and variables: what a finished run lets go of.
  static constexpr std::size_t num_leaves = num_input_nodes + num_variables;
  static constexpr std::array<std::size_t, num_leaves> leaf_positions = [] {
    std::array<std::size_t, num_leaves> l{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < size; ++i)
      if (kinds[i] == node_kind::input || kinds[i] == node_kind::variable) l[k++] = i;
    return l;
  }();

  // The positions of the nodes of one kind, in graph order.
  static constexpr std::size_t count_of(node_kind k) {
    std::size_t n = 0;
    for (node_kind x : kinds) n += x == k;
    return n;
  }
  template <node_kind K>
  static constexpr std::array<std::size_t, count_of(K)> positions_of = [] {
    std::array<std::size_t, count_of(K)> o{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < size; ++i)
      if (kinds[i] == K) o[n++] = i;
    return o;
  }();
  // The output nodes: their shares of their ops' outputs are let go when a run ends. The
  // transfers: those that share their source are let go too.
  static constexpr const auto& output_positions = positions_of<node_kind::output>;
  static constexpr const auto& transfer_positions = positions_of<node_kind::transfer>;

  // "3: add(1, 2) -> f32[?, 10]" per line.
  static std::string describe() {
    detail::text t;
    for (std::size_t i = 0; i < size; ++i) {
      append_node(t, i);
      t.push_back('\n');
    }
    return t.str();
  }

  // "input 'x'", "variable 'w'", "constant 2", "output 1", or the op's name.
  static void append_label(detail::text& t, std::size_t i) {
    if (kinds[i] == node_kind::output) {
      t.append("output ");
      detail::append_int(t, static_cast<std::int64_t>(ports[i]));
    } else if (kinds[i] == node_kind::input || kinds[i] == node_kind::variable) {
      t.append(to_string(kinds[i]));
      t.append(" '");
      t.append(names[i]);
      t.push_back('\'');
    } else if (kinds[i] == node_kind::constant) {
      t.append("constant ");
      detail::append(t, constant_values[i]);
    } else {
      t.append(names[i]);
    }
  }

  // "2: matmul(0, 1) -> f32[?, 3]", and " on TEST" for a node placed on a device type"
  static void append_node(detail::text& t, std::size_t i) {
    detail::append_int(t, static_cast<std::int64_t>(i));
    t.append(": ");
    append_label(t, i);
    if (num_inputs[i] > 0) {
      t.push_back('(');
      for (std::size_t j = 0; j < num_inputs[i]; ++j) {
        if (j) t.append(", ");
        detail::append_int(t, static_cast<std::int64_t>(input(i, j)));
      }
      t.push_back(')');
    }
    t.append(" -> ");
    specs[i].append_to(t);
    if (placed[i]) {
      t.append(" on ");
      t.append(device_types[i]);
    }
  }

  // Graphviz: one node per graph node (op and spec), one edge per input.
  static std::string to_dot() {
    detail::text t("digraph typeflow {\n  node [shape=box, fontname=\"monospace\"];\n");
    for (std::size_t i = 0; i < size; ++i) {
      t.append("  n");
      detail::append_int(t, static_cast<std::int64_t>(i));
      t.append(" [label=\"");
      append_label(t, i);
      t.append("\\n");
      specs[i].append_to(t);
      if (placed[i]) {
        t.append(" on ");
        t.append(device_types[i]);
      }
      t.append("\"];\n");
    }
    for (std::size_t i = 0; i < size; ++i)
      for (std::size_t j = 0; j < num_inputs[i]; ++j) {
        t.append("  n");
        detail::append_int(t, static_cast<std::int64_t>(input(i, j)));
        t.append(" -> n");
        detail::append_int(t, static_cast<std::int64_t>(i));
        t.append(";\n");
      }
    t.append("}\n");
    return t.str();
  }
};

// The graph of the given outputs: every node they depend on, each once, in topological order.
template <expression... Outputs>
  requires(sizeof...(Outputs) > 0)
constexpr auto graph(Outputs...) {
  return static_graph<typename detail::merge_all<typename Outputs::nodes...>::type>{};
}

}  // namespace typeflow
