// SPDX-License-Identifier: Apache-2.0
// An assign whose value's shape is not the variable's: both specs in the message.
// expect: graph_builder: node 2: assign to variable
// expect: the value is f32[3], the variable is f32[2]
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto v = b.variable("v", tf::dtype::f32, tf::shape{2});
  auto x = b.input("x", tf::dtype::f32, tf::shape{3});
  return b.assign(v, x);
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
