// SPDX-License-Identifier: Apache-2.0
// apply<Op> on an op with several outputs: refused, saying how to get each output.
// expect: apply_outputs<Op>(inputs...) gives each as an expression
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 6>>;
  constexpr auto y = tf::apply<tf::ops::top_k{.k = 2}>(x);
  (void)y;
  return 0;
}
