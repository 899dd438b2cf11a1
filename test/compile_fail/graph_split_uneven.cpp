// SPDX-License-Identifier: Apache-2.0
// A split whose parts would not be equal, found at compile time with the run-time check's words.
// expect: split: dimension 1 of input shape [2, 6] (6) does not divide into 4 equal parts
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 6>>;
  auto [a, b, c, d] = tf::split<4, 1>(x);
  (void)tf::graph(a, b, c, d);
  return 0;
}
