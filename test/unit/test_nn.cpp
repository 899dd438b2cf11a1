// SPDX-License-Identifier: Apache-2.0
// bias_add, softmax, log_softmax, batch_norm and top_k: every op x dtype against plain-loop references
// (double precision) on random inputs, on both host policies; softmax along every axis, negative
// axes and inputs of large magnitude; shape inference at compile time; run-time errors.
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tf = typeflow;
using tf::dyn;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;
using tf::test::require_error;

namespace {

// ---- bias_add ----------------------------------------------------------------------------

// Rank 1 to 4, size 0 in the rows and in the channels, size 1, odd sizes, and one large enough
// for the thread pool to split.
const std::vector<tf::shape> bias_add_shapes = {tf::shape{5},       tf::shape{3, 4},  tf::shape{2, 3, 5},
                                                tf::shape{2, 1, 3, 7}, tf::shape{0, 4}, tf::shape{4, 0},
                                                tf::shape{1, 1},    tf::shape{67, 129}};

template <class T, class Device>
void check_bias_add(Device& device) {
  std::uint64_t seed = 1;
  for (const auto& s : bias_add_shapes) {
    INFO("bias_add, dtype " << tf::name_of(tf::dtype_of<T>) << ", shape " << s.to_string());
    const std::int64_t channels = s[s.rank() - 1];
    const auto x = random_tensor<T>(s, seed++, -100, 100);
    const auto bias = random_tensor<T>(tf::shape{channels}, seed++, -100, 100);
    auto y = tf::test::call<T>(device, tf::ops::bias_add{}, x, bias);
    REQUIRE(y.ok());
    const auto xv = as_doubles<T>(x);
    const auto bv = as_doubles<T>(bias);
    std::vector<double> expected;
    for (std::size_t i = 0; i < xv.size(); ++i) expected.push_back(xv[i] + bv[i % static_cast<std::size_t>(channels)]);
    require_close<T>(*y, s, expected);
  }
}

// ---- softmax and log_softmax ---------------------------------------------------------------

struct softmax_case {
  tf::shape s;
  std::int64_t axis;
};

// Every axis of ranks 1 to 3, negative axes, an axis of size 1 and of size 0, rows and columns
// large enough to be split over threads, and slices longer than the kernel's block.
const std::vector<softmax_case> softmax_cases = {
    {{7}, -1},        {{7}, 0},         {{1}, 0},          {{5, 17}, -1},      {{5, 17}, 1},
    {{5, 17}, 0},     {{5, 17}, -2},    {{3, 4, 5}, 0},    {{3, 4, 5}, 1},     {{3, 4, 5}, 2},
    {{3, 4, 5}, -1},  {{3, 4, 5}, -2},  {{3, 4, 5}, -3},   {{4, 1}, -1},       {{4, 1, 3}, 1},
    {{2, 0, 3}, 1},   {{2, 0, 3}, 0},   {{300, 67}, -1},   {{3, 129, 40}, 1},  {{2, 9000}, 1},
    {{9000, 3}, 0},   {{2, 3, 2, 5}, 2}};

// softmax along `axis` of x (row-major, shape s): [outer, n, inner] with n the axis.
std::vector<double> reference_softmax(const tf::shape& s, std::int64_t axis, const std::vector<double>& x, bool log) {
  const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(s.rank()) : axis);
  const std::int64_t outer = s.product(0, a), n = s[a], inner = s.product(a + 1, s.rank());
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < inner; ++j) {
      auto at = [&](std::int64_t i) { return static_cast<std::size_t>((o * n + i) * inner + j); };
      double max = -std::numeric_limits<double>::infinity();
      for (std::int64_t i = 0; i < n; ++i) max = std::max(max, x[at(i)]);
      double sum = 0;
      for (std::int64_t i = 0; i < n; ++i) sum += std::exp(x[at(i)] - max);
      for (std::int64_t i = 0; i < n; ++i)
        y[at(i)] = log ? x[at(i)] - max - std::log(sum) : std::exp(x[at(i)] - max) / sum;
    }
  return y;
}

