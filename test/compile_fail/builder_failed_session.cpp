// SPDX-License-Identifier: Apache-2.0
// A build function that returns top_k's node itself (an op with two outputs, read through
// output(node, k)), used in a session: one message naming the mistake, and node<> and output<> of
// the failed graph add no errors of their own.
// expect: graph_builder: node 2: a result of the build function: input node 1 (top_k) has several outputs
// max-line: 3000
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

constexpr auto g(tf::graph_builder& b) {
  auto x = b.input("x", tf::dtype::f32, tf::shape{2, 6});
  return b.apply(tf::ops::top_k{.k = 2}, x);
}
using model = tf::built<g>;

int main() {
  tf::cpu device;
  tf::session s(model::graph{}, device);
  auto t = tf::tensor::filled<float>(tf::shape{2, 6}, 1.0f);
  auto r = s.run(tf::feed(model::node<"x">, *t), tf::fetch(model::output<0>));
  return r.ok() ? 0 : 1;
}
