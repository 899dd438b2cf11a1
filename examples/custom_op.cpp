// SPDX-License-Identifier: Apache-2.0
// An op and its kernel defined outside the library: swish(x) = x * sigmoid(beta * x).
// The op is a struct, the kernel a class template listed in a kernel list, and the program's
// registry puts that list before typeflow's own. Nothing is registered at start-up.
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdio>

namespace tf = typeflow;

namespace my {

struct swish {
  static constexpr std::string_view name = "swish";
  static constexpr int num_inputs = 1;
  double beta = 1.0;

  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const {
    if (!tf::is_floating(in[0])) return tf::errors::invalid_argument(name, ": needs a floating-point input, got ", in[0]);
    return in[0];
  }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  friend constexpr bool operator==(const swish&, const swish&) = default;
};

// One Eigen expression, so it runs vectorised on cpu and split over threads on thread_pool.
template <class Op, class Device, class T>
struct swish_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static tf::status compute(const Op& op, tf::kernel_context<Device>& ctx) {
    auto x = ctx.inputs[0].template unchecked_flat<const T>();
    auto y = ctx.outputs[0].template unchecked_flat<T>();
    y.device(ctx.device.eigen()) = x * (x * T(op.beta)).sigmoid();
    return tf::ok_status();
  }
};

using kernels = tf::kernel_list<
    tf::kernel_family<swish_kernel, swish, tf::devices<tf::cpu, tf::thread_pool>, tf::dtypes<float, double>>>;

// The program's registry: its own kernels first, then typeflow's.
using registry = tf::registry<kernels, tf::cpu_kernel_list>;

}  // namespace my

// Shape inference of the new op runs at compile time like any built-in op's.
static_assert(tf::static_infer_v<my::swish{.beta = 2.0}, tf::spec<float, tf::static_shape<tf::dyn, 8>>> ==
              tf::tensor_spec{tf::dtype::f32, tf::shape{tf::dyn, 8}});
static_assert(my::registry::has_kernel<my::swish, tf::cpu, float>);
static_assert(!my::registry::has_kernel<my::swish, tf::cpu, std::int32_t>);

int main() {
  tf::thread_pool device(2);
  auto x = tf::tensor::from_values<float>({-3, -1, 0, 1, 3}, tf::shape{5});
  if (!x.ok()) return 1;

  auto y = tf::call<float, my::registry>(device, my::swish{.beta = 1.5}, *x);
  if (!y.ok()) {
    std::fprintf(stderr, "swish failed: %s\n", y.status().to_string().c_str());
    return 1;
  }
  // Built-in ops are still there, through the same registry.
  auto z = tf::call<float, my::registry>(device, tf::ops::relu{}, *y);
  if (!z.ok()) return 1;

  double max_error = 0;
  for (int i = 0; i < 5; ++i) {
    const double v = *x->at<float>(i);
    const double expected = v / (1 + std::exp(-1.5 * v));
    max_error = std::max(max_error, std::abs(expected - *y->at<float>(i)));
    std::printf("swish(%+.1f) = %+.6f   relu(swish) = %.6f\n", v, *y->at<float>(i), *z->at<float>(i));
  }
  std::printf("max |error| vs std::exp reference: %.2e\n", max_error);

  // A bad input is a status, not a crash.
  auto ints = tf::tensor::from_values<std::int32_t>({1, 2});
  auto bad = tf::call<float, my::registry>(device, my::swish{}, *ints);
  std::printf("swish on i32: %s\n", bad.status().to_string().c_str());
  return max_error < 1e-5 && !bad.ok() ? 0 : 1;
}