// The sum over `axis` of every slice of y (which has shape s).
std::vector<double> sums_along(const tf::shape& s, std::int64_t axis, const std::vector<double>& y) {
  const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(s.rank()) : axis);
  const std::int64_t outer = s.product(0, a), n = s[a], inner = s.product(a + 1, s.rank());
  std::vector<double> sums;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < inner; ++j) {
      double sum = 0;
      for (std::int64_t i = 0; i < n; ++i) sum += y[static_cast<std::size_t>((o * n + i) * inner + j)];
      sums.push_back(sum);
    }
  return sums;
}

template <class T, class Device, class Op>
void check_softmax_op(Device& device, double lo, double hi) {
  constexpr bool log = std::is_same_v<Op, tf::ops::log_softmax>;
  std::uint64_t seed = 1;
  for (const auto& c : softmax_cases) {
    INFO(Op::name << ", dtype " << tf::name_of(tf::dtype_of<T>) << ", shape " << c.s.to_string() << ", axis "
                  << c.axis << ", inputs in [" << lo << ", " << hi << "]");
    const auto x = random_tensor<T>(c.s, seed++, lo, hi);
    auto y = tf::test::call<T>(device, Op{.axis = c.axis}, x);
    REQUIRE(y.ok());
    const auto expected = reference_softmax(c.s, c.axis, as_doubles<T>(x), log);
    require_close<T>(*y, c.s, expected);
    // Each slice of softmax sums to 1 (the exponentials of log_softmax do), within what the
    // dtype's rounding of every element allows; an empty slice has nothing to sum.
    std::vector<double> probabilities = as_doubles<T>(*y);
    if (log) for (auto& v : probabilities) v = std::exp(v);
    const std::size_t axis = static_cast<std::size_t>(c.axis < 0 ? c.axis + static_cast<std::int64_t>(c.s.rank())
                                                                 : c.axis);
    const double n = static_cast<double>(c.s[axis]);
    const double sum_tolerance = (log ? 8 : 2) * tf::test::default_tolerance<T>() * std::sqrt(n);
    if (n > 0)
      for (double sum : sums_along(c.s, c.axis, probabilities)) REQUIRE(std::abs(sum - 1) <= sum_tolerance);
  }
}

template <class T, class Device>
void check_softmax(Device& device) {
  check_softmax_op<T, Device, tf::ops::softmax>(device, -4, 4);
  check_softmax_op<T, Device, tf::ops::log_softmax>(device, -4, 4);
}

// ---- batch_norm --------------------------------------------------------------------------

const std::vector<tf::shape> batch_norm_shapes = {tf::shape{5},       tf::shape{3, 4},  tf::shape{2, 3, 3, 7},
                                                  tf::shape{0, 4},    tf::shape{4, 0},  tf::shape{1, 1},
                                                  tf::shape{97, 130}};

template <class T, class Device>
void check_batch_norm(Device& device, double epsilon) {
  std::uint64_t seed = 1;
  for (const auto& s : batch_norm_shapes) {
    INFO("batch_norm, dtype " << tf::name_of(tf::dtype_of<T>) << ", shape " << s.to_string() << ", epsilon "
                              << epsilon);
    const tf::shape channel_shape{s[s.rank() - 1]};
    const auto x = random_tensor<T>(s, seed++, -5, 5);
    const auto scale = random_tensor<T>(channel_shape, seed++, -2, 2);
    const auto offset = random_tensor<T>(channel_shape, seed++, -2, 2);
    const auto mean = random_tensor<T>(channel_shape, seed++, -1, 1);
    const auto variance = random_tensor<T>(channel_shape, seed++, 0.05, 3);
    auto y = tf::test::call<T>(device, tf::ops::batch_norm{.epsilon = epsilon}, x, scale, offset, mean, variance);
    REQUIRE(y.ok());
    const auto xv = as_doubles<T>(x), sv = as_doubles<T>(scale), ov = as_doubles<T>(offset), mv = as_doubles<T>(mean),
               vv = as_doubles<T>(variance);
    std::vector<double> expected;
    for (std::size_t i = 0; i < xv.size(); ++i) {
      const std::size_t ch = i % sv.size();
      expected.push_back((xv[i] - mv[ch]) * sv[ch] / std::sqrt(vv[ch] + epsilon) + ov[ch]);
    }
    // y is about |x| * |scale| / sqrt(variance) ~ 45 at most: the tolerance is relative to that.
    require_close<T>(*y, s, expected, 10 * tf::test::default_tolerance<T>());
  }
}

}  // namespace

