// SPDX-License-Identifier: Apache-2.0
// A static session through the dispatch tables (dispatched<Registry>) still names its kernels at
// compile time: a registry without matmul kernels is the same error as without dispatched<>, with
// the op, the device and the dtype, not a failed lookup at run time.
// expect: no kernel for op matmul on device CPU with dtype f32
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 2>>;
  constexpr auto y = tf::matmul(x, x);
  tf::cpu device;
  using unary_only = tf::registry<tf::cpu_kernels::unary_kernels>;
  tf::session<decltype(tf::graph(y)), tf::cpu, tf::dispatched<unary_only>> s(tf::graph(y), device);
  auto t = tf::tensor::from_values<float>({1, 2, 3, 4}, tf::shape{2, 2});
  auto r = s.run(tf::feed(x, *t), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
