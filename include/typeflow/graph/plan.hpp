// SPDX-License-Identifier: Apache-2.0
// static_plan: what a run with a given set of fetches executes, decided at compile time.
//  - Pruning: only the nodes the fetches depend on.
//  - Fusion: chains and trees of elementwise nodes (unary ops, binary arithmetic with scalar and
//    row broadcasting, compile-time constants) of one floating dtype, whose intermediate results
//    have one consumer and are not fetched, become one fused_elementwise<Tree> node that a kernel
//    evaluates in one pass over memory. At most max_fused_ops ops per group keeps the Eigen
//    expression, and its compile time, bounded.
//  - Duplication: a cheap op of one input (x * 0.5, x - 1, relu(x), ...) read 2 to 4 times, only
//    by fusable ops of its spec, is computed again inside each tree that reads it instead of being
//    a step of its own, which moves less memory than writing its result once and reading it in
//    each (XLA's fusion duplicates cheap producers in the same way).
//  - Steps: the positions to run, in topological order, fused interiors left out.
// Everything is a constexpr loop over the graph's arrays; only the fused trees are built as types.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/graph/static_graph.hpp>
#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/elementwise.hpp>
#include <typeflow/ops/fused.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow {

inline constexpr std::size_t max_fused_ops = 24;
// The most reads of one duplicated op (each a copy of it in a group's tree).
inline constexpr std::size_t max_duplicated_reads = 4;

namespace detail {

// Read through the node's members, as everything else is, so that any node type with them fuses
// (an op_node of an expression, a built_node of graph_builder).
template <class Node>
constexpr bool fusable_node() {
  if constexpr (Node::kind == node_kind::op)
    return is_fusable_elementwise<typename Node::op_type> && is_floating(Node::spec.type);
  else
    return false;
}

// A placed node fuses as its op does where its device runs fused groups (fuses_elementwise); a
// group never spans devices, since a transfer parts every edge between two.
template <class List>
struct fusable_nodes;
// `cheap`: the nodes of cheap elementwise ops (is_cheap_elementwise), which a fused group may
// compute again in each group that reads them.
template <class... Nodes>
struct fusable_nodes<node_list<Nodes...>> {
  static constexpr std::array<bool, sizeof...(Nodes)> value{
      (fusable_node<unplaced_node_t<Nodes>>() && fuses_elementwise<device_of_node<Nodes>>)...};
  template <class Node>
  static constexpr bool cheap_node() {
    if constexpr (Node::kind == node_kind::op) return is_cheap_elementwise<typename Node::op_type>;
    else return false;
  }
  static constexpr std::array<bool, sizeof...(Nodes)> cheap{cheap_node<unplaced_node_t<Nodes>>()...};
};
template <auto Build>
struct fusable_nodes<built_nodes<Build>> {  // on the session's first device, which fuses
  static constexpr const auto& value = built_nodes<Build>::fusable;
  static constexpr const auto& cheap = built_nodes<Build>::cheap;
};

// How input shape `in` covers output shape `out` inside a fused group, or -1 when it cannot.
constexpr int leaf_layout_of(const shape& in, const shape& out) {
  if (in == out) return static_cast<int>(fused::leaf_layout::full);
  if (in.num_elements() == 1) return static_cast<int>(fused::leaf_layout::scalar);
  std::size_t first = 0;  // leading 1s do not change a broadcast
  while (first < in.rank() && in[first] == 1) ++first;
  if (in.rank() - first == 1 && out.rank() >= 2 && in[in.rank() - 1] != dyn && in[in.rank() - 1] == out[out.rank() - 1])
    return static_cast<int>(fused::leaf_layout::row);
  return -1;
}

}  // namespace detail

template <class Graph, bool Fuse, std::size_t... Fetches>
struct static_plan {
  using graph_type = Graph;
  static constexpr std::size_t size = Graph::size;
  static constexpr std::array<std::size_t, sizeof...(Fetches)> fetches{Fetches...};

