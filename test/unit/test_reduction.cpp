// SPDX-License-Identifier: Apache-2.0
// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod and argmax: every op x dtype
// against plain-loop references (double, or int64 for integer dtypes) on random inputs, on both
// host policies, over every regrouping the kernels distinguish; TensorFlow's identities over
// empty extents; shape inference at compile time; run-time errors.
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tf = typeflow;
using tf::dyn;
using tf::test::random_tensor;
using tf::test::require_error;

namespace {

enum class reduction { sum, mean, max, min, prod };

constexpr reduction kind_of(const tf::ops::reduce_sum&) { return reduction::sum; }
constexpr reduction kind_of(const tf::ops::reduce_mean&) { return reduction::mean; }
constexpr reduction kind_of(const tf::ops::reduce_max&) { return reduction::max; }
constexpr reduction kind_of(const tf::ops::reduce_min&) { return reduction::min; }
constexpr reduction kind_of(const tf::ops::reduce_prod&) { return reduction::prod; }

// References compute integer dtypes exactly in int64 and the others in double.
template <class T>
using exact_t = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;

template <class T>
exact_t<T> exact_value(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(v);
  else return tf::test::to_double(v);
}

// Which axes are reduced, worked out again here: no axes means all; negatives count from the back.
std::vector<bool> reduced_mask(const tf::shape& s, const tf::int_list& axes) {
  std::vector<bool> mask(s.rank(), axes.empty());
  for (std::int64_t a : axes) mask[static_cast<std::size_t>(a < 0 ? a + static_cast<std::int64_t>(s.rank()) : a)] = true;
  return mask;
}

tf::shape reduced_shape(const tf::shape& s, const std::vector<bool>& mask, bool keep_dims) {
  tf::shape out;
  for (std::size_t i = 0; i < s.rank(); ++i) {
    if (!mask[i]) out.push_back(s[i]);
    else if (keep_dims) out.push_back(1);
  }
  return out;
}

template <class T>
struct reference_output {
  std::vector<exact_t<T>> values;
  std::vector<double> magnitudes;  // sum of |x| over each output's terms, for the tolerance
  std::int64_t count = 1;          // how many input elements each output combines
};

// TensorFlow's identities: what a reduction of nothing gives.
template <class T>
exact_t<T> identity(reduction k) {
  if (k == reduction::sum) return 0;
  if (k == reduction::prod) return 1;
  if constexpr (std::is_integral_v<T>) {
    if (k == reduction::max) return std::numeric_limits<T>::lowest();
    if (k == reduction::min) return std::numeric_limits<T>::max();
    return 0;  // mean
  } else {
    if (k == reduction::max) return -std::numeric_limits<double>::infinity();
    if (k == reduction::min) return std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();  // mean: 0 / 0
  }
}

// The reduction of x over the masked axes, one input element at a time.
template <class T>
reference_output<T> reference_reduce(reduction k, const tf::tensor& x, const std::vector<bool>& mask) {
  const tf::shape& s = x.shape();
  const auto in_strides = tf::test::strides_of(s);
  std::vector<std::int64_t> out_strides(s.rank(), 0);  // 0 along reduced axes
  std::int64_t outputs = 1;
  reference_output<T> ref;
  for (std::size_t i = s.rank(); i-- > 0;) {
    if (mask[i]) {
      ref.count *= s[i];
    } else {
      out_strides[i] = outputs;
      outputs *= s[i];
    }
  }
  // Accumulate in double (floats) or int64 (integers); the mean divides at the end.
  ref.values.assign(static_cast<std::size_t>(outputs), k == reduction::mean ? exact_t<T>(0) : identity<T>(k));
  ref.magnitudes.assign(static_cast<std::size_t>(outputs), 0.0);
  const auto v = x.unchecked_values<T>();
  for (std::int64_t i = 0; i < x.num_elements(); ++i) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < s.rank(); ++d)
      o += static_cast<std::size_t>((i / in_strides[d]) % s[d] * out_strides[d]);
    const exact_t<T> e = exact_value(v[static_cast<std::size_t>(i)]);
    auto& acc = ref.values[o];
    switch (k) {
      case reduction::sum: case reduction::mean: acc += e; break;
      case reduction::prod: acc *= e; break;
      case reduction::max: acc = std::max(acc, e); break;
      case reduction::min: acc = std::min(acc, e); break;
    }
    ref.magnitudes[o] += std::abs(static_cast<double>(e));
  }
  if (k == reduction::mean) {
    for (auto& acc : ref.values) {
      if (ref.count == 0) acc = identity<T>(k);
      else acc /= static_cast<exact_t<T>>(ref.count);  // integers: truncates toward zero, as TensorFlow
    }
  }
  return ref;
}