// ---- top_k --------------------------------------------------------------------------------

struct top_k_case { tf::shape s; std::int64_t k; };
// Rows of one element, k = 0, k = n, empty rows, many rows, and rows long enough to split.
const std::vector<top_k_case> top_k_cases = {{{5}, 2},    {{5}, 5},      {{3, 4}, 1},   {{2, 3, 6}, 3},
                                             {{4, 1}, 1}, {{3, 7}, 0},   {{0, 5}, 2},   {{2, 0}, 0},
                                             {{9, 40}, 7}, {{300, 257}, 13}};

// The reference: each row's positions sorted by value (NaN first), then by position.
template <class T>
void check_top_k_case(auto& device, const top_k_case& c, const tf::tensor& x, bool sorted) {
  INFO("top_k " << c.s.to_string() << " k " << c.k << (sorted ? " sorted" : " in row order") << ", dtype "
                << tf::name_of(tf::dtype_of<T>));
  auto y = tf::test::call<T>(device, tf::ops::top_k{.k = c.k, .sorted = sorted}, x);
  INFO("status: " << y.status().to_string());
  REQUIRE(y.ok());
  REQUIRE(y->size() == 2);
  const auto values = as_doubles<T>(x);
  const std::int64_t n = c.s[c.s.rank() - 1];
  const std::int64_t rows = n == 0 ? 0 : c.s.num_elements() / n;
  tf::shape out = c.s;
  out[out.rank() - 1] = c.k;
  std::vector<double> expected_values, expected_indices;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) order[static_cast<std::size_t>(j)] = j;
    const auto at = [&](std::int64_t j) { return values[static_cast<std::size_t>(r * n + j)]; };
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      if (std::isnan(at(a)) || std::isnan(at(b))) return std::isnan(at(a)) && !std::isnan(at(b));
      return at(a) > at(b);
    });
    order.resize(static_cast<std::size_t>(c.k));
    if (!sorted) std::sort(order.begin(), order.end());
    for (std::int64_t j : order) {
      expected_values.push_back(at(j));
      expected_indices.push_back(static_cast<double>(j));
    }
  }
  require_close<T>((*y)[0], out, expected_values, 0.0);
  require_close<std::int64_t>((*y)[1], out, expected_indices, 0.0);
}

template <class T, class Device>
void check_top_k(Device& device) {
  std::uint64_t seed = 900;
  for (const auto& c : top_k_cases) {
    // Few distinct values, so rows are full of ties, and values spread wide.
    for (double range : {3.0, 1000.0}) {
      const auto x = random_tensor<T>(c.s, seed++, -range, range);
      check_top_k_case<T>(device, c, x, true);
      check_top_k_case<T>(device, c, x, false);
    }
  }
}

TEMPLATE_LIST_TEST_CASE("bias_add matches its reference", "[nn][bias_add]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_bias_add<float>(device); }
  SECTION("f64") { check_bias_add<double>(device); }
  SECTION("i32") { check_bias_add<std::int32_t>(device); }
  SECTION("i64") { check_bias_add<std::int64_t>(device); }
}

TEMPLATE_LIST_TEST_CASE("softmax and log_softmax match their references", "[nn][softmax]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_softmax<float>(device); }
  SECTION("f64") { check_softmax<double>(device); }
  SECTION("f16") { check_softmax<Eigen::half>(device); }
  SECTION("bf16") { check_softmax<Eigen::bfloat16>(device); }
}

