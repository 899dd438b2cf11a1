// SPDX-License-Identifier: Apache-2.0
// A node of another graph_builder as an input: its number means nothing in this one.
// expect: graph_builder: node 1: add: an input is a node of another graph_builder
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  tf::graph_builder other;
  auto y = other.input("y", tf::dtype::f32, tf::shape{2});
  auto x = b.input("x", tf::dtype::f32, tf::shape{2});
  return x + y;
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
