// SPDX-License-Identifier: Apache-2.0
// A kernel type with neither compute nor compute_async (here a misspelt `compute`) is refused
// where it is first run, with what a kernel needs.
// expect: typeflow: a kernel type needs op_type, device_type, value_type
// expect: static void compute_async(const op_type&, kernel_context<device_type>&, kernel_done)
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

template <class Op, class Device, class T>
struct misspelt_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  static tf::status compute_it(const Op&, tf::kernel_context<Device>&) { return tf::ok_status(); }
};

using kernels = tf::kernel_list<tf::kernel_family<misspelt_kernel, tf::ops::neg, tf::devices<tf::cpu>, tf::dtypes<float>>>;
using registry = tf::registry<kernels, tf::cpu_kernel_list>;

int main() {
  tf::cpu device;
  auto x = tf::tensor::from_values<float>({1, 2});
  auto y = tf::call<float, registry>(device, tf::ops::neg{}, *x);
  return y.ok() ? 0 : 1;
}