TEMPLATE_LIST_TEST_CASE("softmax of large-magnitude inputs stays finite", "[nn][softmax]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  // e^1000 overflows every dtype; subtracting the maximum first keeps every value finite.
  SECTION("f32") {
    check_softmax_op<float, TestType, tf::ops::softmax>(device, -1000, 1000);
    check_softmax_op<float, TestType, tf::ops::log_softmax>(device, -1000, 1000);
  }
  SECTION("f64") {
    check_softmax_op<double, TestType, tf::ops::softmax>(device, -1000, 1000);
    check_softmax_op<double, TestType, tf::ops::log_softmax>(device, -1000, 1000);
  }
  SECTION("all equal and huge") {
    auto x = tf::tensor::from_values<float>({1000.0f, 1000.0f, -1000.0f, -1000.0f}, tf::shape{2, 2});
    REQUIRE(x.ok());
    auto s = tf::test::call<float>(device, tf::ops::softmax{}, *x);
    REQUIRE(s.ok());
    require_close<float>(*s, tf::shape{2, 2}, {0.5, 0.5, 0.5, 0.5});
    auto l = tf::test::call<float>(device, tf::ops::log_softmax{.axis = 0}, *x);
    REQUIRE(l.ok());
    require_close<float>(*l, tf::shape{2, 2}, {0.0, 0.0, -2000.0, -2000.0});
  }
}

TEMPLATE_LIST_TEST_CASE("batch_norm matches its reference", "[nn][batch_norm]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") {
    check_batch_norm<float>(device, 1e-3);
    check_batch_norm<float>(device, 0.5);
    check_batch_norm<float>(device, 0);
  }
  SECTION("f64") {
    check_batch_norm<double>(device, 1e-3);
    check_batch_norm<double>(device, 0.5);
    check_batch_norm<double>(device, 0);
  }
}

TEST_CASE("nn shape inference at compile time", "[nn][static]") {
  using tf::spec;
  using tf::static_shape;
  using tf::tensor_spec;
  constexpr auto f32 = tf::dtype::f32;
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::softmax{}, spec<float, static_shape<dyn, 10>>> ==
                 tensor_spec{f32, tf::shape{dyn, 10}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::softmax{.axis = -3}, spec<double, static_shape<2, dyn, 4>>> ==
                 tensor_spec{tf::dtype::f64, tf::shape{2, dyn, 4}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::log_softmax{.axis = 0}, spec<Eigen::half, static_shape<7>>> ==
                 tensor_spec{tf::dtype::f16, tf::shape{7}});
  // A known bias length fills in an unknown channel count.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::bias_add{}, spec<float, static_shape<dyn, dyn>>,
                                    spec<float, static_shape<5>>> == tensor_spec{f32, tf::shape{dyn, 5}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::batch_norm{}, spec<float, static_shape<2, 3, dyn>>,
                                    spec<float, static_shape<dyn>>, spec<float, static_shape<dyn>>,
                                    spec<float, static_shape<4>>, spec<float, static_shape<dyn>>> ==
                 tensor_spec{f32, tf::shape{2, 3, 4}});
  // What is certainly wrong is rejected at compile time too.
  STATIC_REQUIRE(!tf::infer(tf::ops::softmax{.axis = 2}, std::array{tensor_spec{f32, tf::shape{2, 3}}}).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::softmax{}, std::array{tensor_spec{tf::dtype::i32, tf::shape{2, 3}}}).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::bias_add{},
                            std::array{tensor_spec{f32, tf::shape{2, 3}}, tensor_spec{f32, tf::shape{4}}})
                      .ok());
  constexpr tensor_spec v{f32, tf::shape{3}};
  STATIC_REQUIRE(!tf::infer(tf::ops::batch_norm{.epsilon = -1}, std::array{tensor_spec{f32, tf::shape{2, 3}}, v, v, v, v})
                      .ok());
  STATIC_REQUIRE(tf::infer(tf::ops::batch_norm{.epsilon = 0}, std::array{tensor_spec{f32, tf::shape{2, 3}}, v, v, v, v})
                     .ok());
  // Two channel vectors that disagree, though x's channel count is unknown.
  STATIC_REQUIRE(!tf::infer(tf::ops::batch_norm{}, std::array{tensor_spec{f32, tf::shape{2, dyn}}, v, v,
                                                              tensor_spec{f32, tf::shape{4}}, v})
                      .ok());
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::softmax, tf::cpu, Eigen::bfloat16>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::batch_norm, tf::cpu, std::int32_t>);
}

