// SPDX-License-Identifier: Apache-2.0
// A node placed on thread_pool, in a session given only a cpu: the message names the node, the
// device type and the session's devices.
// expect: static graph: node 0 (x) is placed on CPU (typeflow::basic_thread_pool<
// expect: which is not among the session
// expect: devices: CPU (typeflow::basic_cpu<
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::on<tf::thread_pool>(tf::input<"x", float, tf::static_shape<2>>);
  constexpr auto y = tf::relu(x);
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  auto t = tf::tensor::from_values<float>({1, 2}, tf::shape{2});
  auto r = s.run(tf::feed(x, *t), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
