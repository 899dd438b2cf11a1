// SPDX-License-Identifier: Apache-2.0
// node_list<Nodes...>: the nodes of an expression or a graph, each after its inputs (so the list
// is a topological order, built as the expression is written), each once.
// Merging two lists keeps the first and appends the nodes of the second it lacks; membership is a
// fold over the ids, so a merge instantiates O(size) small types and compares numbers, never pairs
// of node types; a list that already holds the other's last node is the merge as it is.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <typeflow/graph/node.hpp>

namespace typeflow {

template <class... Nodes>
struct node_list {
  enum : std::size_t { size = sizeof...(Nodes) };  // not a constant named after the list (graph/expr.hpp)
};

namespace detail {

template <std::uint64_t Id, std::size_t Position>
struct id_position {};

// The last of a non-empty pack (no fold: Clang limits a fold expression to 256 operands).
template <class... Nodes>
struct last_of {
#if defined(__has_builtin) && __has_builtin(__type_pack_element)
  using type = __type_pack_element<sizeof...(Nodes) - 1, Nodes...>;
#else
  using type = typename decltype((std::type_identity<Nodes>{}, ...))::type;
#endif
};

template <std::size_t N>
constexpr bool id_in(const std::uint64_t (&ids)[N], std::uint64_t id) noexcept {
  for (std::uint64_t i : ids)
    if (i == id) return true;
  return false;
}

// "Is this id in the list": a loop over the ids, its value bool_constant's (see expr_facts in
// graph/expr.hpp for why no constant is named after the list).
template <class List, std::uint64_t Id>
struct has_id;
template <std::uint64_t Id>
struct has_id<node_list<>, Id> : std::false_type {};
template <class... Nodes, std::uint64_t Id>
struct has_id<node_list<Nodes...>, Id> : std::bool_constant<id_in<sizeof...(Nodes)>({node_id<Nodes>...}, Id)> {};

// Inherits id_position<id, i> for the node at position i: the position of an id is deduced.
template <class List, class Positions = std::make_index_sequence<List::size>>
struct position_map;
template <class... Nodes, std::size_t... Is>
struct position_map<node_list<Nodes...>, std::index_sequence<Is...>> : id_position<node_id<Nodes>, Is>... {};

template <std::uint64_t Id, std::size_t Position>
constexpr std::size_t position_from(const id_position<Id, Position>*) noexcept {
  return Position;
}

template <class... A, class... B>
node_list<A..., B...> operator+(node_list<A...>, node_list<B...>);

// node_list<Node> when the node is not in List, node_list<> when it is.
template <class List, class Node>
using missing_from = std::conditional_t<has_id<List, node_id<Node>>::value, node_list<>, node_list<Node>>;

// A list holds every node its last node depends on, so when A holds B's last node it holds B (but
// for nodes nothing reads, which a plan leaves out): no walk. That is the common case (a chain
// `n + x`, a residual block `f(x) + x`); otherwise B's nodes are appended one by one where A lacks them.
// The walk appends eight of B's nodes a step: one fold over all of B would nest as deep as B is
// long, and Clang refuses a fold of more than 256 operands (its expression nesting limit).
template <class A, class Acc, class... B>
struct append_missing_nodes {
  using type = Acc;
};
template <class A, class Acc, class B0, class B1, class B2, class B3, class B4, class B5, class B6, class B7,
          class... B>
struct append_missing_nodes<A, Acc, B0, B1, B2, B3, B4, B5, B6, B7, B...>
    : append_missing_nodes<A,
                     decltype(Acc{} + missing_from<A, B0>{} + missing_from<A, B1>{} + missing_from<A, B2>{} +
                              missing_from<A, B3>{} + missing_from<A, B4>{} + missing_from<A, B5>{} +
                              missing_from<A, B6>{} + missing_from<A, B7>{}),
                     B...> {};
template <class A, class Acc, class B0, class... B>
  requires(sizeof...(B) < 7)
struct append_missing_nodes<A, Acc, B0, B...> : append_missing_nodes<A, decltype(Acc{} + missing_from<A, B0>{}), B...> {};
template <class A, class B>
struct merge_walk;
template <class... A, class... B>
struct merge_walk<node_list<A...>, node_list<B...>> : append_missing_nodes<node_list<A...>, node_list<A...>, B...> {};
template <class A, class B, bool AHoldsB>
struct merge_pick : merge_walk<A, B> {};
template <class A, class B>
struct merge_pick<A, B, true> {
  using type = A;
};
template <class List>
struct last_id : std::integral_constant<std::uint64_t, 0> {};  // no node has id 0 (a hash; nor does any list hold it)
template <class... Nodes>
  requires(sizeof...(Nodes) > 0)
struct last_id<node_list<Nodes...>>
    : std::integral_constant<std::uint64_t, node_id<typename last_of<Nodes...>::type>> {};
template <class A, class B>
struct merge : merge_pick<A, B, (B::size == 0 || has_id<A, last_id<B>::value>::value)> {};

}  // namespace detail

// The position of node `Id` in List. The id must be in the list (the graph checks inputs first).
template <class List, std::uint64_t Id>
inline constexpr std::size_t position_of =
    detail::position_from<Id>(static_cast<const detail::position_map<List>*>(nullptr));

// The nodes of A, then those of B that A lacks: a topological order of both.
template <class A, class B>
using merge_nodes = typename detail::merge<A, B>::type;

namespace detail {

template <std::size_t I, class Node>
struct indexed_node {};
template <class List, class Positions = std::make_index_sequence<List::size>>
struct indexed_nodes;
template <class... Nodes, std::size_t... Is>
struct indexed_nodes<node_list<Nodes...>, std::index_sequence<Is...>> : indexed_node<Is, Nodes>... {};

template <std::size_t I, class Node>
std::type_identity<Node> node_from(const indexed_node<I, Node>*);

}  // namespace detail

// The nodes a graph_builder wrote (graph/graph_builder.hpp): a list whose node I is a type of its
// own, built_node<Build, I>, so that no type spells the whole graph.
template <auto Build>
struct built_nodes;

namespace detail {
template <std::size_t I, class List>
struct node_at {
  using type = typename decltype(node_from<I>(static_cast<const indexed_nodes<List>*>(nullptr)))::type;
};
template <std::size_t I, auto Build>
struct node_at<I, built_nodes<Build>> {
  using type = typename built_nodes<Build>::template node<I>;
};
}  // namespace detail

// The node at position I (one base-class deduction, not a recursion over the list).
template <std::size_t I, class List>
using node_at_t = typename detail::node_at<I, List>::type;

}  // namespace typeflow
