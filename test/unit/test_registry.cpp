// SPDX-License-Identifier: Apache-2.0
// The registry: compile-time lookup, order of lists (a user's list first overrides the
// defaults), extension with a user's own op, and the text of the missing-kernel message.
#include "support.hpp"

#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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

// An op of the program's own that takes a built-in op's name: the table of a registry that lists it
// gives the name "relu" to it, so tf::ops::relu's kernel cannot come from that table.
struct own_relu {
  static constexpr std::string_view name = "relu";
  static constexpr int num_inputs = 1;
  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const { return in[0]; }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  friend constexpr bool operator==(const own_relu&, const own_relu&) = default;
};
using renaming_registry =
    tf::registry<tf::kernel_list<tf::kernel_family<marked_relu, own_relu, tf::devices<tf::cpu>, tf::dtypes<float>>>,
                 tf::cpu_kernel_list>;

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

// A static session whose kernels come from the dispatch tables (registry/dispatched.hpp): the step
// of each op runs the table's entry for the kernel the registry names, a fused group's kernel is
// compiled in place, and a matmul on a variable keeps its b packed through the table's entry.
namespace {
constexpr auto dx = tf::input<"x", float, tf::static_shape<8, 8>>;
constexpr auto dw = tf::variable<"w", float, tf::static_shape<8, 8>>;
constexpr auto db = tf::variable<"b", float, tf::static_shape<8>>;
constexpr auto dy = tf::softmax(tf::relu(tf::matmul(dx, dw) + db)) + tf::apply<tf::op_with<tf::ops::transpose>(tf::attr<"perm">(tf::int_list{1, 0}))>(tf::tanh(dw * dw));
}  // namespace

TEMPLATE_LIST_TEST_CASE("dispatched<>: a static session runs the table's kernels, bit for bit", "[registry][dispatched]",
                        tf::test::device_policies) {
  using matmul_kernel = tf::default_registry::kernel<tf::ops::matmul, TestType, float>;
  STATIC_REQUIRE(std::is_same_v<tf::dispatched<>::kernel<tf::ops::matmul, TestType, float>,
                                tf::detail::dispatched_kernel<tf::default_registry, matmul_kernel, float>>);
  STATIC_REQUIRE(tf::packs_operand<tf::dispatched<>::kernel<tf::ops::matmul, TestType, float>>);
  STATIC_REQUIRE(!tf::packs_operand<tf::dispatched<>::kernel<tf::ops::softmax, TestType, float>>);
  // What the parallel executor reads of a kernel is the kernel's own (is_expensive, specialisations included).
  STATIC_REQUIRE(tf::is_expensive<tf::dispatched<>::kernel<tf::ops::matmul, TestType, float>> == tf::is_expensive<matmul_kernel>);
  STATIC_REQUIRE(tf::is_expensive<tf::dispatched<>::kernel<tf::ops::add, TestType, float>> ==
                 tf::is_expensive<tf::default_registry::kernel<tf::ops::add, TestType, float>>);
  using graph = decltype(tf::graph(dy));
  auto device = tf::test::make_device<TestType>();
  tf::session<graph, TestType> compiled(graph{}, device);
  tf::session<graph, TestType, tf::dispatched<>> table(graph{}, device);
  tf::session<graph, TestType, tf::dispatched<>, tf::fuses_by_default<TestType>, true, true> parallel(graph{}, device,
                                                                                                      tf::parallel{2});
  REQUIRE(parallel.init_status().ok());
  const tf::tensor w = tf::test::random_tensor<float>(tf::shape{8, 8}, 7);
  const tf::tensor b = tf::test::random_tensor<float>(tf::shape{8}, 8);
  REQUIRE((compiled.initialize(dw, w).ok() && compiled.initialize(db, b).ok()));
  REQUIRE((table.initialize(dw, w).ok() && table.initialize(db, b).ok()));
  REQUIRE((parallel.initialize(dw, w).ok() && parallel.initialize(db, b).ok()));
  for (int run = 0; run < 3; ++run) {
    const tf::tensor x = tf::test::random_tensor<float>(tf::shape{8, 8}, 100 + run);
    auto want = compiled.run(tf::feed(dx, x), tf::fetch(dy));
    auto got = table.run(tf::feed(dx, x), tf::fetch(dy));
    auto got_parallel = parallel.run(tf::feed(dx, x), tf::fetch(dy));
    REQUIRE((want.ok() && got.ok() && got_parallel.ok()));
    const auto a = std::get<0>(*want).values(), c = std::get<0>(*got).values(), p = std::get<0>(*got_parallel).values();
    REQUIRE((a.size() == 64 && c.size() == 64 && p.size() == 64));
    CHECK(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.data(), p.data(), a.size() * sizeof(float)) == 0);
  }
  // w was read by three runs: the second packed it (kernels/packed_operand.hpp), through the entry.
  CHECK(compiled.derived_forms() == 1);
  CHECK(table.derived_forms() == 1);
  CHECK(parallel.derived_forms() == 1);
}

