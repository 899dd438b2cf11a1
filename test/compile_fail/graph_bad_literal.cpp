// SPDX-License-Identifier: Apache-2.0
// _c reads decimal numbers only.
// expect: typeflow::literals::_c takes a decimal number such as 2.5_c or 1e-3_c
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;
using namespace tf::literals;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = x * 0x10_c;
  (void)y;
}
