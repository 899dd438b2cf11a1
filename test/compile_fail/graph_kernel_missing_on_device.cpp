// SPDX-License-Identifier: Apache-2.0
// An op placed on a device whose kernel list lacks it: the usual message, naming the op, the
// device type and the dtype, and the dtypes it has there.
// expect: no kernel for op exp on device TEST with dtype f32
#include <typeflow/typeflow.hpp>

#include "../unit/remote_device.hpp"
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto y = tf::on<tf::test::remote_device>(tf::exp(x));
  tf::cpu host;
  tf::test::remote_device remote;
  using registry = tf::registry<tf::test::remote_kernels, tf::cpu_kernel_list>;
  tf::session<decltype(tf::graph(y)), tf::device_group<tf::cpu, tf::test::remote_device>, registry> s(
      tf::graph(y), tf::device_group(host, remote));
  auto t = tf::tensor::from_values<float>({1, 2}, tf::shape{2});
  auto r = s.run(tf::feed(x, *t), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
