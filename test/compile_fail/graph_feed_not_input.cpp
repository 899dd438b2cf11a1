// SPDX-License-Identifier: Apache-2.0
// Only input nodes are fed; y is an op.
// expect: session::run: feed(relu, ...): node 1 (relu) is not an input (its kind is op)
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x);
  constexpr auto z = tf::exp(y);
  tf::cpu device;
  tf::session s(tf::graph(z), device);
  auto t = tf::tensor::from_values<float>({1, 2});
  auto r = s.run(tf::feed(x, *t), tf::feed(y, *t), tf::fetch(z));
  return r.ok() ? 0 : 1;
}