  static constexpr std::array<bool, size> fetched = [] {
    std::array<bool, size> f{};
    ((f[Fetches] = true), ...);
    return f;
  }();

  // Pruning: a node is needed when a fetch depends on it.
  static constexpr std::array<bool, size> needed = [] {
    std::array<bool, size> n = fetched;
    for (std::size_t i = size; i-- > 0;)
      if (n[i])
        for (std::size_t j = 0; j < Graph::num_inputs[i]; ++j) n[Graph::input(i, j)] = true;
    return n;
  }();

  // Node i is elementwise: a fusable op whose every input covers its output. Such a node may be
  // in a fused group, and may write over an input (static_memory_plan's forwarding).
  static constexpr std::array<bool, size> elementwise = [] {
    std::array<bool, size> c{};
    for (std::size_t i = 0; i < size; ++i) {
      c[i] = detail::fusable_nodes<typename Graph::nodes>::value[i];
      for (std::size_t j = 0; c[i] && j < Graph::num_inputs[i]; ++j)
        c[i] = detail::leaf_layout_of(Graph::specs[Graph::input(i, j)].dims, Graph::specs[i].dims) >= 0;
    }
    return c;
  }();
  static constexpr std::array<bool, size> candidate = [] {
    std::array<bool, size> c{};
    for (std::size_t i = 0; i < size; ++i) c[i] = Fuse && elementwise[i];
    return c;
  }();

  // The needed nodes that read each node, one entry a read: node[begin[i]] .. node[begin[i + 1] - 1].
  static constexpr std::size_t num_reads = [] {
    std::size_t n = 0;
    for (std::size_t i = 0; i < size; ++i) n += needed[i] ? Graph::num_inputs[i] : 0;
    return n;
  }();
  struct reader_lists {
    std::array<std::size_t, size + 1> begin{};
    std::array<std::size_t, num_reads + 1> node{};  // + 1: never empty
  };
  static constexpr reader_lists readers = [] {
    reader_lists r{};
    for (std::size_t i = 0; i < size; ++i)
      if (needed[i])
        for (std::size_t j = 0; j < Graph::num_inputs[i]; ++j) ++r.begin[Graph::input(i, j) + 1];
    for (std::size_t i = 0; i < size; ++i) r.begin[i + 1] += r.begin[i];
    std::array<std::size_t, size> filled{};
    for (std::size_t i = 0; i < size; ++i)
      if (needed[i])
        for (std::size_t j = 0; j < Graph::num_inputs[i]; ++j) {
          const std::size_t q = Graph::input(i, j);
          r.node[r.begin[q] + filled[q]++] = i;
        }
    return r;
  }();
  // Reads of node i by needed nodes (a node read twice by one consumer counts twice).
  static constexpr std::size_t consumers(std::size_t i) { return readers.begin[i + 1] - readers.begin[i]; }

  struct grouping {
    std::array<std::size_t, size> root{};   // the group a node belongs to, named by its last node
    std::array<std::size_t, size> ops{};    // for a root: the ops its tree computes, duplicated ones included
    std::array<bool, size> duplicated{};    // a single op computed inside each group that reads it
  };
  // Node i reads one node besides constants (once or more).
  static constexpr bool one_input(std::size_t i) {
    std::size_t first = size;
    for (std::size_t j = 0; j < Graph::num_inputs[i]; ++j) {
      const std::size_t q = Graph::input(i, j);
      if (Graph::kinds[q] == node_kind::constant) continue;
      if (first != size && first != q) return false;
      first = q;
    }
    return first != size;
  }

