// SPDX-License-Identifier: Apache-2.0
// A feed takes a tensor or a typed_tensor, not a container of numbers.
// expect: typeflow::feed(x, value): value must be a typeflow::tensor or a typeflow::typed_tensor<T>
#include <typeflow/typeflow.hpp>

#include <vector>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x);
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  auto r = s.run(tf::feed(x, std::vector<float>{1, 2}), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
