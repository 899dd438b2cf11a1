// SPDX-License-Identifier: Apache-2.0
// The index arithmetic of the GPU's image and selection kernels on any machine: the function each GPU
// thread runs, evaluated on the host for every output element, against the CPU kernels on random
// inputs: pool_element (both layouts, every padding, dilations, ceil_mode, count_include_pad),
// resize_element (nearest and bilinear, every coordinate mode and rounding, scales), top_k's ranks
// and slots (ties, NaNs, sorted or not); and the launchers' parameter checks.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <typeflow/cuda/pool.hpp>
#include <typeflow/cuda/resize.hpp>
#include <typeflow/cuda/top_k.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
namespace gpu = tf::gpu;
using Catch::Matchers::Contains;

namespace {

using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;
static_assert(registry::has_kernel<tf::ops::max_pool2d, tf::cuda<0>, float>);
static_assert(registry::has_kernel<tf::ops::max_pool2d, tf::cuda<1>, std::uint8_t>);
static_assert(registry::has_kernel<tf::ops::avg_pool2d, tf::cuda<0>, Eigen::bfloat16>);
static_assert(!registry::has_kernel<tf::ops::avg_pool2d, tf::cuda<0>, std::int32_t>);  // the op takes floats
static_assert(registry::has_kernel<tf::ops::resize, tf::cuda<0>, std::uint8_t>);
static_assert(registry::has_kernel<tf::ops::top_k, tf::cuda<0>, Eigen::half>);

// A random pool whose output is not empty: its op and its input.
template <class Op>
Op random_pool(std::mt19937& rng, const tf::shape& x) {
  std::uniform_int_distribution<int> small(1, 3), pad_kind(0, 2), coin(0, 1);
  Op op{};
  op.window_h = small(rng);
  op.window_w = small(rng);
  op.stride_h = small(rng);
  op.stride_w = small(rng);
  op.dilation_h = small(rng);
  op.dilation_w = small(rng);
  op.pad = static_cast<tf::ops::padding>(pad_kind(rng));
  if (op.pad == tf::ops::padding::explicit_) {
    // smaller than the dilated window (ops/pool.hpp)
    std::uniform_int_distribution<std::int64_t> ph(0, (op.window_h - 1) * op.dilation_h), pw(0, (op.window_w - 1) * op.dilation_w);
    op.pad_top = ph(rng);
    op.pad_bottom = ph(rng);
    op.pad_left = pw(rng);
    op.pad_right = pw(rng);
  }
  if (op.pad != tf::ops::padding::same) op.ceil_mode = coin(rng) == 1;
  op.format = coin(rng) == 1 ? tf::ops::data_format::nchw : tf::ops::data_format::nhwc;
  if constexpr (requires { op.count_include_pad; }) op.count_include_pad = op.pad == tf::ops::padding::explicit_ && coin(rng) == 1;
  (void)x;
  return op;
}

template <class Op>
void check_random_pools(int seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_int_distribution<std::int64_t> dim(1, 7), channels(1, 5), batch(1, 2);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  tf::cpu host;
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const tf::shape nhwc{batch(rng), dim(rng), dim(rng), channels(rng)};
    const Op op = random_pool<Op>(rng, nhwc);
    const tf::shape xs = op.format == tf::ops::data_format::nchw ? tf::shape{nhwc[0], nhwc[3], nhwc[1], nhwc[2]} : nhwc;
    const tf::shape shapes[] = {xs};
    if (!op.infer_shape(shapes).ok()) continue;  // a window wholly in the padding, a window past the image
    auto x = tf::tensor::allocate(tf::dtype::f32, xs);
    REQUIRE(x.ok());
    for (float& v : x->template unchecked_values<float>()) v = value(rng);
    auto want = tf::call<float>(host, op, *x);
    INFO(want.status().to_string());
    REQUIRE(want.ok());
    if (want->num_elements() == 0) continue;
    const gpu::pool_params p = tf::cuda_kernels::detail::pool_params_of(op, *x, *want, gpu::elem::f32);
    REQUIRE(gpu::validate(p).ok());
    const auto wv = want->template unchecked_values<float>();
    const float* xv = x->template unchecked_data<const float>();
    for (std::int64_t o = 0; o < want->num_elements(); ++o) {
      const float got = gpu::pool_element<float>(p, xv, o, -std::numeric_limits<float>::infinity());
      INFO("trial " << trial << ", input " << xs.to_string() << ", output element " << o);
      REQUIRE(got == Approx(wv[static_cast<std::size_t>(o)]).margin(1e-6));
    }
    ++checked;
  }
  CHECK(checked > 200);
}

} // namespace

TEST_CASE("pool_element pools every output element as the CPU's max_pool2d kernel does") {
  check_random_pools<tf::ops::max_pool2d>(7);
}

TEST_CASE("pool_element pools every output element as the CPU's avg_pool2d kernel does") {
  check_random_pools<tf::ops::avg_pool2d>(8);
}

