// SPDX-License-Identifier: Apache-2.0
// Reductions, argmax and softmax on a GPU against plain references on random inputs and shapes:
// every reduction, dtype and pattern of axes (rows, columns, both), empty extents, NaN, ties.
#include <cmath>
#include <limits>
#include <random>

#include <typeflow/cuda/reduction.hpp>

#include "gpu_support.hpp"

using namespace gpu_test;

namespace {

std::vector<bool> reduced_mask(const std::vector<std::int64_t>& dims, const std::vector<int>& axes) {
  std::vector<bool> m(dims.size(), axes.empty());
  for (int a : axes) m[static_cast<std::size_t>(a < 0 ? a + static_cast<int>(dims.size()) : a)] = true;
  return m;
}

template <gpu::elem E>
void check_reduce(const gpu::stream& s, gpu::reduce_op op, const std::vector<std::int64_t>& dims,
                  const std::vector<int>& axes, std::mt19937& rng) {
  using T = host_t<E>;
  const bool integral = gpu::is_integer(E);
  std::int64_t total = 1;
  for (auto d : dims) total *= d;
  // Products of up to 5000 factors stay within f32's range.
  std::uniform_real_distribution<double> dist(op == gpu::reduce_op::prod ? 0.99 : -4, op == gpu::reduce_op::prod ? 1.01 : 4);
  std::uniform_int_distribution<int> small(op == gpu::reduce_op::prod ? 1 : 0, 3);
  std::vector<T> x(static_cast<std::size_t>(total));
  for (auto& v : x) v = static_cast<T>(integral ? static_cast<double>(small(rng)) : dist(rng));
  const auto mask = reduced_mask(dims, axes);
  std::int64_t outputs = 1, extent = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) (mask[k] ? extent : outputs) *= dims[k];
  // Reference in double: the output index of each input element.
  // Integers accumulate modulo 2^64 and are read back in T, which wraps as the kernel's T does.
  std::vector<std::uint64_t> wrapped(static_cast<std::size_t>(outputs), op == gpu::reduce_op::prod ? 1u : 0u);
  std::vector<double> acc(static_cast<std::size_t>(outputs));
  const double init = op == gpu::reduce_op::prod ? 1 : op == gpu::reduce_op::max ? -INFINITY
                      : op == gpu::reduce_op::min ? INFINITY : 0;
  std::fill(acc.begin(), acc.end(), init);
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t rest = i, o = 0, scale = 1;
    for (std::size_t k = dims.size(); k-- > 0;) {
      const std::int64_t c = rest % dims[k];
      rest /= dims[k];
      if (!mask[k]) { o += c * scale; scale *= dims[k]; }
    }
    double& a = acc[static_cast<std::size_t>(o)];
    const double v = static_cast<double>(x[static_cast<std::size_t>(i)]);
    if constexpr (std::is_integral_v<T>) {
      auto& w = wrapped[static_cast<std::size_t>(o)];
      const auto u = static_cast<std::uint64_t>(static_cast<std::int64_t>(x[static_cast<std::size_t>(i)]));
      w = op == gpu::reduce_op::prod ? w * u : w + u;
    }
    switch (op) {
      case gpu::reduce_op::sum: case gpu::reduce_op::mean: a += v; break;
      case gpu::reduce_op::prod: a *= v; break;
      case gpu::reduce_op::max: a = std::max(a, v); break;
      case gpu::reduce_op::min: a = std::min(a, v); break;
    }
  }
  auto dx = upload(s, x);
  device_buffer dy(static_cast<std::size_t>(std::max<std::int64_t>(outputs, 1)) * sizeof(T));
  REQUIRE_OK(gpu::reduce(s, {.op = op, .type = E, .x = dx.get(), .x_dims = dims, .axes = axes, .y = dy.get()}));
  const auto y = download<T>(s, dy, static_cast<std::size_t>(outputs));
  for (std::int64_t o = 0; o < outputs; ++o) {
    double want = acc[static_cast<std::size_t>(o)];
    if constexpr (std::is_integral_v<T>) {
      const auto w = static_cast<std::int64_t>(static_cast<T>(wrapped[static_cast<std::size_t>(o)]));
      if (op == gpu::reduce_op::sum || op == gpu::reduce_op::prod) want = static_cast<double>(w);
      if (op == gpu::reduce_op::mean) want = extent == 0 ? 0 : static_cast<double>(w / extent);
    } else {
      if (op == gpu::reduce_op::mean) want = want / static_cast<double>(extent);
      if (!std::isnan(want)) want = static_cast<double>(static_cast<T>(want));  // f16 may overflow to inf
    }
    if (integral && (op == gpu::reduce_op::max || op == gpu::reduce_op::min) && extent == 0)
      want = static_cast<double>(op == gpu::reduce_op::max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    const double got = static_cast<double>(y[static_cast<std::size_t>(o)]);
    INFO(gpu::to_string(op) << " " << gpu::to_string(E) << " output " << o << " extent " << extent);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
    } else {
      // f16 and bf16 accumulate in f32 and round once, as the reference does: one rounding apart.
      // f32 and f64 accumulate in the dtype: the tolerance grows with the extent.
      const bool half = E == gpu::elem::f16 || E == gpu::elem::bf16;
      const double tol = integral ? 0 : half ? tolerance(E) : tolerance(E) * 8 * std::sqrt(static_cast<double>(extent) + 1);
      REQUIRE(got == Approx(want).epsilon(tol).margin(tol * 4));
    }
  }
}

} // namespace

