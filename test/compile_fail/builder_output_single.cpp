// SPDX-License-Identifier: Apache-2.0
// output(node, k) of an op with one output: the message names the node and says what output()
// reads.
// expect: graph_builder: node 2: output(node 1, 0): node 1 is not an op with several outputs
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2});
  return b.output(tf::exp(x), 0);
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