TEST_CASE("nn ops report bad inputs", "[nn][errors]") {
  tf::cpu device;
  const auto f = [](const tf::shape& s) { return random_tensor<float>(s, 3); };
  const auto i = [](const tf::shape& s) { return random_tensor<std::int32_t>(s, 3); };
  using tf::status_code;

  // bias_add
  require_error(tf::test::call<float>(device, tf::ops::bias_add{}, f({2, 3}), f({4})), status_code::invalid_argument,
                "bias_add: input 1 (bias) has length 4 but there are 3 channels (input 0 has shape [2, 3])");
  require_error(tf::test::call<float>(device, tf::ops::bias_add{}, f({2, 3}), f({1, 3})), status_code::invalid_argument,
                "bias_add: input 1 (bias) must have rank 1, got shape [1, 3]");
  require_error(tf::test::call<float>(device, tf::ops::bias_add{}, f({}), f({1})), status_code::invalid_argument,
                "bias_add: input 0 (value) must have rank >= 1, got shape []");
  require_error(tf::test::call<std::int32_t>(device, tf::ops::bias_add{}, i({2, 3}), f({3})), status_code::invalid_argument,
                "bias_add: all inputs must have one dtype, input 0 is i32 and input 1 is f32");

  // softmax, log_softmax
  require_error(tf::test::call<float>(device, tf::ops::softmax{.axis = 2}, f({2, 3})), status_code::invalid_argument,
                "softmax: axis 2 is out of range for an input of rank 2 (shape [2, 3]); expected -2 <= axis < 2");
  require_error(tf::test::call<float>(device, tf::ops::log_softmax{.axis = -3}, f({2, 3})), status_code::invalid_argument,
                "log_softmax: axis -3 is out of range for an input of rank 2");
  require_error(tf::test::call<float>(device, tf::ops::softmax{}, f({})), status_code::invalid_argument,
                "softmax: input must have rank >= 1, got shape []");
  require_error(tf::test::call<float>(device, tf::ops::softmax{}, i({2, 3})), status_code::invalid_argument,
                "softmax: input dtype i32 is not supported; expected a floating-point dtype");
  require_error(tf::test::call<float>(device, tf::ops::log_softmax{}, i({2, 3})), status_code::invalid_argument,
                "log_softmax: input dtype i32 is not supported");

  // batch_norm
  const auto v = f({3});
  require_error(tf::test::call<float>(device, tf::ops::batch_norm{.epsilon = -1}, f({2, 3}), v, v, v, v),
                status_code::invalid_argument, "batch_norm: epsilon must be >= 0, got -1");
  require_error(
      tf::test::call<float>(device, tf::ops::batch_norm{.epsilon = std::numeric_limits<double>::quiet_NaN()}, f({2, 3}), v,
                      v, v, v),
      status_code::invalid_argument, "batch_norm: epsilon must be >= 0, got nan");
  require_error(tf::test::call<float>(device, tf::ops::batch_norm{}, f({2, 3}), v, v, f({4}), v),
                status_code::invalid_argument,
                "batch_norm: input 3 (mean) has length 4 but there are 3 channels (input 0 has shape [2, 3])");
  require_error(tf::test::call<float>(device, tf::ops::batch_norm{}, f({2, 3}), v, v, v, f({3, 1})),
                status_code::invalid_argument, "batch_norm: input 4 (variance) must have rank 1, got shape [3, 1]");
  require_error(tf::test::call<float>(device, tf::ops::batch_norm{}, f({}), v, v, v, v), status_code::invalid_argument,
                "batch_norm: input 0 (x) must have rank >= 1, got shape []");
  const auto vi = i({3});
  require_error(tf::test::call<float>(device, tf::ops::batch_norm{}, i({2, 3}), vi, vi, vi, vi),
                status_code::invalid_argument, "batch_norm: input dtype i32 is not supported");
  require_error(tf::test::call<float>(device, tf::ops::batch_norm{}, f({2, 3}), v, v, v), status_code::invalid_argument,
                "batch_norm: expects 5 inputs, got 4");
}