// The error a correct kernel may make on one output. Sums grow their rounding error with the
// number of terms: at most a few epsilons of the accumulation type times sum |x| (f16 accumulates
// in f32); products grow theirs relative to the result; max and min pick an input, so are exact.
template <class T>
double allowed_error(reduction k, double expected, double magnitude, std::int64_t count) {
  using accumulator = std::conditional_t<std::is_same_v<T, Eigen::half>, float, T>;
  const double eps = static_cast<double>(std::numeric_limits<accumulator>::epsilon());
  const double rounding = tf::test::default_tolerance<T>() * (1.0 + std::abs(expected));
  switch (k) {
    case reduction::sum: return rounding + 2 * eps * magnitude;
    case reduction::mean: return rounding + 2 * eps * magnitude / static_cast<double>(count);
    case reduction::prod: return rounding + 2 * eps * static_cast<double>(count) * std::abs(expected);
    case reduction::max: case reduction::min: return 0;
  }
  return 0;
}

template <class T>
void require_reduction(const tf::tensor& y, const tf::shape& s, const reference_output<T>& ref, reduction k) {
  REQUIRE(y.dtype() == tf::dtype_of<T>);
  REQUIRE(y.shape() == s);
  REQUIRE(static_cast<std::size_t>(y.num_elements()) == ref.values.size());
  const auto v = y.unchecked_values<T>();
  std::size_t bad = 0, first_bad = 0;
  for (std::size_t i = 0; i < ref.values.size(); ++i) {
    bool ok;
    if constexpr (std::is_integral_v<T>) {
      ok = exact_value(v[i]) == ref.values[i];
    } else {
      const double a = tf::test::to_double(v[i]), e = ref.values[i];
      if (std::isnan(e)) ok = std::isnan(a);
      else if (std::isinf(e)) ok = a == e;
      else ok = std::abs(a - e) <= allowed_error<T>(k, e, ref.magnitudes[i], ref.count);
    }
    if (!ok && bad++ == 0) first_bad = i;
  }
  if (bad != 0) {
    INFO(bad << " mismatches; the first at flat index " << first_bad << ": got "
              << static_cast<double>(exact_value(v[first_bad])) << ", expected "
              << static_cast<double>(ref.values[first_bad]));
    REQUIRE(bad == 0);
  }
}

// Random inputs whose reductions stay in range: products of many terms use magnitudes near 1
// (integers: +-1) with random signs, short products small values.
template <class T>
tf::tensor make_input(reduction k, const tf::shape& s, std::int64_t count, std::uint64_t seed) {
  constexpr bool integer = std::is_integral_v<T>;
  if (k != reduction::prod) return random_tensor<T>(s, seed, integer ? -100 : -2, integer ? 100 : 2);
  if (count <= 10) return random_tensor<T>(s, seed, integer ? -3 : -2, integer ? 3 : 2);
  tf::tensor x = random_tensor<T>(s, seed, integer ? 1 : 0.9, integer ? 1 : 1.1);
  std::mt19937_64 rng(seed + 1000);
  for (auto& e : x.unchecked_values<T>())
    if (rng() & 1) e = static_cast<T>(-e);
  return x;
}

template <class Op, class T, class Device>
void check_reduction(Device& device, const tf::shape& s, const tf::int_list& axes, bool keep_dims,
                     std::uint64_t seed) {
  const Op op{.axes = axes, .keep_dims = keep_dims};
  const reduction k = kind_of(op);
  const auto mask = reduced_mask(s, axes);
  std::int64_t count = 1;
  for (std::size_t i = 0; i < s.rank(); ++i)
    if (mask[i]) count *= s[i];
  INFO(Op::name << " " << tf::name_of(tf::dtype_of<T>) << s.to_string() << " over axes " << axes.to_string()
                << (keep_dims ? ", keep_dims" : ""));
  const tf::tensor x = make_input<T>(k, s, count, seed);
  auto y = tf::test::call<T>(device, op, x);
  INFO("status: " << y.status().to_string());
  REQUIRE(y.ok());
  require_reduction<T>(*y, reduced_shape(s, mask, keep_dims), reference_reduce<T>(k, x, mask), k);
}

