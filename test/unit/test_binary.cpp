// SPDX-License-Identifier: Apache-2.0
// Elementwise binary ops: every op x dtype against a plain-loop reference (NumPy broadcasting
// written out again here, double precision) on random inputs, on both host policies; the
// collapsed broadcast layout the kernels use; shape inference at compile time; run-time errors.
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

struct shape_pair {
  tf::shape a, b;
};

// Scalars, size 0, size 1, odd sizes, and every way of collapsing: flat (rank 1), Eigen
// broadcast ranks 2 to 4, the strided loop (collapsed ranks 5 and 8), and row by row (an
// innermost collapsed dimension of 32 or more; 37 puts rows at unaligned addresses), with
// either input broadcast along the row, or neither.
const std::vector<shape_pair> small_cases = {
    {{}, {}},
    {{}, {3}},
    {{5}, {}},
    {{1}, {1}},
    {{1}, {5}},
    {{7}, {7}},
    // At most 16 elements without a broadcast: the kernel's plain loop (up to and past its limit).
    {{2, 3}, {2, 3}},
    {{1, 1}, {1}},
    {{4, 4}, {1, 4, 4}},
    {{17}, {17}},
    {{0, 3}, {0, 3}},
    {{0, 3}, {3}},
    {{0, 3}, {1}},
    {{2, 0}, {}},
    {{3, 1}, {1, 4}},
    {{1, 4}, {3, 1}},
    {{2, 1, 5}, {7, 1}},
    {{5, 17, 33}, {17, 1}},
    {{3, 5}, {1, 1, 3, 5}},
    {{3, 1, 2, 1}, {1, 2, 1, 5}},
    {{2, 1, 3, 1, 2}, {1, 3, 1, 2, 1}},
    {{2, 1, 2, 1, 2, 1, 2, 1}, {1, 3, 1, 3, 1, 3, 1, 3}},
    {{4, 1, 37}, {3, 1}},
    {{3, 1}, {4, 1, 37}},
    {{2, 3, 37}, {2, 1, 37}},
    {{2, 1, 3, 1, 2, 37}, {1, 3, 1, 2, 1, 1}},
};

// Large enough for the thread pool to split: flat, row broadcast, outer product, strided.
const std::vector<shape_pair> large_cases = {
    {{257, 1031}, {257, 1031}},
    {{257, 1031}, {1031}},
    {{257, 1}, {1, 1031}},
    {{16, 1, 16, 1, 16}, {1, 8, 1, 8, 1}},
    {{64, 16, 1024}, {16, 1}},
};

