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

template <class Graph>
result<graph_def> to_graph_def(Graph) {
  graph_def def;
  status st;
  [&]<std::size_t... Ps>(std::index_sequence<Ps...>) {
    (
        [&] {
          using node = node_at_t<Ps, typename Graph::nodes>;
          if (!st.ok()) return;
          node_def n;
          n.name = runtime_name_of<Graph>(Ps);
          if constexpr (node::kind == node_kind::input || node::kind == node_kind::variable) {
            n.op = "placeholder";
            n.attrs.set("dtype", node::spec.type);
            n.attrs.set("shape", node::spec.dims);
          } else if constexpr (node::kind == node_kind::constant) {
            n.op = "const";
            n.attrs.set("dtype", node::spec.type);
            n.attrs.set("shape", shape{});
            n.attrs.set("value", node::value);
          } else if constexpr (node::kind == node_kind::output || node::kind == node_kind::transfer) {
            return;  // its readers name its op's output, or its source
          } else if constexpr (node::kind == node_kind::assign) {
            st = errors::invalid_argument("to_graph_def: node ", Ps, " is an assign; runtime graphs hold no variables");
            return;
          } else {
            n.op = std::string(node::name);
            n.attrs = to_attrs(node::op);
            for (std::size_t j = 0; j < node::num_inputs; ++j) n.inputs.push_back(runtime_name_of<Graph>(Graph::input(Ps, j)));
          }
          if (Graph::placed[Ps]) n.device = "/device:" + std::string(Graph::device_types[Ps]);
          def.nodes.push_back(std::move(n));
        }(),
        ...);
  }(std::make_index_sequence<Graph::size>{});
  if (!st.ok()) return st;
  return def;
}

}  // namespace typeflow
