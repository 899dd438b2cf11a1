// SPDX-License-Identifier: Apache-2.0
// node_list<Nodes...>: the nodes of an expression or a graph, each after its inputs (so the list
// is a topological order, built as the expression is written), each once.
// Merging two lists keeps the first and appends the nodes of the second it lacks; membership is a
// base-class test on a type that inherits one tag per id, so a merge instantiates O(size) types
// and compares numbers, never pairs of node types.
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
  static constexpr std::size_t size = sizeof...(Nodes);
  static constexpr std::array<std::uint64_t, sizeof...(Nodes)> ids{node_id<Nodes>...};
};

namespace detail {

template <std::uint64_t Id>
struct id_tag {};
template <std::uint64_t Id, std::size_t Position>
struct id_position {};

// Inherits id_tag<id> for every node: "is this id in the list" is std::is_base_of.
template <class List>
struct id_set;
template <class... Nodes>
struct id_set<node_list<Nodes...>> : id_tag<node_id<Nodes>>... {};

template <class List, std::uint64_t Id>
inline constexpr bool contains_id = std::is_base_of_v<id_tag<Id>, id_set<List>>;

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
using missing_from = std::conditional_t<contains_id<List, node_id<Node>>, node_list<>, node_list<Node>>;

template <class A, class B>
struct merge;
template <class... A, class... B>
struct merge<node_list<A...>, node_list<B...>> {
  using type = decltype((node_list<A...>{} + ... + missing_from<node_list<A...>, B>{}));
};

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

// The node at position I (one base-class deduction, not a recursion over the list).
template <std::size_t I, class List>
using node_at_t =
    typename decltype(detail::node_from<I>(static_cast<const detail::indexed_nodes<List>*>(nullptr)))::type;

}  // namespace typeflow
