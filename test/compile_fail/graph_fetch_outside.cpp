// SPDX-License-Identifier: Apache-2.0
// z is not part of the session's graph (built from y alone), so it cannot be fetched.
// expect: typeflow: this expression is not part of the graph
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x);
  constexpr auto z = tf::exp(x);
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  auto t = tf::tensor::from_values<float>({1, 2});
  auto r = s.run(tf::feed(x, *t), tf::fetch(z));
  return r.ok() ? 0 : 1;
}
