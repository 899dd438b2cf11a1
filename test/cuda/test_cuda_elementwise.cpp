// SPDX-License-Identifier: Apache-2.0
// The elementwise kernels on a GPU, each op and dtype against a plain reference on random inputs,
// with broadcasting on random shapes; cast and fill; errors only the data shows.
#include <cmath>
#include <limits>
#include <random>

#include <typeflow/cuda/elementwise.hpp>

#include "gpu_support.hpp"

using namespace gpu_test;
using Catch::Matchers::Contains;

namespace {

double unary_reference(gpu::unary_op op, double x, double alpha, double beta) {
  switch (op) {
    case gpu::unary_op::neg: return -x;
    case gpu::unary_op::abs: return std::abs(x);
    case gpu::unary_op::exp: return std::exp(x);
    case gpu::unary_op::log: return std::log(x);
    case gpu::unary_op::sqrt: return std::sqrt(x);
    case gpu::unary_op::rsqrt: return 1 / std::sqrt(x);
    case gpu::unary_op::square: return x * x;
    case gpu::unary_op::tanh: return std::tanh(x);
    case gpu::unary_op::sigmoid: return 1 / (1 + std::exp(-x));
    case gpu::unary_op::relu: return x > 0 ? x : 0;
    case gpu::unary_op::softplus: return std::log1p(std::exp(x));
    case gpu::unary_op::erf: return std::erf(x);
    case gpu::unary_op::gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case gpu::unary_op::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case gpu::unary_op::leaky_relu: return x < 0 ? alpha * x : x;
    case gpu::unary_op::hard_sigmoid: return std::clamp(alpha * x + beta, 0.0, 1.0);
    case gpu::unary_op::clip: return std::min(std::max(x, alpha), beta);
  }
  return 0;
}

// A clip bound as the CPU kernel applies it: outside the dtype's range (or NaN) it clips nothing.
template <class T>
double clip_bound(double v, bool lower) {
  if constexpr (std::is_integral_v<T>) {
    const auto lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    const auto highest = static_cast<double>(std::numeric_limits<T>::max());
    if (std::isnan(v)) return lower ? lowest : highest;
    // At or past the ends, the end itself: i64's largest value is 2^63 - 1, which a double rounds to
    // 2^63, and converting that back to i64 would overflow.
    if (v <= lowest) return lowest;
    if (v >= highest) return highest;
    return static_cast<double>(static_cast<T>(v));
  } else {
    return static_cast<double>(static_cast<T>(v));
  }
}

// The double `v` as the dtype holds it: integers wrap, f16 and bf16 round (and overflow to inf).
template <class T>
double as_dtype(double v) {
  if constexpr (std::is_integral_v<T>) return static_cast<double>(static_cast<T>(static_cast<std::int64_t>(v)));
  else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>)
    return std::isnan(v) ? v : static_cast<double>(static_cast<T>(v));
  else return v;
}

template <gpu::elem E>
void check_unary(const gpu::stream& s, gpu::unary_op op, std::mt19937& rng, double alpha, double beta) {
  using T = host_t<E>;
  const bool positive = op == gpu::unary_op::log || op == gpu::unary_op::sqrt || op == gpu::unary_op::rsqrt;
  const double lo = positive ? 0.05 : E == gpu::elem::u8 ? 0 : (gpu::is_integer(E) ? -20 : -4);
  const double hi = positive ? 8 : (gpu::is_integer(E) ? 20 : 4);
  std::uniform_real_distribution<double> dist(lo, hi);
  const std::int64_t n = 3001;  // odd: the grid-stride loop's last block is partial
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(gpu::is_integer(E) ? std::round(dist(rng)) : dist(rng));
  auto dx = upload(s, x);
  device_buffer dy(n * sizeof(T));
  REQUIRE_OK(gpu::unary(s, {.op = op, .type = E, .x = dx.get(), .y = dy.get(), .size = n, .alpha = alpha, .beta = beta}));
  const auto y = download<T>(s, dy, n);
  const double tol = tolerance(E) * 4;
  for (std::int64_t i = 0; i < n; ++i) {
    // The reference takes the op's attributes as the kernel sees them (in the dtype).
    const double a = op == gpu::unary_op::clip ? clip_bound<T>(alpha, true) : static_cast<double>(static_cast<T>(alpha));
    const double b = op == gpu::unary_op::clip ? clip_bound<T>(beta, false) : static_cast<double>(static_cast<T>(beta));
    const double want = as_dtype<T>(unary_reference(op, static_cast<double>(x[i]), a, b));
    INFO(gpu::to_string(op) << " " << gpu::to_string(E) << " x = " << static_cast<double>(x[i]));
    REQUIRE(static_cast<double>(y[i]) == Approx(want).epsilon(tol).margin(tol));
  }
}