TEST_CASE("the pooling launcher's parameters are checked before a device is touched") {
  float data[16] = {};
  const gpu::pool_params good{.kind = gpu::pool_kind::max, .type = gpu::elem::f32, .batch = 1, .channels = 1,
                              .h = {.in = 4, .out = 2, .size = 2, .stride = 2, .padded_end = 4},
                              .w = {.in = 4, .out = 2, .size = 2, .stride = 2, .padded_end = 4}, .x = data, .y = data};
  CHECK(gpu::validate(good).ok());
  const auto require = [](gpu::pool_params p, const std::string& text) {
    const tf::status s = gpu::validate(p);
    INFO(s.to_string());
    REQUIRE(s.code() == tf::status_code::invalid_argument);
    CHECK_THAT(std::string(s.message()), Contains(text));
  };
  auto p = good;
  p.type = gpu::elem::i64;
  require(p, "max_pool2d: dtype i64 is not supported");
  p = good;
  p.kind = gpu::pool_kind::average;
  p.type = gpu::elem::i32;
  require(p, "avg_pool2d: dtype i32 is not supported (floating types only)");
  p = good;
  p.kind = static_cast<gpu::pool_kind>(9);
  require(p, "invalid pool kind code 9");
  p = good;
  p.h.stride = 0;
  require(p, "the height axis has window 2, stride 0 and dilation 1; each must be >= 1");
  p = good;
  p.w.out = -1;
  require(p, "the width axis has 4 input and -1 output positions");
  p = good;
  p.w.before = -1;
  require(p, "the width axis has padding -1 before");
  p = good;
  p.batch = -2;
  require(p, "the input has a negative dimension");
  p = good;
  p.y = nullptr;
  require(p, "the output is null");
  p = good;
  p.batch = 0;
  p.x = p.y = nullptr;  // nothing to pool: no pointers needed
  CHECK(gpu::validate(p).ok());
}

TEST_CASE("resize_element resizes every output element as the CPU's resize kernel does") {
  std::mt19937 rng(9);
  std::uniform_int_distribution<std::int64_t> dim(1, 6), channels(1, 4), size(0, 9);
  std::uniform_int_distribution<int> method(0, 1), coordinates(0, 3), rounding(0, 3), coin(0, 1);
  std::uniform_real_distribution<double> scale(0.3, 2.5);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  tf::cpu host;
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    tf::ops::resize op{.height = size(rng), .width = size(rng),
                       .method = static_cast<tf::ops::resize_method>(method(rng)),
                       .coordinates = static_cast<tf::ops::resize_coordinates>(coordinates(rng)),
                       .rounding = static_cast<tf::ops::nearest_rounding>(rounding(rng)),
                       .format = coin(rng) == 1 ? tf::ops::data_format::nchw : tf::ops::data_format::nhwc};
    if (op.height == 0 || coin(rng) == 1) op.scale_h = scale(rng);
    if (op.width == 0 || coin(rng) == 1) op.scale_w = scale(rng);
    const tf::shape xs{dim(rng), dim(rng), dim(rng), channels(rng)};
    const tf::shape shapes[] = {xs};
    if (!op.infer_shape(shapes).ok()) continue;
    auto x = tf::tensor::allocate(tf::dtype::f32, xs);
    REQUIRE(x.ok());
    for (float& v : x->unchecked_values<float>()) v = value(rng);
    auto want = tf::call<float>(host, op, *x);
    INFO(want.status().to_string());
    REQUIRE(want.ok());
    if (want->num_elements() == 0) continue;
    gpu::resize_params p = tf::cuda_kernels::detail::resize_params_of(op, *x, *want, gpu::elem::f32);
    const std::vector<unsigned char> tables = tf::cuda_kernels::detail::resize_tables_of<float>(op, p);
    p.tables = tables.data();
    REQUIRE(gpu::validate(p).ok());
    const auto t = gpu::resize_tables_at<float>(p.tables, gpu::resize_table_entries(p));
    const auto wv = want->unchecked_values<float>();
    for (std::int64_t o = 0; o < want->num_elements(); ++o) {
      INFO("trial " << trial << ", input " << xs.to_string() << ", output element " << o);
      REQUIRE(gpu::resize_element<float>(p, t, x->unchecked_data<const float>(), o) ==
              Approx(wv[static_cast<std::size_t>(o)]).margin(1e-5));
    }
    ++checked;
  }
  CHECK(checked > 200);
}