struct reduction_case {
  tf::shape s;
  tf::int_list axes;
};

// Each regrouping the kernel distinguishes ([r], [k, r], [r, k], [k, r, k], [r, k, r], and four
// or more groups), negative axes, size-1 axes (dropped, or the only ones reduced), empty reduced
// and kept extents, a scalar, and odd sizes.
const std::vector<reduction_case> reduction_cases = {
    {{3, 4, 5}, {}},                // every axis: [r]
    {{}, {}},                       // a scalar: nothing to reduce
    {{7}, {0}},
    {{3, 4, 5}, {1}},               // [k, r, k]
    {{3, 4, 5}, {2}},               // [k, r]
    {{3, 4, 5}, {0}},               // [r, k]
    {{3, 4, 5}, {0, 2}},            // [r, k, r]
    {{2, 3, 4, 5}, {0, 2}},         // non-adjacent axes: [r, k, r, k]
    {{2, 3, 4, 5}, {-1, -3}},       // axes 3 and 1: [k, r, k, r]
    {{2, 3, 4, 5}, {2, 1}},         // adjacent axes merge, in any order: [k, r, k]
    {{2, 3, 2, 3, 2}, {0, 2, 4}},   // [r, k, r, k, r]
    {{3, 2, 5, 2, 3}, {-2, 1}},     // [k, r, k, r, k]
    {{2, 3, 1, 4, 5}, {0, 2, 3}},   // a size-1 axis between reduced ones: [r, k, r, k]
    {{1, 7, 1, 3}, {0, 2}},         // only size-1 axes reduced: a copy
    {{1, 7, 1, 3}, {1}},            // size-1 axes dropped: [r, k]
    {{5, 1, 3}, {-2}},
    {{1, 1}, {}},
    {{4, 0, 3}, {1}},               // an empty reduced extent: identities
    {{4, 0, 3}, {0, 1}},
    {{0}, {}},                      // nothing at all, reduced to a scalar
    {{2, 0}, {0}},                  // an empty output
    {{0, 5}, {1}},                  // an empty kept extent
    {{7, 13}, {0}},                 // odd sizes
    {{13, 7}, {1}},
    {{3, 5, 7}, {0, 2}},
    {{5, 3, 7, 3}, {1, 3}},
};

template <class Op, class T, class Device>
void check_reduction_cases(Device& device) {
  std::uint64_t seed = 1;
  for (const auto& c : reduction_cases)
    for (bool keep_dims : {false, true}) check_reduction<Op, T>(device, c.s, c.axes, keep_dims, seed++);
  // Large enough for the thread pool to split, along either axis and in full.
  for (const auto& axes : {tf::int_list{0}, tf::int_list{1}, tf::int_list{}})
    check_reduction<Op, T>(device, tf::shape{513, 1027}, axes, false, seed++);
  check_reduction<Op, T>(device, tf::shape{33, 17, 65, 9}, tf::int_list{0, 2}, true, seed++);
}

