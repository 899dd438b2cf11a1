// SPDX-License-Identifier: Apache-2.0
// graph_def: a graph as data, built from op *names* (a file, a program), as TensorFlow's GraphDef.
// It knows no registry and no device policy: node_defs with a name, an op name, typed attributes,
// data inputs "node" or "node:0", control inputs "^node", and a device string ("" for any). What
// needs kernels is checked when the graph is placed on devices (runtime/placer.hpp) or made into a
// runtime_graph for one device.
//   graph_topology::make(def): names, edges (with their ports) and a topological order, or
//   invalid_argument naming the node: empty or duplicate names, forbidden characters, dangling
//   input, a port that is not a number, cycle. Whether a port exists depends on the op (split has
//   num_split outputs): checked where ops are known (runtime_graph, the placer's inferred_graph).
//   resolve_tensor(name, ...): a feed's or fetch's "x" / "x:1" as (node, port), with the same
//   messages everywhere a run names tensors.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
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
  std::vector<std::string> inputs;  // "x" or "x:0" (output 0 of x), "x:1" (output 1), "^x" (control)
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

// "node 'x' has one output (port 0)", "node 's' has 3 outputs (ports 0 to 2)"
inline std::string describe_outputs(std::string_view node, std::size_t outputs) {
  if (outputs == 1) return detail::cat("node '", node, "' has one output (port 0)").str();
  return detail::cat("node '", node, "' has ", outputs, " outputs (ports 0 to ", outputs - 1, ")").str();
}

}  // namespace detail

// A tensor of a graph: output `port` of node `node`.
struct endpoint {
  std::size_t node = 0;
  std::size_t port = 0;
};

// A data input's or fetch's text split at its port: "x" -> ("x", 0), "x:2" -> ("x", 2). A name
// holds no ':', so the last one starts the port; nullopt when what follows it is not a number.
struct tensor_name {
  std::string_view node;
  std::size_t port = 0;

  static std::optional<tensor_name> parse(std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return tensor_name{text, 0};
    const std::string_view digits = text.substr(colon + 1);
    std::size_t port = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
    return tensor_name{text.substr(0, colon), port};
  }
};

// A feed's, fetch's or target's name in a graph: `find(name)` gives a node's index (an optional),
// `outputs(i)` how many outputs node i has. Feeds and fetches may name a port, targets may not.
template <class Find, class Outputs>
result<endpoint> resolve_tensor(std::string_view name, std::string_view what, bool port_allowed, Find&& find,
                                Outputs&& outputs) {
  const auto parsed = port_allowed ? tensor_name::parse(name) : std::optional<tensor_name>(tensor_name{name, 0});
  const std::optional<std::size_t> node = parsed ? find(parsed->node) : std::nullopt;
  if (!node) {
    if (const auto colon = name.rfind(':'); colon != std::string_view::npos && find(name.substr(0, colon))) {
      if (!port_allowed) return errors::invalid_argument(what, " '", name, "': a ", what, " names a node, not one of its outputs");
      return errors::invalid_argument(what, " '", name, "': the port is not a number");
    }
    return errors::invalid_argument(what, " '", name, "' names no node in the graph");
  }
  if (const std::size_t n = outputs(*node); parsed->port >= n)
    return errors::invalid_argument(what, " '", name, "': ", detail::describe_outputs(parsed->node, n));
  return endpoint{*node, parsed->port};
}

// A feed's node: a feed replaces the node, so one with several outputs cannot be fed.
template <class Find, class Outputs>
result<std::size_t> resolve_feed(std::string_view name, Find&& find, Outputs&& outputs) {
  auto e = resolve_tensor(name, "feed", true, find, outputs);
  if (!e.ok()) return e.status();
  if (const std::size_t n = outputs(e->node); n != 1)
    return errors::invalid_argument("feed '", name, "': ", detail::describe_outputs(tensor_name::parse(name)->node, n),
                                    "; only a node with one output can be fed");
  return e->node;
}

// ok when each data input k of node d (output ports[k] of node inputs[k]) is an output its
// producer has; outputs(j) is how many node j has. Else invalid_argument naming d and the input.
template <class Outputs>
status check_ports(const node_def& d, std::span<const std::size_t> inputs, std::span<const std::size_t> ports,
                   Outputs&& outputs) {
  std::size_t k = 0;
  for (const std::string& in : d.inputs) {
    if (!in.empty() && in[0] == '^') continue;
    if (const std::size_t n = outputs(inputs[k]); ports[k] >= n)
      return errors::invalid_argument(detail::node_context(d), ": input '", in, "': ",
                                      detail::describe_outputs(tensor_name::parse(in)->node, n));
    ++k;
  }
  return ok_status();
}

// The structure of a graph_def, by node index: data inputs with their ports, control inputs,
// consumers (each once) and a topological order (Kahn's, in node order among the ready).
struct graph_topology {
  std::vector<std::vector<std::size_t>> inputs;     // data inputs
  std::vector<std::vector<std::size_t>> ports;      // the output of inputs[i][k] that node i reads
  std::vector<std::vector<std::size_t>> control;    // control inputs
  std::vector<std::vector<std::size_t>> consumers;  // nodes reading this one (data or control), once each
  std::vector<std::size_t> order;
  std::unordered_map<std::string, std::size_t> index;

  static result<graph_topology> make(const graph_def& def) {
    graph_topology g;
    const std::size_t n = def.nodes.size();
    g.inputs.resize(n);
    g.ports.resize(n);
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
        const auto ref = control ? std::optional<tensor_name>(tensor_name{std::string_view(in).substr(1), 0})
                                 : tensor_name::parse(in);
        if (!ref)
          return errors::invalid_argument(detail::node_context(d), ": input '", in, "': the port is not a number");
        auto found = g.index.find(std::string(ref->node));
        if (found == g.index.end())
          return errors::invalid_argument(detail::node_context(d), ": input '", in, "' names no node in the graph");
        (control ? g.control : g.inputs)[i].push_back(found->second);
        if (!control) g.ports[i].push_back(ref->port);
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
