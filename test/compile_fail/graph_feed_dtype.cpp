// SPDX-License-Identifier: Apache-2.0
// Input x holds f32; the run feeds a typed_tensor of f64.
// expect: x\' is f32 but is fed a typed_tensor of f64
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x);
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  auto t = tf::typed_tensor<double>::from(*tf::tensor::from_values<double>({1, 2}));
  auto r = s.run(tf::feed(x, *t), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
