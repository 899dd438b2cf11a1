// SPDX-License-Identifier: Apache-2.0
// One run feeds x twice.
// expect: x\' is fed twice
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x);
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  auto t = tf::tensor::from_values<float>({1, 2});
  auto r = s.run(tf::feed(x, *t), tf::feed(x, *t), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
