// SPDX-License-Identifier: Apache-2.0
// An input used both as it is and placed on a device: two inputs named "x", which a feed could not
// tell apart. The message says how to place a leaf.
// expect: session: the graph has two inputs named
// expect: (node 3 is the second)
// expect: place it once, as constexpr auto x = tf::on<D>(tf::input<...>)
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(x) + tf::relu(tf::on<tf::thread_pool>(x));
  tf::cpu host;
  tf::thread_pool pool(1);
  tf::session s(tf::graph(y), tf::device_group(host, pool));
  return s.init_status().ok() ? 0 : 1;
}
