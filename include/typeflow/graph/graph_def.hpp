// SPDX-License-Identifier: Apache-2.0
// graph_def: a graph as data, built from op *names* (a file, a program), as TensorFlow's GraphDef.
// It knows no registry and no device policy: node_defs with a name, an op name, typed attributes,
// data inputs "node" or "node:0", control inputs "^node", and a device string ("" for any). What
// needs kernels is checked when the graph is placed on devices (runtime/placer.hpp) or made into a
// runtime_graph for one device.
//   graph_topology::make(def): names, edges and a topological order, or invalid_argument naming the
//   node: empty or duplicate names, forbidden characters, dangling input, bad port, cycle.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/graph/attr_value.hpp>

namespace typeflow {

struct node_def {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;  // "x", "x:0" (data), "^x" (control)
  attr_map attrs;
  std::string device;               // "" for any device (the placer or the policy chooses)
  int line = 0;                     // its line in a text file (messages), 0 when built in code
};

struct graph_def {
  std::vector<node_def> nodes;
};

namespace detail {

// "node 'h1' (line 4): " or "node 'h1': "
inline std::string node_context(const node_def& n) {
  detail::text t = detail::cat("node '", n.name, "'");
  if (n.line > 0) detail::append(t, detail::cat(" (line ", n.line, ")"));
  return t.str();
}

}  // namespace detail

// The structure of a graph_def, by node index: data and control inputs, consumers (each once) and
// a topological order (Kahn's, in node order among the ready). Every node has one output, port 0.
struct graph_topology {
  std::vector<std::vector<std::size_t>> inputs;     // data inputs
  std::vector<std::vector<std::size_t>> control;    // control inputs
  std::vector<std::vector<std::size_t>> consumers;  // nodes reading this one (data or control), once each
  std::vector<std::size_t> order;
  std::unordered_map<std::string, std::size_t> index;

  static result<graph_topology> make(const graph_def& def) {
    graph_topology g;
    const std::size_t n = def.nodes.size();
    g.inputs.resize(n);
    g.control.resize(n);
    g.consumers.resize(n);
    g.index.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const node_def& d = def.nodes[i];
      if (d.name.empty()) return errors::invalid_argument("node number ", i, " (line ", d.line, "): empty name");
      if (d.name.find_first_of(":^ \t\r\n,()#@=\"\\") != std::string::npos)
        return errors::invalid_argument(detail::node_context(d),
                                        ": a name may not contain spaces or any of : ^ , ( ) # @ = \" \\");
      if (!g.index.emplace(d.name, i).second)
        return errors::invalid_argument(detail::node_context(d), ": duplicate name (also node ", g.index[d.name], ")");
    }
    for (std::size_t i = 0; i < n; ++i) {
      const node_def& d = def.nodes[i];
      for (const std::string& in : d.inputs) {
        const bool control = !in.empty() && in[0] == '^';
        std::string_view ref = control ? std::string_view(in).substr(1) : std::string_view(in);
        std::int64_t port = 0;
        if (auto colon = ref.rfind(':'); colon != std::string_view::npos && !control) {
          std::string_view digits = ref.substr(colon + 1);
          auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
          if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty())
            return errors::invalid_argument(detail::node_context(d), ": input '", in, "': the port is not a number");
          ref = ref.substr(0, colon);
        }
        auto found = g.index.find(std::string(ref));
        if (found == g.index.end())
          return errors::invalid_argument(detail::node_context(d), ": input '", in, "' names no node in the graph");
        if (port != 0)
          return errors::invalid_argument(detail::node_context(d), ": input '", in, "': node '", ref,
                                          "' has one output (port 0), port ", port, " does not exist");
        (control ? g.control : g.inputs)[i].push_back(found->second);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j : g.inputs[i]) g.add_consumer(j, i);
      for (std::size_t j : g.control[i]) g.add_consumer(j, i);
    }
    // Kahn's order; what is left over is on or behind a cycle.
    std::vector<std::size_t> pending(n);
    for (std::size_t i = 0; i < n; ++i) pending[i] = g.inputs[i].size() + g.control[i].size();
    for (std::size_t i = 0; i < n; ++i)
      if (pending[i] == 0) g.order.push_back(i);
    for (std::size_t k = 0; k < g.order.size(); ++k) {
      const std::size_t i = g.order[k];
      for (std::size_t c : g.consumers[i]) {
        // A consumer reading i several times counts each edge.
        const std::size_t edges = static_cast<std::size_t>(std::count(g.inputs[c].begin(), g.inputs[c].end(), i) +
                                                           std::count(g.control[c].begin(), g.control[c].end(), i));
        pending[c] -= edges;
        if (pending[c] == 0) g.order.push_back(c);
      }
    }
    if (g.order.size() != n) {
      detail::text names;
      std::size_t listed = 0;
      for (std::size_t i = 0; i < n && listed < 5; ++i)
        if (pending[i] != 0) {
          detail::append(names, detail::cat(listed ? ", '" : "'", def.nodes[i].name, "'"));
          ++listed;
        }
      return errors::invalid_argument("the graph has a cycle through nodes ", names.view(),
                                      n - g.order.size() > listed ? ", ..." : "");
    }
    return g;
  }

 private:
  void add_consumer(std::size_t producer, std::size_t consumer) {
    auto& c = consumers[producer];
    if (std::find(c.begin(), c.end(), consumer) == c.end()) c.push_back(consumer);
  }
};

}  // namespace typeflow
