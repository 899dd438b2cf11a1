// SPDX-License-Identifier: Apache-2.0
// Fetching y needs input x, and the run does not feed it.
// expect: session::run: input
// expect: x\' is needed by the fetches but not fed: add feed(x, value)
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x);
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  auto r = s.run(tf::fetch(y));
  return r.ok() ? 0 : 1;
}
