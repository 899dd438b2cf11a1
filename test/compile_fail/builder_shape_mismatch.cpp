// SPDX-License-Identifier: Apache-2.0
// A build function that adds [2, 3] and [4, 3]: a compile error naming the node (its number in
// the order written) and both shapes, in the words of the run-time check.
// expect: graph_builder: node 2: add: shapes [2, 3] and [4, 3] do not broadcast
// max-line: 3000
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto bad(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2, 3});
  auto y = b.input("y", tf::dtype::f32, tf::shape{4, 3});
  return tf::relu(x + y);
}

int main() { return static_cast<int>(tf::built<bad>::graph::size); }
