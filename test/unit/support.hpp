// SPDX-License-Identifier: Apache-2.0
// Shared by the unit tests: the device policies every test body runs on, seeded random tensors,
// and comparison against plain-loop references with an explicit tolerance.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/typeflow.hpp>
// The default kernel tables are compiled once, in test/kernels/.
#include <typeflow/registry/extern_kernels.hpp>

namespace typeflow::test {

// Under ThreadSanitizer every access is slower and each lock hand-off far slower, so stress loops
// run fewer rounds there: it reports a race from one unordered pair of accesses, not from many.
// (GCC says so with __SANITIZE_THREAD__, Clang with __has_feature.)
#if defined(__SANITIZE_THREAD__)
inline constexpr bool under_thread_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool under_thread_sanitizer = true;
#else
inline constexpr bool under_thread_sanitizer = false;
#endif
#else
inline constexpr bool under_thread_sanitizer = false;
#endif

// TEMPLATE_LIST_TEST_CASE(..., test::device_policies): each body runs on both host policies.
using device_policies = std::tuple<cpu, thread_pool>;

// The kernel tests' eager calls: tf::call, through the default registry's dispatch tables on the
// two host policies (compiled once, in test/kernels/, and linked into every test), so that a test
// unit compiles none of the kernels it runs; the same kernel types as tf::call<T>, which checks that
// the table's entry is the one the registry names. Other devices: tf::call<T> itself.
template <element_type T, device_policy Device, op Op, class... In>
auto call(Device& device, const Op& o, In&&... inputs) {
  if constexpr (std::is_same_v<Device, cpu> || std::is_same_v<Device, thread_pool>)
    return typeflow::call<T, dispatched<>>(device, o, std::forward<In>(inputs)...);
  else
    return typeflow::call<T>(device, o, std::forward<In>(inputs)...);
}

// A fresh policy of type D; thread_pool gets 2 threads so the parallel paths are exercised.
template <class D>
D make_device() {
  if constexpr (std::is_same_v<D, thread_pool>) return D(2);
  else return D();
}

// Element values as double, for references and comparisons.
template <class T>
double to_double(T v) { return static_cast<double>(static_cast<float>(v)); }
inline double to_double(double v) { return v; }

// A tensor of `s` with values uniform in [lo, hi] (integers: inclusive), from a fixed seed.
template <class T>
tensor random_tensor(const shape& s, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937_64 rng(seed);
  auto made = tensor::allocate(dtype_of<T>, s);
  REQUIRE(made.ok());
  tensor t = *made;
  auto v = t.unchecked_values<T>();
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, bool>) x = (rng() & 1) != 0;
    else if constexpr (std::is_integral_v<T>)
      x = static_cast<T>(std::uniform_int_distribution<std::int64_t>(static_cast<std::int64_t>(lo),
                                                                     static_cast<std::int64_t>(hi))(rng));
    else x = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
  }
  return t;
}

// The tensor's elements as doubles (row-major).
template <class T>
std::vector<double> as_doubles(const tensor& t) {
  std::vector<double> out;
  for (auto x : t.unchecked_values<T>()) out.push_back(to_double(x));
  return out;
}

// Relative-plus-absolute tolerance per element type: |a - b| <= tol * (1 + |b|).
template <class T>
constexpr double default_tolerance() {
  if constexpr (std::is_same_v<T, Eigen::half>) return 2e-2;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>) return 2e-1;
  else if constexpr (std::is_same_v<T, float>) return 1e-5;
  else if constexpr (std::is_same_v<T, double>) return 1e-12;
  else return 0.0;  // integers and bool: exact
}

// Checks that `actual` has the dtype of T, shape `s`, and elements within tol of `expected`.
// NaNs must match NaNs; infinities must match exactly.
template <class T>
void require_close(const tensor& actual, const shape& s, const std::vector<double>& expected,
                   double tol = default_tolerance<T>()) {
  REQUIRE(actual.dtype() == dtype_of<T>);
  REQUIRE(actual.shape() == s);
  REQUIRE(expected.size() == static_cast<std::size_t>(actual.num_elements()));
  const auto v = actual.unchecked_values<T>();
  std::size_t bad = 0;
  std::size_t first_bad = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = to_double(v[i]);
    const double e = expected[i];
    bool ok;
    if (std::isnan(e)) ok = std::isnan(a);
    else if (std::isinf(e)) ok = a == e;
    else ok = std::abs(a - e) <= tol * (1.0 + std::abs(e));
    if (!ok && bad++ == 0) first_bad = i;
  }
  if (bad != 0) {
    INFO(bad << " mismatches; the first at flat index " << first_bad << ": got " << to_double(v[first_bad])
              << ", expected " << expected[first_bad] << " (tolerance " << tol << ")");
    REQUIRE(bad == 0);
  }
}

// Checks that a result failed with `code` and that its message contains `fragment`.
template <class R>
void require_error(const R& r, status_code code, const std::string& fragment) {
  INFO("status: " << r.status().to_string());
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.status().code() == code);
  REQUIRE(std::string(r.status().message()).find(fragment) != std::string::npos);
}

inline void require_error(const status& st, status_code code, const std::string& fragment) {
  INFO("status: " << st.to_string());
  REQUIRE_FALSE(st.ok());
  REQUIRE(st.code() == code);
  REQUIRE(std::string(st.message()).find(fragment) != std::string::npos);
}

// Row-major strides of a shape, for references that index N-d tensors by hand.
inline std::vector<std::int64_t> strides_of(const shape& s) {
  std::vector<std::int64_t> st(s.rank(), 1);
  for (std::size_t i = s.rank(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// The op and fused steps of a static executor's plan whose shapes let their kernels run on bare
// data (static_step_info::elementwise_elements); those that do are the ones whose kernel can
// (elementwise_data_kernel: not softmax's).
template <class Executor>
std::size_t bare_data_steps() {
  std::size_t n = 0;
  for (const auto& info : Executor::infos) n += info.elementwise_elements != 0;
  return n;
}

// Whether step K's run function, chosen at compile time, is the bare-data path's own
// (op_step::run_elements), and the number of such steps: every step with elementwise_elements
// whose kernel has compute_elements, with no branch on it at run time.
template <class Executor, std::size_t K>
bool runs_elements_at() {
  using runner = typename Executor::template runner<K>;
  if constexpr (requires { requires runner::runs_on_elements; }) return Executor::run_table[K] == &runner::run_elements;
  else return false;
}
template <class Executor>
std::size_t run_elements_steps() {
  return []<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return (std::size_t{0} + ... + std::size_t{runs_elements_at<Executor, Ks>()});
  }(std::make_index_sequence<Executor::infos.size()>{});
}

}  // namespace typeflow::test