  static constexpr grouping groups = [] {
    grouping g{};
    // Trees: a node joins the group of its one consumer.
    for (std::size_t i = size; i-- > 0;) {
      g.root[i] = i;
      g.ops[i] = 1;
      if (!needed[i] || !candidate[i] || consumers(i) != 1 || fetched[i]) continue;
      const std::size_t c = readers.node[readers.begin[i]];
      const std::size_t r = g.root[c];
      if (candidate[c] && Graph::specs[i] == Graph::specs[c] && g.ops[r] < max_fused_ops) {
        g.root[i] = r;
        ++g.ops[r];
      }
    }
    // Duplication: one cheap op of one input (constants aside) that only fused groups of its spec
    // read, each of which stays within max_fused_ops with it, goes into each of them. It moves
    // less memory than a step of its own at any number of reads k (k element reads of its input
    // inside them, against 1 + 1 + k), and adds one op a read to their trees. Duplicating whole
    // groups (trees, more than one input) saved more steps but made larger and more distinct
    // trees, each a kernel to compile (a layered DAG of 1024 adds: 2.3x the compile time).
    // An op whose group is itself alone (ops 1) took in nothing, not even a duplicated op, so
    // its own inputs are its tree's.
    const auto& cheap = detail::fusable_nodes<typename Graph::nodes>::cheap;
    for (std::size_t d = 0; Fuse && d < size; ++d) {
      const std::size_t k = consumers(d);
      if (g.root[d] != d || g.ops[d] != 1 || !needed[d] || !candidate[d] || fetched[d] || !cheap[d] || k < 2 ||
          k > max_duplicated_reads || !one_input(d))
        continue;
      // The groups that read d, each with the copies of d it would take in (one a read).
      std::array<std::size_t, max_duplicated_reads> into{}, added{};
      std::size_t n = 0;
      bool fits = true;
      for (std::size_t e = readers.begin[d]; e < readers.begin[d + 1]; ++e) {
        const std::size_t c = readers.node[e];
        fits = fits && candidate[c] && Graph::specs[c] == Graph::specs[d];
        std::size_t m = 0;
        while (m < n && into[m] != g.root[c]) ++m;
        if (m == n) into[n++] = g.root[c];
        ++added[m];
      }
      for (std::size_t m = 0; fits && m < n; ++m) fits = g.ops[into[m]] + added[m] <= max_fused_ops;
      if (!fits) continue;
      g.duplicated[d] = true;
      for (std::size_t m = 0; m < n; ++m) g.ops[into[m]] += added[m];
    }
    return g;
  }();

  static constexpr bool is_fused_root(std::size_t i) {
    return groups.root[i] == i && !groups.duplicated[i] && groups.ops[i] >= 2;
  }
  // Whether op node i, met on a walk from `root` through its tree, is computed by that tree: a node
  // of the group, or a duplicated op (which every group that reads it computes, so only along a walk).
  static constexpr bool in_group(std::size_t root, std::size_t i) {
    return Graph::kinds[i] == node_kind::op && (groups.root[i] == root || groups.duplicated[i]);
  }

  // A step runs node i: needed, not inside another node's fused group, and not a constant that
  // only fused groups read (those fold it into their tree).
  static constexpr std::array<bool, size> runs = [] {
    std::array<bool, size> r{};
    for (std::size_t i = 0; i < size; ++i)
      r[i] = needed[i] && groups.root[i] == i && !groups.duplicated[i] &&
             (Graph::kinds[i] != node_kind::constant || fetched[i]);
    // A constant runs when a node that is not a fused group reads it through its kernel.
    for (std::size_t c = 0; c < size; ++c)
      if (needed[c] && groups.root[c] == c && !groups.duplicated[c] && groups.ops[c] < 2)
        for (std::size_t j = 0; j < Graph::num_inputs[c]; ++j)
          if (Graph::kinds[Graph::input(c, j)] == node_kind::constant) r[Graph::input(c, j)] = true;
    return r;
  }();
  static constexpr std::size_t num_steps = [] {
    std::size_t n = 0;
    for (bool r : runs) n += r;
    return n;
  }();
  static constexpr std::array<std::size_t, num_steps> steps = [] {
    std::array<std::size_t, num_steps> s{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < size; ++i)
      if (runs[i]) s[k++] = i;
    return s;
  }();