template <gpu::elem E>
void check_binary(const gpu::stream& s, gpu::binary_op op, std::mt19937& rng) {
  using T = host_t<E>;
  std::uniform_int_distribution<int> rank_of(0, 4), dim_of(1, 5), coin(0, 2);
  for (int trial = 0; trial < 8; ++trial) {
    const int rank = rank_of(rng);
    std::vector<std::int64_t> out(rank), a, b;
    for (auto& d : out) d = dim_of(rng);
    if (trial == 0) out = {67, 129};  // larger than one block
    for (int k = 0; k < static_cast<int>(out.size()); ++k) {
      a.push_back(coin(rng) == 0 ? 1 : out[k]);
      b.push_back(coin(rng) == 0 ? 1 : out[k]);
    }
    if (trial == 1) b.erase(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() / 2));  // lower rank
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::size_t lb = out.size() - b.size();
      const std::int64_t db = k < lb ? 1 : b[k - lb];
      out[k] = a[k] == 1 ? db : a[k];
    }
    const auto count = [](const std::vector<std::int64_t>& d) {
      std::int64_t n = 1;
      for (auto v : d) n *= v;
      return n;
    };
    const bool integral = gpu::is_integer(E) || E == gpu::elem::boolean;
    std::uniform_real_distribution<double> dist(op == gpu::binary_op::pow ? 0.5 : -8, 8);
    std::uniform_int_distribution<int> small(op == gpu::binary_op::pow ? 0 : 1, op == gpu::binary_op::pow ? 4 : 9);
    std::vector<T> va(static_cast<std::size_t>(count(a))), vb(static_cast<std::size_t>(count(b)));
    for (auto& v : va) v = static_cast<T>(integral ? static_cast<double>(small(rng)) : dist(rng));
    for (auto& v : vb) v = static_cast<T>(integral ? static_cast<double>(small(rng)) : dist(rng));
    if (E == gpu::elem::boolean) {
      for (auto& v : va) v = static_cast<T>(coin(rng) == 0);
      for (auto& v : vb) v = static_cast<T>(coin(rng) == 0);
    }
    auto da = upload(s, va);
    auto db = upload(s, vb);
    const bool comparison = gpu::is_comparison(op);
    const std::int64_t n = count(out);
    device_buffer dout(static_cast<std::size_t>(n) * (comparison ? 1 : sizeof(T)));
    device_buffer error_word(sizeof(unsigned));
    REQUIRE_OK(gpu::set_async(s, error_word.get(), 0, sizeof(unsigned)));
    REQUIRE_OK(gpu::binary(s, {.op = op, .type = E, .a = da.get(), .a_dims = a, .b = db.get(), .b_dims = b,
                               .out = dout.get(), .out_dims = out, .error_word = static_cast<unsigned*>(error_word.get())}));
    REQUIRE_OK(gpu::read_error_bits(s, static_cast<unsigned*>(error_word.get()), gpu::to_string(op)));
    const auto offset = [&](const std::vector<std::int64_t>& in, std::int64_t index) {
      std::int64_t off = 0, stride = 1;
      for (std::size_t k = out.size(); k-- > 0;) {
        const std::int64_t c = index % out[k];
        index /= out[k];
        const std::size_t lead = out.size() - in.size();
        if (k >= lead) {
          if (in[k - lead] != 1) off += c * stride;
          stride *= in[k - lead];
        }
      }
      return off;
    };
    std::vector<T> got_t;
    std::vector<unsigned char> got_b;
    if (comparison) got_b = download<unsigned char>(s, dout, static_cast<std::size_t>(n));
    else got_t = download<T>(s, dout, static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(va[static_cast<std::size_t>(offset(a, i))]);
      const double y = static_cast<double>(vb[static_cast<std::size_t>(offset(b, i))]);
      double want = 0;
      switch (op) {
        case gpu::binary_op::add: want = x + y; break;
        case gpu::binary_op::sub: want = x - y; break;
        case gpu::binary_op::mul: want = x * y; break;
        case gpu::binary_op::div: want = integral ? std::trunc(x / y) : x / y; break;
        case gpu::binary_op::maximum: want = std::max(x, y); break;
        case gpu::binary_op::minimum: want = std::min(x, y); break;
        case gpu::binary_op::pow: want = std::pow(x, y); break;
        case gpu::binary_op::equal: want = x == y; break;
        case gpu::binary_op::less: want = x < y; break;
        case gpu::binary_op::greater: want = x > y; break;
      }
      if (!comparison) want = as_dtype<T>(want);
      const double got = comparison ? static_cast<double>(got_b[static_cast<std::size_t>(i)])
                                    : static_cast<double>(got_t[static_cast<std::size_t>(i)]);
      INFO(gpu::to_string(op) << " " << gpu::to_string(E) << " x = " << x << " y = " << y);
      const double tol = comparison ? 0 : tolerance(E) * 4;
      REQUIRE(got == Approx(want).epsilon(tol).margin(tol));
    }
  }
}