TEMPLATE_LIST_TEST_CASE("top_k matches its reference, ties and NaN included", "[nn][top_k]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_top_k<float>(device); }
  SECTION("f64") { check_top_k<double>(device); }
  SECTION("i32") { check_top_k<std::int32_t>(device); }
  SECTION("i64") { check_top_k<std::int64_t>(device); }
  SECTION("f16") { check_top_k<Eigen::half>(device); }
  SECTION("bf16") { check_top_k<Eigen::bfloat16>(device); }
  SECTION("NaN ranks above every number") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto x = *tf::tensor::from_values<float>({1, nan, 3, -std::numeric_limits<float>::infinity(), nan, 3}, tf::shape{1, 6});
    for (bool sorted : {true, false}) check_top_k_case<float>(device, top_k_case{{1, 6}, 4}, x, sorted);
  }
}

TEST_CASE("top_k reports bad k, ranks and dtypes", "[nn][top_k][errors]") {
  tf::cpu device;
  const auto x = random_tensor<float>(tf::shape{3, 4}, 1);
  require_error(tf::test::call<float>(device, tf::ops::top_k{.k = 5}, x), tf::status_code::invalid_argument,
                "top_k: k = 5 is larger than the last dimension of input shape [3, 4] (4)");
  require_error(tf::test::call<float>(device, tf::ops::top_k{.k = -1}, x), tf::status_code::invalid_argument,
                "top_k: k must be >= 0, got -1");
  require_error(tf::test::call<float>(device, tf::ops::top_k{}, random_tensor<float>(tf::shape{}, 1)),
                tf::status_code::invalid_argument, "top_k: input must have rank >= 1");
  const tf::tensor_spec flags[] = {{tf::dtype::boolean, tf::shape{2}}};
  require_error(tf::infer(tf::ops::top_k{}, flags), tf::status_code::invalid_argument, "top_k: ");
  constexpr tf::tensor_spec in[] = {{tf::dtype::f32, tf::shape{3, 4}}};
  static_assert(tf::infer(tf::ops::top_k{.k = 2}, in, 1)->type == tf::dtype::i64);
  static_assert(tf::infer(tf::ops::top_k{.k = 2}, in, 1)->dims == tf::shape{3, 2});
}

