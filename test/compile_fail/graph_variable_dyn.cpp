// SPDX-License-Identifier: Apache-2.0
// A variable holds state of one shape: its dimensions must all be known.
// expect: typeflow::variable<Name, T, Shape>: a variable's shape must be fully known (no dyn)
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto v = tf::variable<"v", float, tf::static_shape<tf::dyn, 3>>;
  constexpr auto y = tf::relu(v);
  (void)y;
}
