// SPDX-License-Identifier: Apache-2.0
// node<"y"> of a built graph that has no input or variable named y.
// expect: the graph has no input or variable named
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) { return tf::exp(b.input("x", tf::dtype::f32, tf::shape{2})); }

int main() {
  constexpr auto y = tf::built<g>::node<"y">;
  (void)y;
}