// NumPy's rule, written out: align from the right; a 1 takes the other's size.
tf::shape broadcast_shape(const tf::shape& a, const tf::shape& b) {
  const std::size_t r = std::max(a.rank(), b.rank());
  tf::shape out;
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i + a.rank() < r ? 1 : a[i + a.rank() - r];
    const std::int64_t db = i + b.rank() < r ? 1 : b[i + b.rank() - r];
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

// The flat index of the element of `in` that output coordinate `coord` (of `out`) reads.
std::int64_t source_index(const tf::shape& in, const tf::shape& out, const std::vector<std::int64_t>& coord) {
  const auto strides = tf::test::strides_of(in);
  const std::size_t lead = out.rank() - in.rank();
  std::int64_t index = 0;
  for (std::size_t d = 0; d < in.rank(); ++d)
    if (in[d] != 1) index += coord[lead + d] * strides[d];
  return index;
}

// out[i] = f(a[ia], b[ib]) over the broadcast shape, one element at a time.
template <class F>
std::vector<double> broadcast_reference(const tf::shape& sa, const std::vector<double>& a, const tf::shape& sb,
                                        const std::vector<double>& b, F f) {
  const tf::shape out = broadcast_shape(sa, sb);
  std::vector<double> y;
  std::vector<std::int64_t> coord(out.rank(), 0);
  for (std::int64_t i = 0; i < out.num_elements(); ++i) {
    std::int64_t rest = i;
    for (std::size_t d = out.rank(); d-- > 0;) {
      coord[d] = rest % out[d];
      rest /= out[d];
    }
    y.push_back(f(a[static_cast<std::size_t>(source_index(sa, out, coord))],
                  b[static_cast<std::size_t>(source_index(sb, out, coord))]));
  }
  return y;
}

// Plain references in double precision. Integer inputs are small enough that every result is
// exact in double; integer division truncates toward zero.
template <class T>
double reference(const tf::ops::add&, double x, double y) { return x + y; }
template <class T>
double reference(const tf::ops::sub&, double x, double y) { return x - y; }
template <class T>
double reference(const tf::ops::mul&, double x, double y) { return x * y; }
template <class T>
double reference(const tf::ops::div&, double x, double y) {
  return std::is_integral_v<T> ? std::trunc(x / y) : x / y;
}
template <class T>
double reference(const tf::ops::maximum&, double x, double y) { return x > y ? x : y; }
template <class T>
double reference(const tf::ops::minimum&, double x, double y) { return x < y ? x : y; }
template <class T>
double reference(const tf::ops::pow&, double x, double y) { return std::pow(x, y); }
template <class T>
double reference(const tf::ops::equal&, double x, double y) { return x == y ? 1 : 0; }
template <class T>
double reference(const tf::ops::less&, double x, double y) { return x < y ? 1 : 0; }
template <class T>
double reference(const tf::ops::greater&, double x, double y) { return x > y ? 1 : 0; }

template <class Op>
constexpr bool is_comparison =
    std::is_same_v<Op, tf::ops::equal> || std::is_same_v<Op, tf::ops::less> || std::is_same_v<Op, tf::ops::greater>;

// Where an operand's random values lie: uniform in [lo, hi]; then, when min_magnitude > 0,
// values nearer to 0 are pushed out to ±min_magnitude (divisors); when whole, rounded to
// integers (comparisons then see ties in every dtype).
struct value_range {
  double lo, hi;
  double min_magnitude = 0;
  bool whole = false;
};

template <class T>
tf::tensor make_operand(const tf::shape& s, std::uint64_t seed, const value_range& r) {
  tf::tensor t = random_tensor<T>(s, seed, r.lo, r.hi);
  if constexpr (!std::is_same_v<T, bool>) {
    for (auto& v : t.unchecked_values<T>()) {
      double d = tf::test::to_double(v);
      if (r.whole) d = std::round(d);
      if (std::abs(d) < r.min_magnitude) d = d < 0 ? -r.min_magnitude : r.min_magnitude;
      v = static_cast<T>(d);
    }
  }
  return t;
}

// Runs `op` on every pair of shapes in `cases` and compares with the reference.
template <class T, class Device, class Op>
void check_binary(Device& device, const Op& op, const std::vector<shape_pair>& cases, const value_range& ra,
                  const value_range& rb, double tol) {
  using out_type = std::conditional_t<is_comparison<Op>, bool, T>;
  std::uint64_t seed = 11;
  for (const auto& c : cases) {
    INFO("op " << Op::name << ", dtype " << tf::name_of(tf::dtype_of<T>) << ", shapes " << c.a.to_string() << " and "
               << c.b.to_string());
    const tf::tensor a = make_operand<T>(c.a, seed++, ra);
    const tf::tensor b = make_operand<T>(c.b, seed++, rb);
    auto y = tf::test::call<T>(device, op, a, b);
    INFO("status: " << y.status().to_string());
    REQUIRE(y.ok());
    const auto expected = broadcast_reference(c.a, as_doubles<T>(a), c.b, as_doubles<T>(b),
                                              [&](double x, double z) { return reference<T>(op, x, z); });
    require_close<out_type>(*y, broadcast_shape(c.a, c.b), expected, tol);
  }
}

template <class T, class Device, class Op>
void check_binary(Device& device, const Op& op, const value_range& ra, const value_range& rb) {
  const double tol = tf::test::default_tolerance<std::conditional_t<is_comparison<Op>, bool, T>>();
  check_binary<T>(device, op, small_cases, ra, rb, tol);
  check_binary<T>(device, op, large_cases, ra, rb, tol);
}

// add, sub, mul, div: every dtype that has them.
template <class T, class Device>
void check_arithmetic(Device& d) {
  const value_range values{-50, 50};
  check_binary<T>(d, tf::ops::add{}, values, values);
  check_binary<T>(d, tf::ops::sub{}, values, values);
  check_binary<T>(d, tf::ops::mul{}, values, values);
  // Divisors at least 1 (integers) or 0.5 (floats) away from 0, of either sign.
  check_binary<T>(d, tf::ops::div{}, values, {-9, 9, std::is_integral_v<T> ? 1.0 : 0.5});
}

template <class T, class Device>
void check_numeric(Device& d) {
  check_arithmetic<T>(d);
  const value_range values{-50, 50};
  check_binary<T>(d, tf::ops::maximum{}, values, values);
  check_binary<T>(d, tf::ops::minimum{}, values, values);
  if constexpr (std::is_integral_v<T>) check_binary<T>(d, tf::ops::pow{}, {-6, 6}, {0, 7});  // |x^y| <= 6^7
  else check_binary<T>(d, tf::ops::pow{}, {0.1, 3}, {-3, 3});
  // Small whole numbers, so that equal operands are common.
  const value_range ties{-3, 3, 0, true};
  check_binary<T>(d, tf::ops::equal{}, ties, ties);
  check_binary<T>(d, tf::ops::less{}, ties, ties);
  check_binary<T>(d, tf::ops::greater{}, ties, ties);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("binary ops match their references", "[binary]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_numeric<float>(device); }
  SECTION("f64") { check_numeric<double>(device); }
  SECTION("i32") { check_numeric<std::int32_t>(device); }
  SECTION("i64") { check_numeric<std::int64_t>(device); }
  SECTION("f16") { check_arithmetic<Eigen::half>(device); }
  SECTION("bf16") { check_arithmetic<Eigen::bfloat16>(device); }
  SECTION("bool") { check_binary<bool>(device, tf::ops::equal{}, {0, 1}, {0, 1}); }
}

TEMPLATE_LIST_TEST_CASE("binary ops: special values", "[binary]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const double inf = std::numeric_limits<double>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();

  SECTION("maximum and minimum propagate nan from either side") {
    const auto x = *tf::tensor::from_values<float>({nan, 1.0f, nan, -2.0f}, tf::shape{4});
    const auto z = *tf::tensor::from_values<float>({1.0f, nan, nan, 3.0f}, tf::shape{4});
    for (const auto& r :
         {tf::test::call<float>(device, tf::ops::maximum{}, x, z), tf::test::call<float>(device, tf::ops::minimum{}, x, z)}) {
      REQUIRE(r.ok());
      const tf::tensor t = *r;
      CHECK(std::isnan(*t.at<float>(0)));
      CHECK(std::isnan(*t.at<float>(1)));
      CHECK(std::isnan(*t.at<float>(2)));
      CHECK_FALSE(std::isnan(*t.at<float>(3)));
    }
  }
  SECTION("float division by zero follows IEEE") {
    const auto x = *tf::tensor::from_values<double>({1.0, -1.0, 0.0}, tf::shape{3});
    auto r = tf::test::call<double>(device, tf::ops::div{}, x, *tf::tensor::scalar<double>(0.0));
    REQUIRE(r.ok());
    const tf::tensor t = *r;
    CHECK(*t.at<double>(0) == inf);
    CHECK(*t.at<double>(1) == -inf);
    CHECK(std::isnan(*t.at<double>(2)));
  }
  SECTION("integer division truncates and the lowest value / -1 wraps instead of trapping") {
    const std::int32_t lowest = std::numeric_limits<std::int32_t>::lowest();
    const auto x = *tf::tensor::from_values<std::int32_t>({7, -7, 7, -7, lowest, lowest}, tf::shape{6});
    const auto z = *tf::tensor::from_values<std::int32_t>({2, 2, -2, -2, -1, 1}, tf::shape{6});
    auto r = tf::test::call<std::int32_t>(device, tf::ops::div{}, x, z);
    REQUIRE(r.ok());
    const tf::tensor t = *r;
    const auto v = t.unchecked_values<std::int32_t>();
    CHECK(std::vector<std::int32_t>(v.begin(), v.end()) == std::vector<std::int32_t>{3, -3, -3, 3, lowest, lowest});
    const std::int64_t lowest64 = std::numeric_limits<std::int64_t>::lowest();
    auto r64 = tf::test::call<std::int64_t>(device, tf::ops::div{}, *tf::tensor::scalar<std::int64_t>(lowest64),
                                      *tf::tensor::from_values<std::int64_t>({-1, 2}));
    REQUIRE(r64.ok());
    const tf::tensor t64 = *r64;
    CHECK(*t64.at<std::int64_t>(0) == lowest64);
    CHECK(*t64.at<std::int64_t>(1) == lowest64 / 2);
  }
  SECTION("integer pow is exact beyond double's 53 bits, and wraps on overflow") {
    const auto base = *tf::tensor::from_values<std::int64_t>({3, 2, 0, -5, 7}, tf::shape{5});
    const auto exponent = *tf::tensor::from_values<std::int64_t>({39, 63, 0, 3, 1}, tf::shape{5});
    auto r = tf::test::call<std::int64_t>(device, tf::ops::pow{}, base, exponent);
    REQUIRE(r.ok());
    const tf::tensor t = *r;
    CHECK(*t.at<std::int64_t>(0) == 4052555153018976267);  // 3^39
    CHECK(*t.at<std::int64_t>(1) == std::numeric_limits<std::int64_t>::lowest());  // 2^63 wraps
    CHECK(*t.at<std::int64_t>(2) == 1);  // 0^0
    CHECK(*t.at<std::int64_t>(3) == -125);
    CHECK(*t.at<std::int64_t>(4) == 7);
  }
}

TEST_CASE("broadcast layouts collapse dimensions that broadcast alike", "[binary][broadcast]") {
  using tf::cpu_kernels::detail::make_broadcast_layout;
  const auto row = make_broadcast_layout<2>({tf::shape{8, 5, 3}, tf::shape{3}}, tf::shape{8, 5, 3});
  REQUIRE(row.rank == 2);
  CHECK(row.out_dims[0] == 40);
  CHECK(row.out_dims[1] == 3);
  CHECK(row.is_dense(0));
  CHECK_FALSE(row.is_dense(1));
  CHECK(row.in_dims[1][0] == 1);
  CHECK(row.factors[1][0] == 40);
  CHECK(row.factors[1][1] == 1);
  CHECK(row.strides[1][0] == 0);
  CHECK(row.strides[1][1] == 1);
  CHECK(row.strides[0][0] == 3);

  const auto scalar = make_broadcast_layout<2>({tf::shape{}, tf::shape{4, 6}}, tf::shape{4, 6});
  REQUIRE(scalar.rank == 1);
  CHECK(scalar.is_single(0));
  CHECK(scalar.is_dense(1));
  CHECK(scalar.out_dims[0] == 24);

  const auto ones = make_broadcast_layout<2>({tf::shape{1, 1}, tf::shape{}}, tf::shape{1, 1});
  REQUIRE(ones.rank == 1);
  CHECK(ones.out_dims[0] == 1);
  CHECK(ones.is_dense(0));
  CHECK(ones.is_single(1));

  const auto mixed = make_broadcast_layout<2>({tf::shape{2, 1, 5}, tf::shape{7, 1}}, tf::shape{2, 7, 5});
  REQUIRE(mixed.rank == 3);
  CHECK(mixed.factors[0][1] == 7);
  CHECK(mixed.factors[1][0] == 2);
  CHECK(mixed.factors[1][2] == 5);

  // Three inputs (a select-like op): offsets agree with the plain broadcast index mapping on
  // every block of a split range.
  const tf::shape sa{4, 1, 3}, sb{5, 1}, sc{1, 5, 3}, out{4, 5, 3};
  const auto l = make_broadcast_layout<3>({sa, sb, sc}, out);
  CHECK(l.rank == 3);
  const auto out_strides = tf::test::strides_of(out);
  for (std::int64_t block = 1; block <= 7; ++block) {
    for (std::int64_t first = 0; first < out.num_elements(); first += block) {
      const std::int64_t last = std::min(first + block, out.num_elements());
      std::int64_t expected_i = first;
      l.for_each_offset(first, last, [&](std::int64_t i, const std::array<std::int64_t, 3>& offset) {
        REQUIRE(i == expected_i++);
        std::vector<std::int64_t> coord(out.rank());
        for (std::size_t d = 0; d < out.rank(); ++d) coord[d] = i / out_strides[d] % out[d];
        REQUIRE(offset[0] == source_index(sa, out, coord));
        REQUIRE(offset[1] == source_index(sb, out, coord));
        REQUIRE(offset[2] == source_index(sc, out, coord));
      });
      REQUIRE(expected_i == last);
    }
  }

  // Rows (the innermost collapsed dimension) on every block of a split range: the offsets of a
  // row's first element, and the strides along it.
  const std::int64_t row_length = l.out_dims[l.rank - 1];
  const std::int64_t rows = out.num_elements() / row_length;
  for (std::int64_t block = 1; block <= 5; ++block) {
    for (std::int64_t first = 0; first < rows; first += block) {
      const std::int64_t last = std::min(first + block, rows);
      std::int64_t expected_row = first;
      l.for_each_row(first, last, [&](std::int64_t row, const std::array<std::int64_t, 3>& offset) {
        REQUIRE(row == expected_row++);
        for (std::int64_t j = 0; j < row_length; ++j) {
          const std::int64_t i = row * row_length + j;
          std::vector<std::int64_t> coord(out.rank());
          for (std::size_t d = 0; d < out.rank(); ++d) coord[d] = i / out_strides[d] % out[d];
          REQUIRE(offset[0] + j * l.strides[0][l.rank - 1] == source_index(sa, out, coord));
          REQUIRE(offset[1] + j * l.strides[1][l.rank - 1] == source_index(sb, out, coord));
          REQUIRE(offset[2] + j * l.strides[2][l.rank - 1] == source_index(sc, out, coord));
        }
      });
      REQUIRE(expected_row == last);
    }
  }
}

TEST_CASE("binary shape inference at compile time", "[binary][static]") {
  using tf::spec;
  using tf::static_shape;
  using tf::tensor_spec;
  STATIC_REQUIRE(
      tf::static_infer_v<tf::ops::add{}, spec<float, static_shape<2, 1, 5>>, spec<float, static_shape<7, 1>>> ==
                 tensor_spec{tf::dtype::f32, tf::shape{2, 7, 5}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::pow{}, spec<double, static_shape<>>, spec<double, static_shape<0, 3>>> ==
                 tensor_spec{tf::dtype::f64, tf::shape{0, 3}});
  // dyn against n is n; against 1 or dyn it stays dyn.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::mul{}, spec<std::int32_t, static_shape<dyn, 3>>,
                                    spec<std::int32_t, static_shape<4, 1>>> ==
                 tensor_spec{tf::dtype::i32, tf::shape{4, 3}});
  STATIC_REQUIRE(
      tf::static_infer_v<tf::ops::sub{}, spec<float, static_shape<dyn, 1>>, spec<float, static_shape<dyn>>> ==
                 tensor_spec{tf::dtype::f32, tf::shape{dyn, dyn}});
  // Comparisons give bool; equal takes bool too.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::less{}, spec<std::int64_t, static_shape<3>>,
                                    spec<std::int64_t, static_shape<>>> ==
                 tensor_spec{tf::dtype::boolean, tf::shape{3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::equal{}, spec<bool, static_shape<2, 1>>, spec<bool, static_shape<3>>> ==
                 tensor_spec{tf::dtype::boolean, tf::shape{2, 3}});
  // The compile-time message is the run-time one (compile_fail/static_shape_mismatch.cpp checks
  // that the compiler prints it).
  STATIC_REQUIRE(tf::infer(tf::ops::add{}, std::array{tensor_spec{tf::dtype::f32, tf::shape{2, 3}},
                                                      tensor_spec{tf::dtype::f32, tf::shape{4, 3}}})
                     .status()
                     .message()
                     .starts_with("add: shapes [2, 3] and [4, 3] do not broadcast"));
  STATIC_REQUIRE(!tf::infer(tf::ops::greater{}, std::array{tensor_spec{tf::dtype::boolean, tf::shape{2}},
                                                           tensor_spec{tf::dtype::boolean, tf::shape{2}}})
                      .ok());
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::equal, tf::cpu, bool>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::div, tf::thread_pool, Eigen::half>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::less, tf::cpu, bool>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::pow, tf::cpu, Eigen::half>);
}

TEMPLATE_LIST_TEST_CASE("binary ops report bad inputs", "[binary][errors]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const auto x23 = random_tensor<float>(tf::shape{2, 3}, 1);
  const auto x43 = random_tensor<float>(tf::shape{4, 3}, 2);
  require_error(tf::test::call<float>(device, tf::ops::add{}, x23, x43), tf::status_code::invalid_argument,
                "add: shapes [2, 3] and [4, 3] do not broadcast");
  require_error(tf::test::call<float>(device, tf::ops::greater{}, x43, random_tensor<float>(tf::shape{2}, 3)),
                tf::status_code::invalid_argument, "greater: shapes [4, 3] and [2] do not broadcast");
  // Both dtypes are named.
  require_error(tf::test::call<float>(device, tf::ops::mul{}, x23, random_tensor<std::int32_t>(tf::shape{2, 3}, 4)),
                tf::status_code::invalid_argument,
                "mul: all inputs must have one dtype, input 0 is f32 and input 1 is i32");
  // bool has no kernel for these (a compile error through call<bool>), so inference is asked.
  const tf::tensor_spec flag{tf::dtype::boolean, tf::shape{3}};
  const std::array flags{flag, flag};
  require_error(tf::infer(tf::ops::add{}, flags), tf::status_code::invalid_argument,
                "add: input dtype bool is not supported");
  require_error(tf::infer(tf::ops::less{}, flags), tf::status_code::invalid_argument,
                "less: input dtype bool is not supported");
  require_error(tf::test::call<float>(device, tf::ops::sub{}, x23), tf::status_code::invalid_argument,
                "sub: expects 2 inputs, got 1");

  // Integer division by zero is an error, wherever the zero is and however it is broadcast.
  const auto ints = *tf::tensor::from_values<std::int32_t>({4, 5, 6, 7}, tf::shape{2, 2});
  require_error(tf::test::call<std::int32_t>(device, tf::ops::div{}, ints, *tf::tensor::from_values<std::int32_t>({3, 0})),
                tf::status_code::invalid_argument, "div: division by zero in input 1");
  require_error(tf::test::call<std::int64_t>(device, tf::ops::div{}, random_tensor<std::int64_t>(tf::shape{257, 1031}, 6),
                                       *tf::tensor::scalar<std::int64_t>(0)),
                tf::status_code::invalid_argument, "div: division by zero in input 1");
  // An empty output divides nothing.
  auto empty = tf::test::call<std::int32_t>(device, tf::ops::div{}, *tf::tensor::allocate(tf::dtype::i32, tf::shape{0, 2}),
                                      *tf::tensor::from_values<std::int32_t>({0, 0}));
  REQUIRE(empty.ok());
  CHECK(empty->shape() == tf::shape{0, 2});

  require_error(tf::test::call<std::int32_t>(device, tf::ops::pow{}, ints, *tf::tensor::from_values<std::int32_t>({2, -2})),
                tf::status_code::invalid_argument, "pow: input 1 holds the negative exponent -2");
  require_error(tf::test::call<std::int64_t>(device, tf::ops::pow{}, *tf::tensor::scalar<std::int64_t>(2),
                                       *tf::tensor::scalar<std::int64_t>(-1)),
                tf::status_code::invalid_argument, "integer powers (dtype i64) need exponents >= 0");
}
