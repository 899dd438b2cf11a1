// SPDX-License-Identifier: Apache-2.0
// The registry: compile-time lookup, order of lists (a user's list first overrides the
// defaults), extension with a user's own op, and the text of the missing-kernel message.
#include "support.hpp"

#include <type_traits>

#include <boost/hana/length.hpp>

namespace tf = typeflow;

namespace user {

// A user's relu for f32 that marks its output, so the test can see which kernel ran.
template <class Op, class Device, class T>
struct marked_relu {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  static tf::status compute(const Op&, tf::kernel_context<Device>& ctx) {
    auto y = ctx.outputs[0].template unchecked_values<T>();
    for (auto& v : y) v = T(-7);
    return tf::ok_status();
  }
};

using overrides = tf::kernel_list<tf::kernel_family<marked_relu, tf::ops::relu, tf::devices<tf::cpu>, tf::dtypes<float>>>;
using my_registry = tf::registry<overrides, tf::cpu_kernel_list>;

}  // namespace user

TEST_CASE("the first list that provides a kernel wins", "[registry]") {
  STATIC_REQUIRE(std::is_same_v<user::my_registry::kernel<tf::ops::relu, tf::cpu, float>,
                                user::marked_relu<tf::ops::relu, tf::cpu, float>>);
  // Where the user's list has nothing, the defaults answer.
  STATIC_REQUIRE(std::is_same_v<user::my_registry::kernel<tf::ops::relu, tf::cpu, double>,
                                tf::default_registry::kernel<tf::ops::relu, tf::cpu, double>>);
  STATIC_REQUIRE(std::is_same_v<user::my_registry::kernel<tf::ops::relu, tf::thread_pool, float>,
                                tf::default_registry::kernel<tf::ops::relu, tf::thread_pool, float>>);
  STATIC_REQUIRE(tf::kernel<tf::default_registry::kernel<tf::ops::exp, tf::cpu, float>>);

  tf::cpu device;
  auto x = tf::tensor::from_values<float>({1, -2, 3});
  REQUIRE(x.ok());
  auto mine = tf::call<float, user::my_registry>(device, tf::ops::relu{}, *x);
  REQUIRE(mine.ok());
  CHECK(*mine->at<float>(0) == -7.0f);
  auto stock = tf::call<float>(device, tf::ops::relu{}, *x);
  REQUIRE(stock.ok());
  CHECK(*stock->at<float>(0) == 1.0f);
}

TEST_CASE("a missing kernel is described with the dtypes that exist", "[registry]") {
  constexpr auto text = tf::default_registry::missing_kernel_message<tf::ops::exp, tf::cpu, bool>;
  CHECK(text().view() ==
        "no kernel for op exp on device CPU with dtype bool; this op has kernels on this device for: f16, bf16, f32, f64");
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::exp, tf::cpu, bool>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::cast, tf::thread_pool, bool>);
  // An empty registry has nothing.
  STATIC_REQUIRE(!tf::registry<>::has_kernel<tf::ops::exp, tf::cpu, float>);
  CHECK(tf::registry<>::missing_kernel_message<tf::ops::exp, tf::cpu, float>().view() ==
        "no kernel for op exp on device CPU with dtype f32; this op has no kernel on this device for any dtype in this "
        "registry. If it is an op of your own, give the session a registry that lists its kernels first: "
        "tf::session<Graph, Device, tf::registry<my_kernels, tf::cpu_kernel_list>> (README: \"Add an op and a kernel\")");
}

namespace {
// A name for a name, and a name beside an unnamed list.
struct renamed_cpu_kernels : tf::named_kernel_list<tf::cpu_kernel_list> {};
struct named_unary : tf::named_kernel_list<tf::kernel_list<
                         tf::kernel_family<tf::cpu_kernels::eigen_unary_kernel, tf::ops::exp, tf::devices<tf::cpu>, tf::dtypes<float>>>> {};
}  // namespace

TEST_CASE("named kernel lists: registries unwrap them, however deep, beside unnamed ones", "[registry]") {
  STATIC_REQUIRE(std::is_same_v<tf::kernel_families_t<renamed_cpu_kernels>, tf::kernel_families_t<tf::cpu_kernel_list>>);
  STATIC_REQUIRE(std::is_same_v<decltype(tf::registry<renamed_cpu_kernels>::families), decltype(tf::default_registry::families)>);
  STATIC_REQUIRE(tf::registry<renamed_cpu_kernels>::has_kernel<tf::ops::matmul, tf::cpu, float>);
  using mixed = tf::registry<named_unary, tf::cpu_kernels::binary_kernels>;  // named_unary first
  STATIC_REQUIRE(mixed::has_kernel<tf::ops::exp, tf::cpu, float>);
  STATIC_REQUIRE(!mixed::has_kernel<tf::ops::exp, tf::cpu, double>);
  STATIC_REQUIRE(mixed::has_kernel<tf::ops::add, tf::thread_pool, double>);
  STATIC_REQUIRE(std::is_same_v<mixed::kernel<tf::ops::exp, tf::cpu, float>,
                                tf::cpu_kernels::eigen_unary_kernel<tf::ops::exp, tf::cpu, float>>);
  STATIC_REQUIRE(boost::hana::length(tf::kernel_families_t<tf::cpu_kernels::binary_kernels>{}) == boost::hana::size_c<10>);
}
