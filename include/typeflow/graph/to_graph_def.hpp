// SPDX-License-Identifier: Apache-2.0
// to_graph_def(g): a static graph as a runtime graph_def, so it can be saved in the text format,
// loaded by a program that does not have its type, or run by the runtime session.
//  - an input becomes a placeholder of its name, dtype and shape;
//  - a variable becomes a placeholder too (a runtime graph holds no state: feed its value);
//  - a compile-time constant becomes a const of shape [];
//  - an op node keeps its op name and all its attributes;
//  - an assign is refused (invalid_argument): runtime graphs have no variables to assign.
// Op nodes are named "<op>_<position>" ("matmul_3"); inputs and variables keep their names. An
// output node is no node of its own: its readers name its op's output ("top_k_3:1"). A transfer is
// no node either: its readers name its source, and the runtime partitioner adds its own _send and
// _recv; a node placed on a device type asks for that type ("/device:TEST").
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include <typeflow/core/status.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/graph/runtime_graph.hpp>
#include <typeflow/ops/attributes.hpp>

namespace typeflow {

template <class Graph>
std::string runtime_name_of(std::size_t p) {
  const node_kind k = Graph::kinds[p];
  if (k == node_kind::input || k == node_kind::variable) return std::string(Graph::names[p]);
  if (k == node_kind::output) return runtime_name_of<Graph>(Graph::input(p, 0)) + ":" + std::to_string(Graph::ports[p]);
  if (k == node_kind::transfer) return runtime_name_of<Graph>(Graph::input(p, 0));
  return std::string(Graph::names[p]) + "_" + std::to_string(p);
}

namespace detail {
// The attributes of op value Op: one function per op value, not per node.
template <auto Op>
attr_map op_attrs() {
  return to_attrs(Op);
}
using op_attrs_fn = attr_map (*)();
template <class Node>
constexpr op_attrs_fn op_attrs_of() {
  if constexpr (Node::kind == node_kind::op) return &op_attrs<Node::op>;
  else return nullptr;
}
template <class List>
struct op_attrs_table;
template <class... Nodes>
struct op_attrs_table<node_list<Nodes...>> {
  static constexpr std::array<op_attrs_fn, sizeof...(Nodes)> value{op_attrs_of<Nodes>()...};
};
template <auto Build>
struct op_attrs_table<built_nodes<Build>> {
  static constexpr auto value = []<std::size_t... Is>(std::index_sequence<Is...>) {
    return std::array<op_attrs_fn, sizeof...(Is)>{op_attrs_of<typename built_nodes<Build>::template node<Is>>()...};
  }(std::make_index_sequence<built_nodes<Build>::size>{});
};
}  // namespace detail

template <class Graph>
result<graph_def> to_graph_def(Graph) {
  graph_def def;
  const auto& attrs_of = detail::op_attrs_table<typename Graph::nodes>::value;
  for (std::size_t p = 0; p < Graph::size; ++p) {
    const node_kind kind = Graph::kinds[p];
    node_def n;
    n.name = runtime_name_of<Graph>(p);
    if (kind == node_kind::input || kind == node_kind::variable) {
      n.op = "placeholder";
      n.attrs.set("dtype", Graph::specs[p].type);
      n.attrs.set("shape", Graph::specs[p].dims);
    } else if (kind == node_kind::constant) {
      n.op = "const";
      n.attrs.set("dtype", Graph::specs[p].type);
      n.attrs.set("shape", shape{});
      n.attrs.set("value", Graph::constant_values[p]);
    } else if (kind == node_kind::output || kind == node_kind::transfer) {
      continue;  // its readers name its op's output, or its source
    } else if (kind == node_kind::assign) {
      return errors::invalid_argument("to_graph_def: node ", p, " is an assign; runtime graphs hold no variables");
    } else {
      n.op = std::string(Graph::names[p]);
      n.attrs = attrs_of[p]();
      for (std::size_t j = 0; j < Graph::num_inputs[p]; ++j) n.inputs.push_back(runtime_name_of<Graph>(Graph::input(p, j)));
    }
    if (Graph::placed[p]) n.device = "/device:" + std::string(Graph::device_types[p]);
    def.nodes.push_back(std::move(n));
  }
  return def;
}

}  // namespace typeflow
