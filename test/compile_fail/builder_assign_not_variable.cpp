// SPDX-License-Identifier: Apache-2.0
// assign() into an input: only a variable can be assigned.
// expect: graph_builder: node 2: assign: node 0 is not a variable
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2});
  return b.assign(x, tf::relu(x));
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