template <class T, class Device>
void check_every_reduction(Device& device) {
  check_reduction_cases<tf::ops::reduce_sum, T>(device);
  check_reduction_cases<tf::ops::reduce_mean, T>(device);
  check_reduction_cases<tf::ops::reduce_max, T>(device);
  check_reduction_cases<tf::ops::reduce_min, T>(device);
  check_reduction_cases<tf::ops::reduce_prod, T>(device);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("reductions match their references", "[reduction]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_every_reduction<float>(device); }
  SECTION("f64") { check_every_reduction<double>(device); }
  SECTION("i32") { check_every_reduction<std::int32_t>(device); }
  SECTION("i64") { check_every_reduction<std::int64_t>(device); }
  SECTION("f16 sum and mean") {
    check_reduction_cases<tf::ops::reduce_sum, Eigen::half>(device);
    check_reduction_cases<tf::ops::reduce_mean, Eigen::half>(device);
  }
}

TEMPLATE_LIST_TEST_CASE("reductions follow TensorFlow on special values", "[reduction]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();

  SECTION("identities over an empty extent") {
    const auto xf = tf::tensor::filled<float>(tf::shape{2, 0}, 0.0f);
    const auto xi = tf::tensor::filled<std::int32_t>(tf::shape{2, 0}, 0);
    REQUIRE(xf.ok());
    REQUIRE(xi.ok());
    const tf::ops::reduce_max max_over_1{.axes = {1}};
    const tf::ops::reduce_min min_over_1{.axes = {1}};
    const tf::ops::reduce_mean mean_over_1{.axes = {1}};
    const tf::tensor max_f = *tf::test::call<float>(device, max_over_1, *xf);
    const tf::tensor min_f = *tf::test::call<float>(device, min_over_1, *xf);
    const tf::tensor mean_f = *tf::test::call<float>(device, mean_over_1, *xf);
    const tf::tensor max_i = *tf::test::call<std::int32_t>(device, max_over_1, *xi);
    const tf::tensor min_i = *tf::test::call<std::int32_t>(device, min_over_1, *xi);
    const tf::tensor mean_i = *tf::test::call<std::int32_t>(device, mean_over_1, *xi);
    const tf::tensor sum_f = *tf::test::call<float>(device, tf::ops::reduce_sum{.axes = {1}}, *xf);
    const tf::tensor prod_f = *tf::test::call<float>(device, tf::ops::reduce_prod{.axes = {1}}, *xf);
    for (std::int64_t i = 0; i < 2; ++i) {
      CHECK(*max_f.at<float>(i) == -inf);
      CHECK(*min_f.at<float>(i) == inf);
      CHECK(std::isnan(*mean_f.at<float>(i)));
      CHECK(*max_i.at<std::int32_t>(i) == std::numeric_limits<std::int32_t>::lowest());
      CHECK(*min_i.at<std::int32_t>(i) == std::numeric_limits<std::int32_t>::max());
      CHECK(*mean_i.at<std::int32_t>(i) == 0);
      CHECK(*sum_f.at<float>(i) == 0.0f);
      CHECK(*prod_f.at<float>(i) == 1.0f);
    }
  }

  SECTION("NaN propagates through max and min; infinities are ordinary values") {
    // Rows of 20 so that the NaN lands in a vectorised block as well as in the scalar tail.
    std::vector<float> v(3 * 20, 1.0f);
    v[5] = nan;          // row 0
    v[20 + 19] = nan;    // row 1, the last element
    v[40 + 3] = inf;     // row 2
    v[40 + 4] = -inf;
    const auto x = tf::tensor::from_values<float>(std::span<const float>(v), tf::shape{3, 20});
    REQUIRE(x.ok());
    const tf::tensor mx = *tf::test::call<float>(device, tf::ops::reduce_max{.axes = {1}}, *x);
    const tf::tensor mn = *tf::test::call<float>(device, tf::ops::reduce_min{.axes = {-1}}, *x);
    CHECK(std::isnan(*mx.at<float>(0)));
    CHECK(std::isnan(*mx.at<float>(1)));
    CHECK(*mx.at<float>(2) == inf);
    CHECK(std::isnan(*mn.at<float>(0)));
    CHECK(std::isnan(*mn.at<float>(1)));
    CHECK(*mn.at<float>(2) == -inf);
    // Along the other axis (the [r, k] form), column 5 holds the NaN.
    const tf::tensor col = *tf::test::call<float>(device, tf::ops::reduce_max{.axes = {0}}, *x);
    CHECK(std::isnan(*col.at<float>(5)));
    CHECK(std::isnan(*col.at<float>(19)));
    CHECK(*col.at<float>(3) == inf);
    CHECK(*col.at<float>(0) == 1.0f);
  }

  SECTION("integer mean truncates toward zero") {
    const auto x = tf::tensor::from_values<std::int32_t>({-7, 0, 7, 0, -5, -5, 2, 2}, tf::shape{4, 2});
    REQUIRE(x.ok());
    const tf::tensor m = *tf::test::call<std::int32_t>(device, tf::ops::reduce_mean{.axes = {1}}, *x);
    CHECK(*m.at<std::int32_t>(0) == -3);
    CHECK(*m.at<std::int32_t>(1) == 3);
    CHECK(*m.at<std::int32_t>(2) == -5);
    CHECK(*m.at<std::int32_t>(3) == 2);
  }
}

namespace {

// The first (or the last) index of the largest element along `axis`, for every other position.
template <class T>
std::vector<std::int64_t> reference_argmax(const tf::tensor& x, std::size_t axis, bool last = false) {
  const std::int64_t outer = x.shape().product(0, axis), n = x.dim(axis);
  const std::int64_t inner = x.shape().product(axis + 1, x.rank());
  const auto v = x.unchecked_values<T>();
  std::vector<std::int64_t> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t best = 0;
      for (std::int64_t j = 1; j < n; ++j)
        if (const auto a = exact_value(v[static_cast<std::size_t>((o * n + j) * inner + i)]),
            b = exact_value(v[static_cast<std::size_t>((o * n + best) * inner + i)]);
            a > b || (last && a == b))
          best = j;
      out.push_back(best);
    }
  return out;
}

struct argmax_case {
  tf::shape s;
  std::int64_t axis;
};

const std::vector<argmax_case> argmax_cases = {
    {{7}, 0},        {{3, 4, 5}, 0},     {{3, 4, 5}, 1},     {{3, 4, 5}, 2},  {{3, 4, 5}, -1},
    {{1, 6}, 1},     {{6, 1}, 1},        {{5, 9, 1, 3}, -3}, {{2, 0, 3}, 0},  {{0, 4}, 1},
    {{11, 37}, 0},   {{513, 1027}, 0},   {{513, 1027}, 1},
};

template <class T, class Device>
void check_argmax(Device& device) {
  std::uint64_t seed = 1;
  for (const auto& c : argmax_cases) {
    // Values from {0, 1, 2, 3} tie often (the first index must win); the full range rarely does.
    for (bool ties : {true, false})
    for (bool last : {false, true}) {
      INFO("argmax " << tf::name_of(tf::dtype_of<T>) << c.s.to_string() << " axis " << c.axis
                     << (ties ? ", with ties" : "") << (last ? ", the last index" : ""));
      const double lo = ties || std::is_unsigned_v<T> ? 0 : -100, hi = ties ? 3 : 100;
      const tf::tensor x = random_tensor<T>(c.s, seed++, lo, hi);
      auto y = tf::test::call<T>(device, tf::ops::argmax{.axis = c.axis, .select_last_index = last}, x);
      INFO("status: " << y.status().to_string());
      REQUIRE(y.ok());
      const tf::tensor out = *y;
      const auto axis = static_cast<std::size_t>(c.axis < 0 ? c.axis + static_cast<std::int64_t>(c.s.rank()) : c.axis);
      tf::shape expected_shape;
      for (std::size_t i = 0; i < c.s.rank(); ++i)
        if (i != axis) expected_shape.push_back(c.s[i]);
      REQUIRE(out.dtype() == tf::dtype::i64);
      REQUIRE(out.shape() == expected_shape);
      const auto expected = reference_argmax<T>(x, axis, last);
      const auto got = out.unchecked_values<std::int64_t>();
      REQUIRE(std::vector<std::int64_t>(got.begin(), got.end()) == expected);
    }
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("argmax matches its reference", "[reduction][argmax]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_argmax<float>(device); }
  SECTION("f64") { check_argmax<double>(device); }
  SECTION("i32") { check_argmax<std::int32_t>(device); }
  SECTION("i64") { check_argmax<std::int64_t>(device); }
  SECTION("u8") { check_argmax<std::uint8_t>(device); }
  SECTION("ties give the first index") {
    const auto x = tf::tensor::from_values<float>({3, 1, 3, 2, 3, 5, 5, 5, 5, 5}, tf::shape{2, 5});
    REQUIRE(x.ok());
    const tf::tensor y = *tf::test::call<float>(device, tf::ops::argmax{.axis = 1}, *x);
    CHECK(*y.at<std::int64_t>(0) == 0);
    CHECK(*y.at<std::int64_t>(1) == 0);
    const tf::tensor z = *tf::test::call<float>(device, tf::ops::argmax{.axis = 0}, *x);
    CHECK(*z.at<std::int64_t>(0) == 1);
    CHECK(*z.at<std::int64_t>(2) == 1);
    CHECK(*z.at<std::int64_t>(3) == 1);
  }
}

TEST_CASE("reduction shape inference at compile time", "[reduction][static]") {
  using tf::spec;
  using tf::static_shape;
  using tf::tensor_spec;
  namespace ops = tf::ops;
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_sum{}, spec<float, static_shape<2, 3>>> ==
                 tensor_spec{tf::dtype::f32, tf::shape{}});
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_sum{.keep_dims = true}, spec<float, static_shape<2, dyn>>> ==
                 tensor_spec{tf::dtype::f32, tf::shape{1, 1}});
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_mean{.axes = {1}, .keep_dims = true},
                                    spec<double, static_shape<dyn, 5, 7>>> ==
                 tensor_spec{tf::dtype::f64, tf::shape{dyn, 1, 7}});
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_max{.axes = {-1, 0}}, spec<std::int32_t, static_shape<dyn, 5, dyn>>> ==
                 tensor_spec{tf::dtype::i32, tf::shape{5}});
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_min{.axes = {1}}, spec<std::int64_t, static_shape<4, dyn>>> ==
                 tensor_spec{tf::dtype::i64, tf::shape{4}});
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_prod{.axes = {0, 2}, .keep_dims = true},
                                    spec<float, static_shape<2, 3, 4, 5>>> ==
                 tensor_spec{tf::dtype::f32, tf::shape{1, 3, 1, 5}});
  STATIC_REQUIRE(tf::static_infer_v<ops::reduce_sum{}, spec<float, static_shape<>>> ==
                 tensor_spec{tf::dtype::f32, tf::shape{}});
  STATIC_REQUIRE(tf::static_infer_v<ops::argmax{.axis = 1}, spec<float, static_shape<dyn, 10>>> ==
                 tensor_spec{tf::dtype::i64, tf::shape{dyn}});
  STATIC_REQUIRE(tf::static_infer_v<ops::argmax{.axis = -1}, spec<std::uint8_t, static_shape<2, 3, 4>>> ==
                 tensor_spec{tf::dtype::i64, tf::shape{2, 3}});
  // An axis of unknown length may turn out empty; only the kernel can tell.
  STATIC_REQUIRE(tf::static_infer_v<ops::argmax{}, spec<float, static_shape<dyn>>> ==
                 tensor_spec{tf::dtype::i64, tf::shape{}});

  const auto f32 = [](tf::shape s) { return std::array{tensor_spec{tf::dtype::f32, s}}; };
  STATIC_REQUIRE(!tf::infer(ops::reduce_sum{.axes = {2}}, f32(tf::shape{2, 3})).ok());
  STATIC_REQUIRE(!tf::infer(ops::reduce_sum{.axes = {-3}}, f32(tf::shape{2, 3})).ok());
  STATIC_REQUIRE(!tf::infer(ops::reduce_mean{.axes = {0, -2}}, f32(tf::shape{2, 3})).ok());
  STATIC_REQUIRE(!tf::infer(ops::argmax{.axis = 1}, f32(tf::shape{3, 0})).ok());
  STATIC_REQUIRE(!tf::infer(ops::argmax{}, f32(tf::shape{})).ok());
  STATIC_REQUIRE(!tf::infer(ops::reduce_sum{}, std::array{tensor_spec{tf::dtype::boolean, tf::shape{2}}}).ok());

  STATIC_REQUIRE(tf::default_registry::has_kernel<ops::reduce_sum, tf::cpu, Eigen::half>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<ops::reduce_prod, tf::thread_pool, std::int64_t>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<ops::argmax, tf::cpu, std::uint8_t>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<ops::reduce_max, tf::cpu, Eigen::half>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<ops::reduce_sum, tf::cpu, bool>);
}