  // The inputs of group `root` from outside it (constants are folded into the tree), in the
  // order a depth-first walk from the root meets them, each once.
  struct leaf_set {
    std::array<std::size_t, 2 * max_fused_ops + 2> positions{};
    std::size_t count = 0;
  };
  static constexpr leaf_set leaves_of(std::size_t root) {
    leaf_set l;
    std::array<std::size_t, 2 * max_fused_ops + 2> stack{};
    std::size_t top = 0;
    stack[top++] = root;
    while (top > 0) {
      const std::size_t p = stack[--top];
      if (in_group(root, p)) {
        for (std::size_t j = Graph::num_inputs[p]; j-- > 0;) stack[top++] = Graph::input(p, j);
      } else if (Graph::kinds[p] != node_kind::constant) {
        bool seen = false;
        for (std::size_t k = 0; k < l.count; ++k) seen = seen || l.positions[k] == p;
        if (!seen) l.positions[l.count++] = p;
      }
    }
    return l;
  }
  template <std::size_t Root>
  static constexpr auto leaf_positions = [] {
    constexpr leaf_set l = leaves_of(Root);
    std::array<std::size_t, l.count> a{};
    for (std::size_t k = 0; k < l.count; ++k) a[k] = l.positions[k];
    return a;
  }();

  template <std::size_t Root>
  static constexpr std::size_t leaf_index(std::size_t p) {
    for (std::size_t k = 0; k < leaf_positions<Root>.size(); ++k)
      if (leaf_positions<Root>[k] == p) return k;
    return leaf_positions<Root>.size();
  }

  // Which steps are fused, and what they contain: "5: fused_elementwise(relu(add(#0, #1))) <- 3, 4".
  static std::string describe() {
    detail::text t;
    for (std::size_t s : steps) {
      Graph::append_node(t, s);
      if (is_fused_root(s)) {
        t.append("  [fused: ");
        detail::append_int(t, static_cast<std::int64_t>(groups.ops[s]));
        t.append(" ops, inputs");
        const leaf_set l = leaves_of(s);
        for (std::size_t k = 0; k < l.count; ++k) {
          t.push_back(' ');
          detail::append_int(t, static_cast<std::int64_t>(l.positions[k]));
        }
        t.push_back(']');
      }
      t.push_back('\n');
    }
    return t.str();
  }
};

namespace detail {

// The tree of group Root seen from node P.
template <class Plan, std::size_t Root, std::size_t P,
          bool Member = Plan::in_group(Root, P),
          node_kind Kind = Plan::graph_type::kinds[P]>
struct fused_tree;

template <class Plan, std::size_t Root, std::size_t P>
struct fused_tree<Plan, Root, P, true, node_kind::op> {
  using graph = typename Plan::graph_type;
  using node = node_at_t<P, typename graph::nodes>;
  static constexpr auto make() {
    if constexpr (node::num_inputs == 1)
      return std::type_identity<fused::unary<node::op, typename fused_tree<Plan, Root, graph::input(P, 0)>::type>>{};
    else
      return std::type_identity<fused::binary<node::op, typename fused_tree<Plan, Root, graph::input(P, 0)>::type,
                                              typename fused_tree<Plan, Root, graph::input(P, 1)>::type>>{};
  }
  using type = typename decltype(make())::type;
};

template <class Plan, std::size_t Root, std::size_t P>
struct fused_tree<Plan, Root, P, false, node_kind::constant> {
  using type = fused::constant<node_at_t<P, typename Plan::graph_type::nodes>::value>;
};

template <class Plan, std::size_t Root, std::size_t P, node_kind Kind>
struct fused_tree<Plan, Root, P, false, Kind> {
  using graph = typename Plan::graph_type;
  static constexpr int layout = leaf_layout_of(graph::specs[P].dims, graph::specs[Root].dims);
  using type = fused::leaf<Plan::template leaf_index<Root>(P), static_cast<fused::leaf_layout>(layout)>;
};

}  // namespace detail

// The op a fused group runs: fused_elementwise<Tree> over the group's leaves.
template <class Plan, std::size_t Root>
using fused_op_of = ops::fused_elementwise<typename detail::fused_tree<Plan, Root, Root>::type>;

}  // namespace typeflow
