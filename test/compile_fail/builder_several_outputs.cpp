// SPDX-License-Identifier: Apache-2.0
// top_k's node read as an input: it has two outputs, and the message says how to read one.
// expect: graph_builder: node 2: relu: input node 1 (top_k) has several outputs: read one with output(node, k)
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2, 6});
  auto top = b.apply(tf::ops::top_k{.k = 2}, x);
  return tf::relu(top);
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