template <class F>
void for_each_elem(F&& f) {
  f(std::integral_constant<gpu::elem, gpu::elem::f16>{});
  f(std::integral_constant<gpu::elem, gpu::elem::bf16>{});
  f(std::integral_constant<gpu::elem, gpu::elem::f32>{});
  f(std::integral_constant<gpu::elem, gpu::elem::f64>{});
  f(std::integral_constant<gpu::elem, gpu::elem::i8>{});
  f(std::integral_constant<gpu::elem, gpu::elem::i32>{});
  f(std::integral_constant<gpu::elem, gpu::elem::i64>{});
  f(std::integral_constant<gpu::elem, gpu::elem::u8>{});
  f(std::integral_constant<gpu::elem, gpu::elem::boolean>{});
}

} // namespace

TEST_CASE("every unary op on every dtype it accepts matches the reference") {
  auto s = value_of(gpu::stream::create(0));
  std::mt19937 rng(11);
  for (int o = 0; o < gpu::num_unary_ops; ++o) {
    const auto op = static_cast<gpu::unary_op>(o);
    for_each_elem([&](auto e) {
      if constexpr (decltype(e)::value != gpu::elem::boolean) {
        if (gpu::accepts(op, decltype(e)::value)) {
          const bool clip = op == gpu::unary_op::clip;
          check_unary<decltype(e)::value>(s, op, rng, clip ? -1.5 : 0.2, clip ? 2.5 : 0.5);
          // ops::clip's default bounds, and bounds beyond an integer dtype's range, clip nothing.
          if (clip) check_unary<decltype(e)::value>(s, op, rng, -INFINITY, INFINITY);
          if (clip) check_unary<decltype(e)::value>(s, op, rng, -1e30, 1e30);
        }
      }
    });
  }
}

TEST_CASE("every binary op on every dtype it accepts matches the reference, with broadcasting") {
  auto s = value_of(gpu::stream::create(0));
  std::mt19937 rng(12);
  for (int o = 0; o < gpu::num_binary_ops; ++o) {
    const auto op = static_cast<gpu::binary_op>(o);
    for_each_elem([&](auto e) {
      if (gpu::accepts(op, decltype(e)::value)) check_binary<decltype(e)::value>(s, op, rng);
    });
  }
}

TEST_CASE("integer division by zero and negative integer exponents come back as a status") {
  auto s = value_of(gpu::stream::create(0));
  const std::vector<std::int32_t> a{6, 7, 8}, b{2, 0, 1};
  const std::int64_t dims[] = {3};
  auto da = upload(s, a);
  auto db = upload(s, b);
  device_buffer out(3 * sizeof(std::int32_t)), word(sizeof(unsigned));
  auto* w = static_cast<unsigned*>(word.get());
  REQUIRE_OK(gpu::set_async(s, w, 0, sizeof(unsigned)));
  gpu::binary_params p{.op = gpu::binary_op::div, .type = gpu::elem::i32, .a = da.get(), .a_dims = dims, .b = db.get(),
                       .b_dims = dims, .out = out.get(), .out_dims = dims, .error_word = w};
  REQUIRE_OK(gpu::binary(s, p));
  const auto st = gpu::read_error_bits(s, w, "div");
  CHECK(st.code() == typeflow::status_code::invalid_argument);
  CHECK(std::string(st.message()) == "div: division by zero in input 1");
  CHECK(gpu::read_error_bits(s, w, "div").ok());  // read clears the word
  const std::vector<std::int32_t> e{1, -1, 2};
  auto de = upload(s, e);
  p.op = gpu::binary_op::pow;
  p.b = de.get();
  REQUIRE_OK(gpu::binary(s, p));
  CHECK_THAT(std::string(gpu::read_error_bits(s, w, "pow").message()), Contains("negative exponent"));
  // INT_MIN / -1 wraps to itself, as on the CPU.
  const std::vector<std::int32_t> lowest{std::numeric_limits<std::int32_t>::lowest()}, minus{-1};
  const std::int64_t one[] = {1};
  auto dl = upload(s, lowest);
  auto dm = upload(s, minus);
  REQUIRE_OK(gpu::binary(s, {.op = gpu::binary_op::div, .type = gpu::elem::i32, .a = dl.get(), .a_dims = one,
                             .b = dm.get(), .b_dims = one, .out = out.get(), .out_dims = one, .error_word = w}));
  CHECK(download<std::int32_t>(s, out, 1)[0] == std::numeric_limits<std::int32_t>::lowest());
}

