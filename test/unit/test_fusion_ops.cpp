// SPDX-License-Identifier: Apache-2.0
// Fusion: more random expressions on the calling thread, and the ops the random trees leave out
// (exp, log, sqrt, rsqrt, div, pow) on inputs where they are defined and well conditioned.
#include "fusion_support.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using namespace tf::test::fusion;

TEST_CASE("fusion: more random expressions on the calling thread", "[fusion]") {
  tf::cpu device;
  check_random_expressions<tf::cpu, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28>(device);
}

TEST_CASE("fusion: exp, log, sqrt, rsqrt, div and pow on safe inputs", "[fusion]") {
  tf::cpu device;
  // Inputs in [0.5, 2]: every op below is defined and well conditioned there.
  check_expression<tf::cpu, tf::log(a * r + 1.0_c) / tf::sqrt(a + s)>(device, 91, 0.5, 2);
  check_expression<tf::cpu, tf::pow(a, r) * tf::rsqrt(tf::exp(-a) + 0.5_c)>(device, 92, 0.5, 2);
  check_expression<tf::cpu, tf::square(a / r) - s>(device, 93, 0.5, 2);
}


// The host kernel alone on rows of every length: relu(x + r1) - r2 * s, with r1 and r2 rows of the
// output's last dimension. Short rows go several to a unit of the split (each row operand repeated
// over the unit), long ones are cut into chunks; one unit in all is a single pass.
template <class T, class Device>
void check_fused_rows(Device& device, const tf::shape& out_shape) {
  using tree = tf::fused::binary<tf::ops::sub{},
                                 tf::fused::unary<tf::ops::relu{}, tf::fused::binary<tf::ops::add{}, tf::fused::leaf<0, tf::fused::leaf_layout::full>,
                                                                                      tf::fused::leaf<1, tf::fused::leaf_layout::row>>>,
                                 tf::fused::binary<tf::ops::mul{}, tf::fused::leaf<2, tf::fused::leaf_layout::row>,
                                                   tf::fused::leaf<3, tf::fused::leaf_layout::scalar>>>;
  using op = tf::ops::fused_elementwise<tree>;
  using kernel = tf::default_registry::kernel<op, Device, T>;
  const std::int64_t inner = out_shape.rank() == 0 ? 1 : out_shape[out_shape.rank() - 1];
  INFO(tf::name_of(tf::dtype_of<T>) << " " << out_shape.to_string() << " on " << device.num_threads() << " threads");
  const tf::tensor inputs[] = {tf::test::random_tensor<T>(out_shape, 1), tf::test::random_tensor<T>(tf::shape{inner}, 2),
                               tf::test::random_tensor<T>(tf::shape{inner}, 3), tf::test::random_tensor<T>(tf::shape{}, 4)};
  tf::tensor y = *tf::tensor::filled(out_shape, T(7));
  tf::kernel_context<Device> ctx{device, inputs, std::span<tf::tensor>(&y, 1)};
  REQUIRE(kernel::compute(op{}, ctx).ok());
  const auto x = tf::test::as_doubles<T>(inputs[0]), r1 = tf::test::as_doubles<T>(inputs[1]);
  const auto r2 = tf::test::as_doubles<T>(inputs[2]);
  const double s = tf::test::as_doubles<T>(inputs[3])[0];
  std::vector<double> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t j = i % static_cast<std::size_t>(inner);
    // Each op rounded to T, as the kernel computes.
    const double sum = tf::test::to_double(static_cast<T>(x[i] + r1[j]));
    const double product = tf::test::to_double(static_cast<T>(r2[j] * s));
    want[i] = std::max(sum, 0.0) - product;
  }
  tf::test::require_close<T>(y, out_shape, want);
}

TEMPLATE_LIST_TEST_CASE("fusion: the host kernel's row operands, on rows of every length", "[fusion]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  for (const tf::shape& s : {tf::shape{1, 5}, tf::shape{5}, tf::shape{3, 1}, tf::shape{1000, 1}, tf::shape{7, 255},
                             tf::shape{9, 256}, tf::shape{300, 257}, tf::shape{2, 3, 37}, tf::shape{1001, 3},
                             tf::shape{3, 40000}, tf::shape{1, 40000}, tf::shape{}, tf::shape{0, 5}}) {
    check_fused_rows<float>(device, s);
    check_fused_rows<double>(device, s);
  }
  for (const tf::shape& s : {tf::shape{7, 255}, tf::shape{1001, 3}, tf::shape{3, 40000}}) {
    check_fused_rows<Eigen::half>(device, s);
    check_fused_rows<Eigen::bfloat16>(device, s);
  }
}
