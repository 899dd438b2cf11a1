// SPDX-License-Identifier: Apache-2.0
// output(node, k) past the op's outputs: the message says how many it has.
// expect: graph_builder: node 2: output(node 1, 2): the op has 2 outputs
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2, 6});
  auto top = b.apply(tf::ops::top_k{.k = 2}, x);
  return b.output(top, 2);
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