namespace {

// ops::cast's rules, written out for the reference.
template <class To>
To cast_reference(double v) {
  if constexpr (std::is_same_v<To, host_bool>) {
    return host_bool(v != 0);  // NaN too
  } else if constexpr (std::is_integral_v<To>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else if constexpr (std::is_same_v<To, double>) {
    return v;
  } else {
    return static_cast<To>(static_cast<float>(v));  // f16 and bf16 round from f32, as the kernel
  }
}

} // namespace

TEST_CASE("cast between every pair of dtypes saturates, truncates and maps NaN as ops::cast") {
  auto s = value_of(gpu::stream::create(0));
  const std::vector<double> values{0.0, 1.0, -1.0, 2.75, -2.75, 127.9, 128.5, -129.5, 255.5, 300.0, 65504.0,
                                   3e9, -3e9, 1e20, -1e20, std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for_each_elem([&](auto from_c) {
    constexpr gpu::elem From = decltype(from_c)::value;
    using F = host_t<From>;
    std::vector<F> x;
    for (double v : values) {
      // Integers hold what they can hold: the source is itself a cast of the value.
      x.push_back(gpu::is_integer(From) || From == gpu::elem::boolean ? cast_reference<F>(v) : static_cast<F>(v));
    }
    auto dx = upload(s, x);
    for_each_elem([&](auto to_c) {
      constexpr gpu::elem To = decltype(to_c)::value;
      using T = host_t<To>;
      device_buffer dy(x.size() * sizeof(T));
      REQUIRE_OK(gpu::cast(s, {.from = From, .to = To, .x = dx.get(), .y = dy.get(),
                               .size = static_cast<std::int64_t>(x.size())}));
      const auto y = download<T>(s, dy, x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double source = static_cast<double>(x[i]);
        // Integers to integers wrap modulo 2^bits; everything else follows cast_reference.
        // (From the integer itself, not through the double: i64's largest value is not a double.)
        T want{};
        if constexpr (std::is_integral_v<F> && std::is_integral_v<T>) want = static_cast<T>(x[i]);
        else want = cast_reference<T>(source);
        INFO(gpu::to_string(From) << " -> " << gpu::to_string(To) << " of " << source);
        if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
          const double g = static_cast<double>(y[i]), w = static_cast<double>(want);
          if (std::isnan(w)) REQUIRE(std::isnan(g));
          else REQUIRE(g == w);
        } else {
          REQUIRE(y[i] == want);
        }
      }
    });
  });
}

TEST_CASE("fill writes a value converted to each dtype; a launch on a moved-from stream is an error") {
  auto s = value_of(gpu::stream::create(0));
  {
    auto t = value_of(gpu::stream::create(0));
    auto u = std::move(t);
    device_buffer d(16);
    const auto st = gpu::fill(t, gpu::elem::f32, d.get(), 4, 1.0);  // NOLINT: moved-from on purpose
    CHECK(st.code() == typeflow::status_code::failed_precondition);
    CHECK_THAT(std::string(st.message()), Contains("fill: the stream is moved-from"));
  }
  for_each_elem([&](auto e) {
    constexpr gpu::elem E = decltype(e)::value;
    using T = host_t<E>;
    device_buffer d(1000 * sizeof(T));
    REQUIRE_OK(gpu::fill(s, E, d.get(), 1000, 3.75));
    const auto y = download<T>(s, d, 1000);
    for (const T& v : y) REQUIRE(static_cast<double>(v) == static_cast<double>(cast_reference<T>(3.75)));
  });
}