TEST_CASE("every reduction on every number dtype matches the reference, over rows, columns and both") {
  auto s = value_of(gpu::stream::create(0));
  std::mt19937 rng(21);
  const std::vector<std::pair<std::vector<std::int64_t>, std::vector<int>>> cases = {
      {{37, 129}, {1}},            // rows (warp per row)
      {{3, 5000}, {-1}},           // long rows (block per row)
      {{129, 37}, {0}},            // columns
      {{4, 6, 5, 3}, {0, 2}},      // alternating
      {{2, 3, 4}, {}},             // everything
      {{5, 0, 3}, {1}},            // empty extent: the identity
      {{0, 4}, {1}},               // empty output
      {{7, 1, 9}, {1}},            // a size-1 reduced axis
  };
  for (int o = 0; o < gpu::num_reduce_ops; ++o) {
    const auto op = static_cast<gpu::reduce_op>(o);
    for (const auto& [dims, axes] : cases) {
      check_reduce<gpu::elem::f32>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::f64>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::f16>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::bf16>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::i32>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::i64>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::i8>(s, op, dims, axes, rng);
      check_reduce<gpu::elem::u8>(s, op, dims, axes, rng);
    }
  }
}

TEST_CASE("max and min propagate NaN") {
  auto s = value_of(gpu::stream::create(0));
  const std::vector<float> x{1, NAN, 3, 4, 5, 6};
  const std::int64_t dims[] = {2, 3};
  const int axes[] = {1};
  auto dx = upload(s, x);
  device_buffer dy(2 * sizeof(float));
  for (auto op : {gpu::reduce_op::max, gpu::reduce_op::min}) {
    REQUIRE_OK(gpu::reduce(s, {.op = op, .type = gpu::elem::f32, .x = dx.get(), .x_dims = dims, .axes = axes, .y = dy.get()}));
    const auto y = download<float>(s, dy, 2);
    CHECK(std::isnan(y[0]));
    CHECK(y[1] == (op == gpu::reduce_op::max ? 6 : 4));
  }
}