TEST_CASE("reductions report bad inputs", "[reduction][errors]") {
  tf::cpu device;
  const auto x = random_tensor<float>(tf::shape{2, 3, 4}, 1);
  const auto code = tf::status_code::invalid_argument;
  require_error(tf::test::call<float>(device, tf::ops::reduce_sum{.axes = {3}}, x), code,
                "reduce_sum: axis 3 in axes (3) is out of range for an input of rank 3 (shape [2, 3, 4])");
  require_error(tf::test::call<float>(device, tf::ops::reduce_mean{.axes = {0, -4}}, x), code,
                "reduce_mean: axis -4 in axes (0, -4) is out of range for an input of rank 3");
  require_error(tf::test::call<float>(device, tf::ops::reduce_max{.axes = {1, -2}}, x), code,
                "reduce_max: axes (1, -2) name axis 1 more than once (input shape [2, 3, 4])");
  require_error(tf::test::call<float>(device, tf::ops::reduce_min{.axes = {2, 2}}, x), code,
                "reduce_min: axes (2, 2) name axis 2 more than once");
  require_error(tf::test::call<float>(device, tf::ops::reduce_prod{.axes = {0}}, *tf::tensor::scalar(1.0f)), code,
                "reduce_prod: axis 0 in axes (0) is out of range for an input of rank 0 (shape [])");
  require_error(tf::test::call<float>(device, tf::ops::argmax{.axis = 3}, x), code,
                "argmax: axis 3 is out of range for an input of rank 3 (shape [2, 3, 4])");
  require_error(tf::test::call<float>(device, tf::ops::argmax{.axis = -1}, random_tensor<float>(tf::shape{3, 0}, 2)), code,
                "argmax: axis 1 of the input (shape [3, 0]) is empty");

  // Wrong dtypes: bool is not a number; the kernel's dtype must be input 0's.
  const auto b = random_tensor<bool>(tf::shape{4}, 3);
  require_error(tf::test::call<float>(device, tf::ops::reduce_sum{}, b), code, "reduce_sum: input dtype bool is not supported");
  require_error(tf::test::call<float>(device, tf::ops::argmax{}, b), code, "argmax: input dtype bool is not supported");
  require_error(tf::test::call<double>(device, tf::ops::reduce_prod{}, x), code,
                "reduce_prod: called with the kernel for f64 but input 0 has dtype f32");
  require_error(tf::test::call<float>(device, tf::ops::reduce_sum{}, x, x), code, "reduce_sum: expects 1 input, got 2");
}

