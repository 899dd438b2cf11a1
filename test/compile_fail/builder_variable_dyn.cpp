// SPDX-License-Identifier: Apache-2.0
// A variable's shape must be fully known: the builder says so, naming the variable.
// expect: graph_builder: node 1: variable
// expect: shape must be fully known (no dyn), got [?, 3]
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2, 4});
  auto w = b.variable("w", tf::dtype::f32, tf::shape{tf::dyn, 3});
  return tf::matmul(x, w);
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
