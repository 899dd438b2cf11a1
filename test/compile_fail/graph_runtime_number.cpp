// SPDX-License-Identifier: Apache-2.0
// A run-time number cannot be part of a graph's type; the message says what to write instead.
// expect: a number in a static graph must be known at compile time: write x * 2.5_c
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  float scale = 2.5f;
  auto y = x * scale;
  (void)y;
}