TEST_CASE("dispatched<my_registry>: a static session runs the user's kernel from the user's table", "[registry][dispatched]") {
  STATIC_REQUIRE(std::is_same_v<tf::dispatched<user::my_registry>::kernel<tf::ops::relu, tf::cpu, float>,
                                tf::detail::dispatched_kernel<user::my_registry, user::marked_relu<tf::ops::relu, tf::cpu, float>, float>>);
  constexpr auto in = tf::input<"x", float, tf::static_shape<3>>;
  constexpr auto out = tf::relu(in);
  tf::cpu device;
  tf::session<decltype(tf::graph(out)), tf::cpu, tf::dispatched<user::my_registry>> s(tf::graph(out), device);
  auto x = tf::tensor::from_values<float>({1, -2, 3});
  REQUIRE(x.ok());
  auto r = s.run(tf::feed(in, *x), tf::fetch(out));
  REQUIRE(r.ok());
  const auto y = std::get<0>(*r).values();
  CHECK(std::vector<float>(y.begin(), y.end()) == std::vector<float>{-7, -7, -7});
}

TEST_CASE("dispatched<R>: an op whose name the table gives to another op type runs its kernel in place", "[registry][dispatched]") {
  using table = tf::dispatched<user::renaming_registry>;
  STATIC_REQUIRE(std::is_same_v<table::kernel<tf::ops::relu, tf::cpu, float>, tf::default_registry::kernel<tf::ops::relu, tf::cpu, float>>);
  STATIC_REQUIRE(std::is_same_v<table::kernel<user::own_relu, tf::cpu, float>,
                                tf::detail::dispatched_kernel<user::renaming_registry, user::marked_relu<user::own_relu, tf::cpu, float>, float>>);
  // dispatched<dispatched<R>> is dispatched<R>.
  STATIC_REQUIRE(std::is_same_v<tf::dispatched<tf::dispatched<>>::kernel<tf::ops::matmul, tf::cpu, float>,
                                tf::dispatched<>::kernel<tf::ops::matmul, tf::cpu, float>>);
  constexpr auto in = tf::input<"x", float, tf::static_shape<3>>;
  constexpr auto out = tf::relu(in) + tf::apply<user::own_relu{}>(in);
  tf::cpu device;
  tf::session<decltype(tf::graph(out)), tf::cpu, table, false> s(tf::graph(out), device);
  auto x = tf::tensor::from_values<float>({1, -2, 3});
  REQUIRE(x.ok());
  auto r = s.run(tf::feed(in, *x), tf::fetch(out));
  REQUIRE(r.ok());
  const auto y = std::get<0>(*r).values();
  CHECK(std::vector<float>(y.begin(), y.end()) == std::vector<float>{-6, -7, -4});  // relu(x) - 7
}

TEST_CASE("dispatched_kernel: a table whose entry is not the named kernel is an error naming the op, the device and the dtype",
          "[registry][dispatched]") {
  // The default table's relu for f32 is Eigen's, not marked_relu: every run is refused, none runs the other kernel.
  using wrong = tf::detail::dispatched_kernel<tf::default_registry, user::marked_relu<tf::ops::relu, tf::cpu, float>, float>;
  tf::cpu device;
  auto x = tf::tensor::from_values<float>({1, -2, 3});
  auto y = tf::tensor::from_values<float>({5, 5, 5});
  REQUIRE((x.ok() && y.ok()));
  const tf::tensor in[] = {*x};
  tf::tensor out[] = {*y};
  tf::kernel_context<tf::cpu> ctx{device, in, out};
  const tf::status st = wrong::compute(tf::ops::relu{}, ctx);
  CHECK(st.code() == tf::status_code::internal);
  CHECK(st.message() == "relu: the dispatch table on " + std::string(device.name()) +
                            " holds no entry for f32 that is the kernel the registry names");
  CHECK(*out[0].at<float>(0) == 5.0f);  // untouched
}