namespace {

// layer_norm on random x of shape s (values in [-3, 5) plus `shift`) over the dimensions from `axis`
// on, against a double reference.
template <class T, class Device>
void check_layer_norm(Device& device, const tf::shape& s, std::int64_t axis, double epsilon, double tol,
                      double shift = 0) {
  INFO("dtype " << tf::name_of(tf::dtype_of<T>) << ", shape " << s.to_string() << ", axis " << axis << ", shift " << shift);
  const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(s.rank()) : axis);
  tf::shape normalized;
  for (std::size_t i = a; i < s.rank(); ++i) normalized.push_back(s[i]);
  const auto x = tf::test::random_tensor<T>(s, 11, shift - 3, shift + 5);
  const auto scale = tf::test::random_tensor<T>(normalized, 12);
  const auto offset = tf::test::random_tensor<T>(normalized, 13);
  auto y = tf::test::call<T>(device, tf::ops::layer_norm{.axis = axis, .epsilon = epsilon}, x, scale, offset);
  REQUIRE(y.ok());
  const auto xv = tf::test::as_doubles<T>(x), sv = tf::test::as_doubles<T>(scale), ov = tf::test::as_doubles<T>(offset);
  const std::size_t cols = sv.size(), rows = cols ? xv.size() / cols : 0;
  std::vector<double> expected(xv.size());
  for (std::size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::size_t j = 0; j < cols; ++j) mean += xv[r * cols + j];
    mean /= static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j) var += (xv[r * cols + j] - mean) * (xv[r * cols + j] - mean);
    var /= static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j)
      expected[r * cols + j] = (xv[r * cols + j] - mean) / std::sqrt(var + epsilon) * sv[j] + ov[j];
  }
  require_close<T>(*y, s, expected, tol);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("layer_norm matches its reference", "[nn][layer_norm]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  for (const auto& [s, axis] : std::vector<std::pair<tf::shape, std::int64_t>>{
           {tf::shape{7}, 0}, {tf::shape{4, 33}, -1}, {tf::shape{3, 5, 16}, 1}, {tf::shape{2, 128, 256}, -1},
           {tf::shape{0, 8}, 1}, {tf::shape{2, 3}, 0}}) {
    check_layer_norm<float>(device, s, axis, 1e-5, 1e-4);
    check_layer_norm<double>(device, s, axis, 1e-3, 1e-10);
    check_layer_norm<Eigen::half>(device, s, axis, 1e-5, 2e-2);
  }
}

TEMPLATE_LIST_TEST_CASE("layer_norm of rows far from zero: two passes, no cancellation", "[nn][layer_norm]",
                        tf::test::device_policies) {
  // Rows of 1000 + u, u in [-3, 5): a variance of about 5 under a mean square of 10^6. A one-pass
  // sum of squares in float gets it wrong by a large part of it (0 for 0.31 on rows of 1000 + [-1, 1)).
  auto device = tf::test::make_device<TestType>();
  check_layer_norm<float>(device, tf::shape{16, 200}, -1, 1e-5, 1e-3, 1000);
  check_layer_norm<double>(device, tf::shape{16, 200}, -1, 1e-5, 1e-9, 1e6);
}

TEST_CASE("layer_norm reports bad shapes and attributes", "[nn][layer_norm][errors]") {
  tf::cpu device;
  const auto x = tf::test::random_tensor<float>(tf::shape{2, 3, 4}, 1);
  const auto v4 = tf::test::random_tensor<float>(tf::shape{4}, 2);
  const auto m34 = tf::test::random_tensor<float>(tf::shape{3, 4}, 3);
  require_error(tf::test::call<float>(device, tf::ops::layer_norm{.axis = 1}, x, v4, v4), tf::status_code::invalid_argument,
                "layer_norm: scale (input 1) has shape [4]; it must be [3, 4], the dimensions of input shape [2, 3, 4] "
                "from axis 1 on");
  require_error(tf::test::call<float>(device, tf::ops::layer_norm{.axis = 1}, x, m34, v4), tf::status_code::invalid_argument,
                "layer_norm: offset (input 2) has shape [4]");
  require_error(tf::test::call<float>(device, tf::ops::layer_norm{.axis = 3}, x, v4, v4), tf::status_code::invalid_argument,
                "layer_norm: axis 3 is out of range for rank 3");
  require_error(tf::test::call<float>(device, tf::ops::layer_norm{.epsilon = -1}, x, v4, v4), tf::status_code::invalid_argument,
                "layer_norm: epsilon must be >= 0, got -1");
  const auto xi = tf::test::random_tensor<std::int32_t>(tf::shape{2, 4}, 1);
  require_error(tf::test::call<float>(device, tf::ops::layer_norm{}, xi, v4, v4), tf::status_code::invalid_argument,
                "layer_norm: all inputs must have one dtype, input 0 is i32 and input 1 is f32");
}