TEST_CASE("argmax picks the first (or last) largest element along any axis") {
  auto s = value_of(gpu::stream::create(0));
  std::mt19937 rng(22);
  std::uniform_int_distribution<int> value(0, 5);  // many ties
  for (const auto& dims : {std::vector<std::int64_t>{7, 33}, std::vector<std::int64_t>{4, 9, 6}})
    for (int axis = 0; axis < static_cast<int>(dims.size()); ++axis)
      for (const bool last : {false, true}) {
        std::int64_t total = 1;
        for (auto d : dims) total *= d;
        std::vector<float> x(static_cast<std::size_t>(total));
        for (auto& v : x) v = static_cast<float>(value(rng));
        std::int64_t outer = 1, inner = 1;
        for (int k = 0; k < axis; ++k) outer *= dims[static_cast<std::size_t>(k)];
        for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < dims.size(); ++k) inner *= dims[k];
        const std::int64_t n = dims[static_cast<std::size_t>(axis)];
        auto dx = upload(s, x);
        device_buffer dy(static_cast<std::size_t>(outer * inner) * sizeof(std::int64_t));
        REQUIRE_OK(gpu::argmax(s, {.type = gpu::elem::f32, .x = dx.get(), .x_dims = dims, .axis = axis,
                                   .select_last_index = last, .y = static_cast<std::int64_t*>(dy.get())}));
        const auto y = download<std::int64_t>(s, dy, static_cast<std::size_t>(outer * inner));
        for (std::int64_t q = 0; q < outer; ++q)
          for (std::int64_t i = 0; i < inner; ++i) {
            std::int64_t best = 0;
            for (std::int64_t r = 1; r < n; ++r) {
              const float v = x[static_cast<std::size_t>((q * n + r) * inner + i)];
              const float b = x[static_cast<std::size_t>((q * n + best) * inner + i)];
              if (last ? v >= b : v > b) best = r;
            }
            REQUIRE(y[static_cast<std::size_t>(q * inner + i)] == best);
          }
      }
}

TEST_CASE("softmax and log_softmax along the last and a middle axis match the reference") {
  auto s = value_of(gpu::stream::create(0));
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> dist(-6, 6);
  for (const auto& [dims, axis] : {std::pair{std::vector<std::int64_t>{33, 77}, -1},
                                   std::pair{std::vector<std::int64_t>{3, 1000}, 1},
                                   std::pair{std::vector<std::int64_t>{4, 17, 6}, 1}})
    for (const bool log : {false, true}) {
      std::int64_t total = 1;
      for (auto d : dims) total *= d;
      std::vector<float> x(static_cast<std::size_t>(total));
      for (auto& v : x) v = static_cast<float>(dist(rng));
      x[0] = 80;  // e^80 overflows f32: the kernel must subtract the max first
      auto dx = upload(s, x);
      REQUIRE_OK(gpu::softmax(s, {.type = gpu::elem::f32, .x = dx.get(), .x_dims = dims, .axis = axis, .log = log,
                                  .y = dx.get()}));  // in place
      const auto y = download<float>(s, dx, x.size());
      const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(dims.size()) : axis);
      std::int64_t outer = 1, inner = 1;
      for (std::size_t k = 0; k < a; ++k) outer *= dims[k];
      for (std::size_t k = a + 1; k < dims.size(); ++k) inner *= dims[k];
      const std::int64_t n = dims[a];
      for (std::int64_t q = 0; q < outer; ++q)
        for (std::int64_t i = 0; i < inner; ++i) {
          double top = -INFINITY, sum = 0;
          const auto at = [&](std::int64_t r) { return static_cast<std::size_t>((q * n + r) * inner + i); };
          for (std::int64_t r = 0; r < n; ++r) top = std::max(top, static_cast<double>(x[at(r)]));
          for (std::int64_t r = 0; r < n; ++r) sum += std::exp(x[at(r)] - top);
          for (std::int64_t r = 0; r < n; ++r) {
            const double want = log ? (x[at(r)] - top) - std::log(sum) : std::exp(x[at(r)] - top) / sum;
            REQUIRE(y[at(r)] == Approx(want).epsilon(1e-5).margin(1e-6));
          }
        }
    }
}