TEST_CASE("reduction kernels return a status for shapes that inference never saw", "[reduction][errors]") {
  // A graph inferred with an unknown dimension reaches the kernel with the real one: an argmax
  // axis of length 0 must give a status, not read out of bounds.
  tf::cpu device;
  const auto x = random_tensor<float>(tf::shape{3, 0}, 1);
  std::array<tf::tensor, 1> inputs{x};
  std::array<tf::tensor, 1> outputs{*tf::tensor::allocate(tf::dtype::i64, tf::shape{3})};
  tf::kernel_context<tf::cpu> ctx{device, inputs, outputs};
  const tf::status st = tf::cpu_kernels::argmax_kernel<tf::ops::argmax, tf::cpu, float>::compute({.axis = 1}, ctx);
  INFO("status: " << st.to_string());
  CHECK(st.code() == tf::status_code::invalid_argument);
  CHECK(std::string(st.message()).find("argmax: axis 1 of the input (shape [3, 0]) is empty") != std::string::npos);

  // Axes that do not fit the input's rank.
  std::array<tf::tensor, 1> reduce_inputs{random_tensor<float>(tf::shape{2, 3}, 2)};
  std::array<tf::tensor, 1> reduce_outputs{*tf::tensor::allocate(tf::dtype::f32, tf::shape{2})};
  tf::kernel_context<tf::cpu> reduce_ctx{device, reduce_inputs, reduce_outputs};
  const tf::status bad_axes = tf::cpu_kernels::reduction_kernel<tf::ops::reduce_sum, tf::cpu, float>::compute(
      {.axes = {5}}, reduce_ctx);
  CHECK(bad_axes.code() == tf::status_code::invalid_argument);
  CHECK(std::string(bad_axes.message()).find("reduce_sum: axis 5") != std::string::npos);
}
