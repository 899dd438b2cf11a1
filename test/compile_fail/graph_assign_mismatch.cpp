// SPDX-License-Identifier: Apache-2.0
// The value assigned to a variable must have its dtype and shape.
// expect: assign to variable
// expect: the value is f32[3], the variable is f32[2]
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto v = tf::variable<"v", float, tf::static_shape<2>>;
  constexpr auto x = tf::input<"x", float, tf::static_shape<3>>;
  constexpr auto a = tf::assign(v, x);
  (void)a;
}
