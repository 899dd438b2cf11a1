// SPDX-License-Identifier: Apache-2.0
// [?, 784] x [100, 10]: the inner dimensions differ. The error is at the line that wrote matmul,
// with both shapes.
// expect: matmul: inner dimensions differ
// expect: [?, 784]
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<tf::dyn, 784>>;
  constexpr auto w = tf::variable<"w", float, tf::static_shape<100, 10>>;
  constexpr auto y = tf::matmul(x, w);
  (void)y;
}
