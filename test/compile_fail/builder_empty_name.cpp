// SPDX-License-Identifier: Apache-2.0
// An input without a name: feeds find inputs by name.
// expect: graph_builder: node 0: an input needs a name
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("", tf::dtype::f32, tf::shape{2});
  return tf::relu(x);
}

int main() { return static_cast<int>(tf::built<g>::graph::size); }