TEST_CASE("top_k's ranks and slots select and order as the CPU's top_k kernel does") {
  std::mt19937 rng(10);
  std::uniform_int_distribution<std::int64_t> rows_of(1, 4), n_of(1, 12);
  std::uniform_int_distribution<int> small(-3, 3), nan_one_in(0, 7), coin(0, 1);
  tf::cpu host;
  for (int trial = 0; trial < 300; ++trial) {
    const std::int64_t rows = rows_of(rng), n = n_of(rng);
    std::uniform_int_distribution<std::int64_t> k_of(0, n);
    const tf::ops::top_k op{.k = k_of(rng), .sorted = coin(rng) == 1};
    auto x = tf::tensor::allocate(tf::dtype::f32, tf::shape{rows, n});
    REQUIRE(x.ok());
    // small integers: many ties; some NaNs
    for (float& v : x->unchecked_values<float>())
      v = nan_one_in(rng) == 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(small(rng));
    auto want = tf::call<float>(host, op, *x);
    INFO(want.status().to_string());
    REQUIRE(want.ok());
    const auto want_values = (*want)[0].unchecked_values<float>();
    const auto want_indices = (*want)[1].unchecked_values<std::int64_t>();
    std::vector<float> values(static_cast<std::size_t>(rows * op.k));
    std::vector<std::int64_t> indices(values.size()), ranks(static_cast<std::size_t>(rows * n));
    const gpu::top_k_params p{.rows = rows, .n = n, .k = op.k, .sorted = op.sorted, .x = x->data(),
                              .values = values.data(), .indices = indices.data(), .ranks = ranks.data()};
    REQUIRE(gpu::validate(p).ok());
    const float* xv = x->unchecked_data<const float>();
    // The two kernels, element by element.
    for (std::int64_t i = 0; i < rows * n; ++i) {
      const std::int64_t row = i / n, at = i % n;
      const std::int64_t rank = gpu::top_k_rank<float>(xv + row * n, n, at);
      ranks[static_cast<std::size_t>(i)] = rank;
      if (op.sorted && rank < op.k) {
        values[static_cast<std::size_t>(row * op.k + rank)] = xv[i];
        indices[static_cast<std::size_t>(row * op.k + rank)] = at;
      }
    }
    if (!op.sorted)
      for (std::int64_t i = 0; i < rows * n; ++i) {
        if (ranks[static_cast<std::size_t>(i)] >= op.k) continue;
        const std::int64_t row = i / n, at = i % n;
        const std::int64_t slot = gpu::unsorted_slot(ranks.data() + row * n, at, op.k);
        values[static_cast<std::size_t>(row * op.k + slot)] = xv[i];
        indices[static_cast<std::size_t>(row * op.k + slot)] = at;
      }
    INFO("trial " << trial << ": [" << rows << ", " << n << "], k " << op.k << (op.sorted ? ", sorted" : ", not sorted"));
    for (std::size_t j = 0; j < indices.size(); ++j) {
      REQUIRE(indices[j] == want_indices[j]);
      REQUIRE((values[j] == want_values[j] || (std::isnan(values[j]) && std::isnan(want_values[j]))));
    }
  }
}

TEST_CASE("the resize and top_k launchers' parameters are checked before a device is touched") {
  float data[64] = {};
  std::int64_t index[64] = {};
  const auto require = [](const tf::status& s, const std::string& text) {
    INFO(s.to_string());
    REQUIRE(s.code() == tf::status_code::invalid_argument);
    CHECK_THAT(std::string(s.message()), Contains(text));
  };
  const gpu::resize_params resize{.type = gpu::elem::f32, .bilinear = true, .batch = 1, .channels = 1, .in_h = 2,
                                  .in_w = 2, .out_h = 4, .out_w = 4, .tables = data, .x = data, .y = data};
  CHECK(gpu::validate(resize).ok());
  auto r = resize;
  r.type = gpu::elem::i32;
  require(gpu::validate(r), "resize: dtype i32 is not supported by bilinear resize");
  r.bilinear = false;
  CHECK(gpu::validate(r).ok());
  r.type = gpu::elem::boolean;
  require(gpu::validate(r), "dtype bool is not supported by nearest resize");
  r = resize;
  r.in_w = 0;
  require(gpu::validate(r), "the input is 2 x 0; an empty image cannot be resized to 4 x 4");
  r = resize;
  r.tables = nullptr;
  require(gpu::validate(r), "the tables are null");
  r = resize;
  r.out_h = -1;
  require(gpu::validate(r), "the output has a negative dimension");

  const gpu::top_k_params top{.rows = 2, .n = 8, .k = 3, .sorted = false, .x = data, .values = data, .indices = index,
                              .ranks = index};
  CHECK(gpu::validate(top).ok());
  auto t = top;
  t.k = 9;
  require(gpu::validate(t), "top_k: k = 9 is not within the row's 8 entries");
  t = top;
  t.ranks = nullptr;
  require(gpu::validate(t), "unsorted top_k needs the ranks' scratch");
  t.sorted = true;
  CHECK(gpu::validate(t).ok());
  t = top;
  t.type = gpu::elem::u8;
  require(gpu::validate(t), "top_k: dtype u8 is not supported");
  t = top;
  t.indices = nullptr;
  require(gpu::validate(t), "the indices is null");
}
