// SPDX-License-Identifier: Apache-2.0
// Elementwise unary ops: every op x dtype against a plain-loop reference on random inputs,
// on both host policies; shape inference at compile time; run-time errors.
#include "support.hpp"

#include <cmath>

namespace tf = typeflow;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;

namespace {

// The shapes every elementwise test runs on: scalar, size 0, size 1, odd, and a 3-D block
// larger than one vector register and one thread block.
const std::vector<tf::shape> elementwise_shapes = {tf::shape{}, tf::shape{0}, tf::shape{1}, tf::shape{7},
                                                   tf::shape{3, 0, 2}, tf::shape{5, 17, 33}};

// Plain reference for each op, in double precision.
double reference(const tf::ops::neg&, double x) { return -x; }
double reference(const tf::ops::abs&, double x) { return std::abs(x); }
double reference(const tf::ops::exp&, double x) { return std::exp(x); }
double reference(const tf::ops::log&, double x) { return std::log(x); }
double reference(const tf::ops::sqrt&, double x) { return std::sqrt(x); }
double reference(const tf::ops::rsqrt&, double x) { return 1.0 / std::sqrt(x); }
double reference(const tf::ops::square&, double x) { return x * x; }
double reference(const tf::ops::tanh&, double x) { return std::tanh(x); }
double reference(const tf::ops::sigmoid&, double x) { return 1.0 / (1.0 + std::exp(-x)); }
double reference(const tf::ops::relu&, double x) { return x > 0 ? x : 0; }
double reference(const tf::ops::softplus&, double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double reference(const tf::ops::erf&, double x) { return std::erf(x); }
double reference(const tf::ops::leaky_relu& op, double x) { return x > 0 ? x : op.alpha * x; }
double reference(const tf::ops::hard_sigmoid& op, double x) { return std::max(0.0, std::min(1.0, op.alpha * x + op.beta)); }
double reference(const tf::ops::clip& op, double x) { return std::min(std::max(x, op.min), op.max); }
double reference(const tf::ops::gelu& g, double x) {
  if (g.approximate) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

// Runs `op` on random inputs of every test shape and compares with the reference.
// Inputs lie in [lo, hi]; `tol` overrides the dtype's default tolerance when > 0.
template <class T, class Device, class Op>
void check_unary(Device& device, const Op& op, double lo, double hi, double tol = 0) {
  std::uint64_t seed = 1;
  for (const auto& s : elementwise_shapes) {
    INFO("op " << Op::name << ", dtype " << tf::name_of(tf::dtype_of<T>) << ", shape " << s.to_string());
    const auto x = random_tensor<T>(s, seed++, lo, hi);
    auto y = tf::test::call<T>(device, op, x);
    REQUIRE(y.ok());
    std::vector<double> expected;
    for (double v : as_doubles<T>(x)) {
      double r = reference(op, v);
      // Integer results are exact; the reference is computed in double and converted back.
      if constexpr (std::is_integral_v<T>) r = static_cast<double>(static_cast<T>(r));
      expected.push_back(r);
    }
    require_close<T>(*y, s, expected, tol > 0 ? tol : tf::test::default_tolerance<T>());
  }
}

template <class T, class Device>
void check_float_ops(Device& d) {
  // Transcendentals in float are accurate to a few ulp; allow 1e-5 relative (f32) as Eigen's
  // vectorised exp/log/tanh/erf promise.
  const double tol = std::is_same_v<T, float> ? 1e-5 : 0;
  check_unary<T>(d, tf::ops::exp{}, -5, 5, tol);
  check_unary<T>(d, tf::ops::log{}, 1e-3, 10, tol);
  check_unary<T>(d, tf::ops::sqrt{}, 0, 10, tol);
  check_unary<T>(d, tf::ops::rsqrt{}, 1e-2, 10, tol);
  check_unary<T>(d, tf::ops::tanh{}, -6, 6, tol);
  check_unary<T>(d, tf::ops::sigmoid{}, -10, 10, tol);
  check_unary<T>(d, tf::ops::softplus{}, -40, 40, tol);
  check_unary<T>(d, tf::ops::gelu{}, -6, 6, tol);
  check_unary<T>(d, tf::ops::gelu{.approximate = true}, -6, 6, tol);
  check_unary<T>(d, tf::ops::erf{}, -4, 4, tol);
  check_unary<T>(d, tf::ops::leaky_relu{}, -10, 10, tol);
  check_unary<T>(d, tf::ops::leaky_relu{.alpha = 0.01}, -10, 10, tol);
  check_unary<T>(d, tf::ops::hard_sigmoid{}, -6, 6, tol);
  check_unary<T>(d, tf::ops::hard_sigmoid{.alpha = 0.5, .beta = 0.25}, -6, 6, tol);
}

template <class T, class Device>
void check_signed_ops(Device& d) {
  check_unary<T>(d, tf::ops::neg{}, -100, 100);
  check_unary<T>(d, tf::ops::abs{}, -100, 100);
  check_unary<T>(d, tf::ops::relu{}, -100, 100);
  check_unary<T>(d, tf::ops::square{}, -10, 10);
  check_unary<T>(d, tf::ops::clip{.min = -5, .max = 7}, -100, 100);
  check_unary<T>(d, tf::ops::clip{.min = 3}, -100, 100);
  check_unary<T>(d, tf::ops::clip{.max = -3}, -100, 100);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("unary ops match their references", "[unary]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_float_ops<float>(device); check_signed_ops<float>(device); }
  SECTION("f64") { check_float_ops<double>(device); check_signed_ops<double>(device); }
  SECTION("f16") {
    check_float_ops<Eigen::half>(device);
    check_signed_ops<Eigen::half>(device);
  }
  SECTION("bf16") { check_signed_ops<Eigen::bfloat16>(device); check_unary<Eigen::bfloat16>(device, tf::ops::exp{}, -3, 3); }
  SECTION("i8") { check_signed_ops<std::int8_t>(device); }
  SECTION("i32") { check_signed_ops<std::int32_t>(device); }
  SECTION("i64") { check_signed_ops<std::int64_t>(device); }
  SECTION("u8") {
    check_unary<std::uint8_t>(device, tf::ops::clip{.min = 10, .max = 200}, 0, 255);
    check_unary<std::uint8_t>(device, tf::ops::clip{.min = -10, .max = 1e9}, 0, 255);  // bounds past the range
  }
}

TEMPLATE_LIST_TEST_CASE("clip keeps NaN and gives max where min > max", "[unary]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  auto x = tf::tensor::from_values<float>({std::nanf(""), -3.0f, 0.5f, 9.0f});
  auto y = tf::test::call<float>(device, tf::ops::clip{.min = -1, .max = 1}, *x);
  REQUIRE(y.ok());
  const float* v = static_cast<const float*>(y->data());
  REQUIRE(std::isnan(v[0]));
  REQUIRE((v[1] == -1.0f && v[2] == 0.5f && v[3] == 1.0f));
  auto z = tf::test::call<float>(device, tf::ops::clip{.min = 2, .max = 1}, *x);
  REQUIRE(z.ok());
  for (int i = 1; i < 4; ++i) REQUIRE(static_cast<const float*>(z->data())[i] == 1.0f);
}

TEMPLATE_LIST_TEST_CASE("special values follow IEEE semantics", "[unary]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const double inf = std::numeric_limits<double>::infinity();
  auto x = tf::tensor::from_values<float>({0.0f, -1.0f, 1e30f, -1e30f}, tf::shape{4});
  REQUIRE(x.ok());
  auto l = tf::test::call<float>(device, tf::ops::log{}, *x);
  REQUIRE(l.ok());
  const tf::tensor log_y = *l;  // a non-dependent type: no `template` keyword needed below
  CHECK(*log_y.at<float>(0) == -inf);
  CHECK(std::isnan(*log_y.at<float>(1)));
  auto sp = tf::test::call<float>(device, tf::ops::softplus{}, *x);
  REQUIRE(sp.ok());
  const tf::tensor softplus_y = *sp;
  CHECK(*softplus_y.at<float>(2) == 1e30f);  // no overflow to inf
  CHECK(*softplus_y.at<float>(3) >= 0.0f);
  CHECK(*softplus_y.at<float>(3) < 1e-30f);  // e^-1e30 underflows (Eigen clamps exp at ~e^-88)
  auto sg = tf::test::call<float>(device, tf::ops::sigmoid{}, *x);
  REQUIRE(sg.ok());
  const tf::tensor sigmoid_y = *sg;
  CHECK(*sigmoid_y.at<float>(2) == 1.0f);
  CHECK(*sigmoid_y.at<float>(3) == 0.0f);
}

namespace {

template <class From, class To, class Device>
void check_cast(Device& device) {
  INFO("cast " << tf::name_of(tf::dtype_of<From>) << " -> " << tf::name_of(tf::dtype_of<To>));
  const tf::shape s{4, 9};
  // Values that every target type holds, so the conversion is defined (no negatives into u8).
  constexpr bool non_negative = std::is_unsigned_v<From> || std::is_unsigned_v<To>;
  const tf::tensor x = random_tensor<From>(s, 7, non_negative ? 0 : -100, std::is_same_v<From, bool> ? 1 : 100);
  auto y = tf::test::call<From>(device, tf::ops::cast{.to = tf::dtype_of<To>}, x);
  REQUIRE(y.ok());
  std::vector<double> expected;
  for (auto v : x.unchecked_values<From>()) {
    if constexpr (std::is_same_v<To, bool>) expected.push_back(tf::test::to_double(v) != 0 ? 1 : 0);
    else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>)
      expected.push_back(static_cast<double>(static_cast<To>(std::trunc(tf::test::to_double(v)))));
    else expected.push_back(tf::test::to_double(static_cast<To>(v)));
  }
  require_close<To>(*y, s, expected, tf::test::default_tolerance<To>());
}

template <class From, class Device>
void check_cast_from(Device& d) {
  check_cast<From, Eigen::half>(d);
  check_cast<From, float>(d);
  check_cast<From, double>(d);
  check_cast<From, std::int32_t>(d);
  check_cast<From, std::int64_t>(d);
  check_cast<From, std::int8_t>(d);
  check_cast<From, bool>(d);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cast converts between every pair of dtypes", "[unary][cast]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  check_cast_from<float>(device);
  check_cast_from<double>(device);
  check_cast_from<std::int32_t>(device);
  check_cast_from<std::int64_t>(device);
  check_cast_from<std::int8_t>(device);
  check_cast_from<Eigen::half>(device);
  check_cast_from<bool>(device);
  check_cast<std::uint8_t, float>(device);
  check_cast<float, std::uint8_t>(device);
  check_cast<Eigen::bfloat16, float>(device);
}

namespace {

// Every float the saturating cast must define, through every float dtype into every integer one.
template <class From, class To, class Device>
void check_saturating_cast(Device& device) {
  INFO("cast " << tf::name_of(tf::dtype_of<From>) << " -> " << tf::name_of(tf::dtype_of<To>));
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> in = {std::nan(""), inf, -inf, 1e30, -1e30, 3e9, -3e9, 1e19, -1e19, 300.0, -300.0, 2.9, -2.9, 0.0};
  std::vector<From> values;
  for (double v : in) values.push_back(static_cast<From>(static_cast<float>(v)));  // through float: half and bf16 saturate to inf
  auto x = tf::tensor::from_values<From>(values, tf::shape{static_cast<std::int64_t>(values.size())});
  REQUIRE(x.ok());
  auto y = tf::test::call<From>(device, tf::ops::cast{.to = tf::dtype_of<To>}, *x);
  REQUIRE(y.ok());
  const auto out = y->template unchecked_values<To>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = tf::test::to_double(values[i]);
    INFO("element " << i << " = " << v);
    To expected = 0;
    if (std::isnan(v)) expected = 0;
    else if (v >= static_cast<double>(std::numeric_limits<To>::max())) expected = std::numeric_limits<To>::max();
    else if (v <= static_cast<double>(std::numeric_limits<To>::min())) expected = std::numeric_limits<To>::min();
    else expected = static_cast<To>(std::trunc(v));
    CHECK(static_cast<std::int64_t>(out[i]) == static_cast<std::int64_t>(expected));
  }
}

template <class From, class Device>
void check_saturating_cast_from(Device& d) {
  check_saturating_cast<From, std::int8_t>(d);
  check_saturating_cast<From, std::uint8_t>(d);
  check_saturating_cast<From, std::int32_t>(d);
  check_saturating_cast<From, std::int64_t>(d);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cast of NaN, infinities and out-of-range floats to integers saturates, NaN to 0",
                        "[unary][cast]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  check_saturating_cast_from<float>(device);
  check_saturating_cast_from<double>(device);
  check_saturating_cast_from<Eigen::half>(device);
  check_saturating_cast_from<Eigen::bfloat16>(device);
}

TEST_CASE("unary shape inference at compile time", "[unary][static]") {
  using tf::spec;
  using tf::static_shape;
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::exp{}, spec<float, static_shape<tf::dyn, 7>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{tf::dyn, 7}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::cast{.to = tf::dtype::i64}, spec<float, static_shape<3>>> ==
                 tf::tensor_spec{tf::dtype::i64, tf::shape{3}});
  STATIC_REQUIRE(!tf::infer(tf::ops::sqrt{}, std::array{tf::tensor_spec{tf::dtype::i32, tf::shape{2}}}).ok());
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::relu, tf::cpu, std::int32_t>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::exp, tf::cpu, std::int32_t>);
}

TEST_CASE("unary ops report bad inputs", "[unary][errors]") {
  tf::cpu device;
  const auto xi = random_tensor<std::int32_t>(tf::shape{3}, 1);
  const auto xf = random_tensor<float>(tf::shape{3}, 1);
  // A float op on integers is a dtype error; the kernel dtype must match the input.
  tf::test::require_error(tf::test::call<float>(device, tf::ops::exp{}, xi), tf::status_code::invalid_argument,
                          "exp: input dtype i32 is not supported");
  tf::test::require_error(tf::test::call<std::int32_t>(device, tf::ops::relu{}, xf), tf::status_code::invalid_argument,
                          "relu: called with the kernel for i32 but input 0 has dtype f32");
  // Arity is checked.
  tf::test::require_error(tf::test::call<float>(device, tf::ops::relu{}, xf, xf), tf::status_code::invalid_argument,
                          "relu: expects 1 input, got 2");
  // An empty tensor has no storage.
  tf::test::require_error(tf::test::call<float>(device, tf::ops::relu{}, tf::tensor{}), tf::status_code::invalid_argument,
                          "relu: input 0 is an empty tensor");
  // An invalid target dtype for cast.
  tf::test::require_error(tf::test::call<float>(device, tf::ops::cast{.to = static_cast<tf::dtype>(42)}, xf),
                          tf::status_code::invalid_argument, "cast: invalid target dtype code 42");
}
