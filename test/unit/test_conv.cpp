// SPDX-License-Identifier: Apache-2.0
// conv2d, max_pool2d and avg_pool2d: every op x dtype against nested-loop references (double
// precision, TensorFlow's padding arithmetic written out again here) on random inputs, on both
// host policies; the padding helpers and shape inference at compile time; run-time errors.
#include "conv_reference.hpp"
#include "support.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace tf = typeflow;
using tf::dyn;
using tf::static_shape;
using tf::ops::padding;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;
using tf::test::require_error;

using tf::ops::data_format;
using namespace conv_reference;

TEMPLATE_LIST_TEST_CASE("conv2d matches a nested-loop reference", "[conv]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  // Sums of up to 333 products of values in [-2, 2]: f32 rounding stays well under 1e-4 relative.
  SECTION("f32") { check_conv2d<float>(device, 1e-4); }
  SECTION("f64") { check_conv2d<double>(device, 1e-12); }
}

TEMPLATE_LIST_TEST_CASE("conv2d with valid padding skips the image border", "[conv]", tf::test::device_policies) {
  // A 3x3 box filter over a 4x4 ramp: each output is the sum of one 3x3 block, worked out by hand.
  auto device = tf::test::make_device<TestType>();
  std::vector<float> ramp(16);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i);
  const auto x = tf::tensor::from_values<float>(ramp, tf::shape{1, 4, 4, 1});
  const auto f = tf::tensor::filled<float>(tf::shape{3, 3, 1, 1}, 1.0f);
  REQUIRE(x.ok());
  REQUIRE(f.ok());
  auto y = tf::test::call<float>(device, tf::ops::conv2d{}, *x, *f);
  REQUIRE(y.ok());
  require_close<float>(*y, tf::shape{1, 2, 2, 1}, {45, 54, 81, 90});
  // Same padding, stride 2 on 4x4: total padding 1, all of it after, so the first window is
  // rows 0-2 and columns 0-2 and the last is cut by the border.
  auto z = tf::test::call<float>(device, tf::ops::conv2d{.stride_h = 2, .stride_w = 2, .pad = padding::same}, *x, *f);
  REQUIRE(z.ok());
  require_close<float>(*z, tf::shape{1, 2, 2, 1}, {45, 39, 66, 50});
}

// Winograd's F(2x2, 3x3) on its own (kernels/cpu/detail/winograd.hpp): which convolutions it takes,
// and every output tile, from any first tile, against the direct sum, down to one tile and one pixel.
TEST_CASE("conv2d: Winograd F(2x2, 3x3) tiles match the direct sum", "[conv][winograd]") {
  using tf::cpu_kernels::detail::conv_geometry;
  using tf::cpu_kernels::detail::fma_gemm;
  using tf::cpu_kernels::detail::winograd_3x3;
  if (!fma_gemm::available()) {
    WARN("this processor has no AVX2 and FMA: conv2d takes the patches, and Winograd is not tested");
    return;
  }
  auto geometry = [](std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c_in, std::int64_t c_out,
                     std::int64_t pad) {
    conv_geometry g{n, h, w, c_in, 3, 3, c_out, h + 2 * pad - 2, w + 2 * pad - 2, 1, 1, 1, 1, pad, pad};
    return g;
  };
  CHECK(winograd_3x3::applies(geometry(1, 5, 5, 8, 8, 1)));
  {
    conv_geometry g = geometry(1, 5, 5, 8, 8, 1);
    g.stride_w = 2;
    CHECK(!winograd_3x3::applies(g));
    g = geometry(1, 5, 5, 8, 8, 1);
    g.dilation_h = 2;
    CHECK(!winograd_3x3::applies(g));
    g = geometry(1, 5, 5, 8, 8, 1);
    g.kw = 2;
    CHECK(!winograd_3x3::applies(g));
    CHECK(!winograd_3x3::applies(geometry(1, 5, 5, 7, 8, 1)));  // too few channels in
    CHECK(!winograd_3x3::applies(geometry(1, 5, 5, 8, 7, 1)));  // or out
  }
  std::uint64_t seed = 500;
  for (const conv_geometry& g : {geometry(1, 1, 1, 8, 8, 1), geometry(1, 3, 3, 8, 16, 0), geometry(2, 5, 4, 9, 17, 1),
                                 geometry(1, 12, 7, 24, 33, 1), geometry(3, 6, 9, 16, 8, 0)}) {
    INFO("[" << g.n << ", " << g.h << ", " << g.w << ", " << g.c_in << "] (*) [3, 3, " << g.c_in << ", " << g.c_out
             << "], padding " << g.pad_top);
    const tf::tensor x = random_tensor<float>(tf::shape{g.n, g.h, g.w, g.c_in}, seed++);
    const tf::tensor f = random_tensor<float>(tf::shape{3, 3, g.c_in, g.c_out}, seed++);
    const tf::ops::conv2d op{.pad = g.pad_top == 1 ? padding::same : padding::valid};
    tf::shape expected_shape;
    const auto expected = reference_conv2d(x.shape(), f, as_doubles<float>(x), as_doubles<float>(f), op, expected_shape);
    REQUIRE(expected_shape == tf::shape{g.n, g.oh, g.ow, g.c_out});
    std::vector<float> u(static_cast<std::size_t>(winograd_3x3::packed_filter_size(g)));
    winograd_3x3::transform_filter(g, f.unchecked_data<const float>(), u.data());
    const std::int64_t tiles = winograd_3x3::tiles(g);
    CHECK(tiles == g.n * ((g.oh + 1) / 2) * ((g.ow + 1) / 2));
    // All the tiles at once, then in two calls split at every tile.
    for (std::int64_t split = 0; split < tiles; split += std::max<std::int64_t>(1, tiles / 5)) {
      INFO("tiles 0.." << split << " and " << split << ".." << tiles);
      tf::tensor y = *tf::tensor::filled(expected_shape, std::numeric_limits<float>::quiet_NaN());
      winograd_3x3::compute(g, x.unchecked_data<const float>(), u.data(), 0, split, y.unchecked_data<float>());
      winograd_3x3::compute(g, x.unchecked_data<const float>(), u.data(), split, tiles, y.unchecked_data<float>());
      require_close<float>(y, expected_shape, expected, 1e-4);
    }
  }
}

// The conv2d kernel keeps its filter transformed for Winograd where a static session asks it to
// (kernels/packed_operand.hpp): for the convolutions Winograd takes, and then computes on the kept
// filter (given another filter of its shape, it still convolves with the kept one), for any number
// of output tiles; NCHW images and other dtypes are never packed.
TEMPLATE_LIST_TEST_CASE("conv2d keeps its 3x3 filter transformed and convolves with it", "[conv][winograd]",
                        tf::test::device_policies) {
  using kernel = tf::default_registry::kernel<tf::ops::conv2d, TestType, float>;
  STATIC_REQUIRE(tf::packs_operand<kernel>);
  STATIC_REQUIRE(!tf::packs_operand<tf::default_registry::kernel<tf::ops::conv2d, TestType, double>>);
  if (!tf::cpu_kernels::detail::fma_gemm::available()) {
    WARN("this processor has no AVX2 and FMA: conv2d keeps no filter, and this is not tested");
    return;
  }
  auto device = tf::test::make_device<TestType>();
  const tf::ops::conv2d same{.pad = padding::same};
  auto packable = [](const tf::ops::conv2d& op, const tf::shape& x, const tf::shape& f) {
    const tf::tensor in[] = {random_tensor<float>(x, 1), random_tensor<float>(f, 2)};
    const bool yes = kernel::packable(op, in);
    CHECK((kernel::pack(op, in) != nullptr) == yes);
    return yes;
  };
  CHECK(packable(same, {1, 6, 6, 8}, {3, 3, 8, 8}));
  CHECK(packable({}, {2, 3, 3, 16}, {3, 3, 16, 12}));
  CHECK(!packable({.format = data_format::nchw}, {1, 8, 6, 6}, {3, 3, 8, 8}));
  CHECK(!packable({.stride_h = 2, .pad = padding::same}, {1, 6, 6, 8}, {3, 3, 8, 8}));
  CHECK(!packable({.pad = padding::same, .dilation_w = 2}, {1, 6, 6, 8}, {3, 3, 8, 8}));
  CHECK(!packable(same, {1, 6, 6, 8}, {3, 2, 8, 8}));
  CHECK(!packable(same, {1, 6, 6, 4}, {3, 3, 4, 8}));

  const tf::tensor f1 = random_tensor<float>(tf::shape{3, 3, 12, 20}, 4), f2 = random_tensor<float>(tf::shape{3, 3, 12, 20}, 5);
  const tf::tensor packed_in[] = {random_tensor<float>(tf::shape{1, 4, 4, 12}, 3), f1};
  const auto form = kernel::pack(same, packed_in);
  REQUIRE(form != nullptr);
  // One tile (fewer than a call that transforms its filter takes Winograd for), a few, many.
  for (const tf::shape& x_shape : {tf::shape{1, 2, 2, 12}, tf::shape{1, 1, 1, 12}, tf::shape{2, 7, 5, 12},
                                   tf::shape{1, 24, 20, 12}}) {
    INFO(x_shape.to_string() << " (*) [3, 3, 12, 20]");
    const tf::tensor x = random_tensor<float>(x_shape, 6);
    tf::shape expected_shape;
    const auto expected = reference_conv2d(x_shape, f1, as_doubles<float>(x), as_doubles<float>(f1), same, expected_shape);
    tf::tensor got = *tf::tensor::filled(expected_shape, std::numeric_limits<float>::quiet_NaN());
    const tf::tensor in[] = {x, f2};
    tf::kernel_context<TestType> ctx{device, in, std::span<tf::tensor>(&got, 1)};
    REQUIRE(kernel::compute_packed(same, ctx, form.get()).ok());
    require_close<float>(got, expected_shape, expected, 1e-4);
  }
  // A filter of another shape than the kept one's: computed as compute does, with that filter.
  const tf::tensor x = random_tensor<float>(tf::shape{1, 5, 6, 12}, 7), f3 = random_tensor<float>(tf::shape{3, 3, 12, 8}, 8);
  tf::shape expected_shape;
  const auto expected = reference_conv2d(x.shape(), f3, as_doubles<float>(x), as_doubles<float>(f3), same, expected_shape);
  tf::tensor got = *tf::tensor::filled(expected_shape, std::numeric_limits<float>::quiet_NaN());
  const tf::tensor in[] = {x, f3};
  tf::kernel_context<TestType> ctx{device, in, std::span<tf::tensor>(&got, 1)};
  REQUIRE(kernel::compute_packed(same, ctx, form.get()).ok());
  require_close<float>(got, expected_shape, expected, 1e-4);
}

// In a static session a 3x3 filter that is a variable is kept transformed from the second run on its
// value (derived_forms), used for any batch, an empty one included, and transformed again once the
// variable is written.
TEMPLATE_LIST_TEST_CASE("session: a conv2d filter variable is kept transformed until it changes", "[conv][winograd]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  constexpr auto x = tf::input<"x", float, static_shape<dyn, 6, 7, 8>>;
  constexpr auto k = tf::variable<"k", float, static_shape<3, 3, 8, 12>>;
  constexpr auto y = tf::apply<tf::ops::conv2d{.pad = padding::same}>(x, k);
  tf::session s(tf::graph(y), device);
  const bool winograd = tf::cpu_kernels::detail::fma_gemm::available();
  auto check = [&](const tf::tensor& filter, std::int64_t batch, std::uint64_t seed) {
    INFO("batch " << batch);
    const tf::tensor in = random_tensor<float>(tf::shape{batch, 6, 7, 8}, seed);
    auto r = s.run(tf::feed(x, in), tf::fetch(y));
    REQUIRE(r.ok());
    tf::shape expected_shape;
    const auto expected = reference_conv2d(in.shape(), filter, as_doubles<float>(in), as_doubles<float>(filter),
                                           {.pad = padding::same}, expected_shape);
    require_close<float>(std::get<0>(*r).untyped(), expected_shape, expected, 1e-4);
  };
  tf::tensor f = random_tensor<float>(tf::shape{3, 3, 8, 12}, 1);
  REQUIRE(s.initialize(k, f).ok());
  check(f, 2, 2);
  CHECK(s.derived_forms() == 0);
  for (const std::int64_t batch : {2, 1, 0, 3}) {
    check(f, batch, 3 + static_cast<std::uint64_t>(batch));
    CHECK(s.derived_forms() == (winograd ? 1u : 0u));
  }
  f = random_tensor<float>(tf::shape{3, 3, 8, 12}, 9);
  REQUIRE(s.initialize(k, f).ok());
  CHECK(s.derived_forms() == 0);
  check(f, 0, 10);
  check(f, 2, 11);
  CHECK(s.derived_forms() == (winograd ? 1u : 0u));
}

namespace {

// The pools: the max or the mean of the window's taps inside the image (the mean divided by the
// taps inside the image with its padding under count_include_pad), read in the op's format.
template <class Op>
std::vector<double> reference_pool2d(const tf::shape& xs, const std::vector<double>& x, const Op& op,
                                     tf::shape& out_shape) {
  const bool nhwc = op.format == data_format::nhwc;
  const std::int64_t n = xs[0], h = xs[nhwc ? 1 : 2], w = xs[nhwc ? 2 : 3], c = xs[nhwc ? 3 : 1];
  const auto wy = ref_window(h, op.window_h, op.stride_h, op.dilation_h, op.pad, op.pad_top, op.pad_bottom, op.ceil_mode);
  const auto wx = ref_window(w, op.window_w, op.stride_w, op.dilation_w, op.pad, op.pad_left, op.pad_right, op.ceil_mode);
  out_shape = image_shape(op.format, n, wy.out, wx.out, c);
  bool include_pad = false;
  if constexpr (std::is_same_v<Op, tf::ops::avg_pool2d>) include_pad = op.count_include_pad;
  std::vector<double> y(static_cast<std::size_t>(n * wy.out * wx.out * c));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < wy.out; ++i)
      for (std::int64_t j = 0; j < wx.out; ++j)
        for (std::int64_t ci = 0; ci < c; ++ci) {
          double max = -std::numeric_limits<double>::infinity(), sum = 0;
          int count = 0, padded_count = 0;
          for (std::int64_t di = 0; di < op.window_h; ++di)
            for (std::int64_t dj = 0; dj < op.window_w; ++dj) {
              const std::int64_t iy = i * op.stride_h + di * op.dilation_h - wy.pad_before;
              const std::int64_t ix = j * op.stride_w + dj * op.dilation_w - wx.pad_before;
              if (iy >= -wy.pad_before && iy < wy.padded_end && ix >= -wx.pad_before && ix < wx.padded_end)
                ++padded_count;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double v = x[image_index(op.format, h, w, c, b, iy, ix, ci)];
              max = std::max(max, v);
              sum += v;
              ++count;
            }
          y[image_index(op.format, wy.out, wx.out, c, b, i, j, ci)] =
              std::is_same_v<Op, tf::ops::max_pool2d> ? max : sum / (include_pad ? padded_count : count);
        }
  return y;
}

struct pool_case {
  tf::shape x;  // NHWC; checked in both formats
  std::int64_t window_h, window_w, stride_h, stride_w;
  padding pad;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::array<std::int64_t, 4> pads{};  // top, bottom, left, right
  bool ceil_mode = false;
};

// Default 2x2/2, odd sizes that drop a border, same padding (border windows partly outside),
// overlapping windows (stride < window), gaps (stride > window), size 0 and 1, dilations,
// explicit asymmetric pads, ceil_mode (with the last window starting in the front padding
// dropped), and a case large enough to split over threads.
const std::vector<pool_case> pool_cases = {
    {{2, 6, 8, 3}, 2, 2, 2, 2, padding::valid},
    {{1, 7, 9, 5}, 2, 2, 2, 2, padding::valid},
    {{1, 7, 9, 5}, 2, 2, 2, 2, padding::same},
    {{2, 7, 8, 4}, 3, 3, 2, 2, padding::same},
    {{2, 7, 8, 4}, 3, 3, 2, 2, padding::valid},
    {{1, 6, 5, 3}, 3, 3, 1, 1, padding::same},
    {{1, 6, 5, 3}, 3, 3, 1, 1, padding::valid},
    {{2, 9, 7, 2}, 3, 2, 2, 1, padding::same},
    {{1, 10, 11, 3}, 2, 2, 3, 3, padding::same},
    {{1, 10, 11, 3}, 2, 1, 3, 4, padding::valid},
    {{1, 4, 5, 2}, 4, 5, 1, 1, padding::valid},
    {{1, 4, 5, 2}, 4, 5, 1, 1, padding::same},
    {{1, 1, 1, 1}, 1, 1, 1, 1, padding::valid},
    {{1, 1, 1, 3}, 2, 2, 2, 2, padding::same},
    {{0, 6, 6, 3}, 2, 2, 2, 2, padding::valid},
    {{1, 0, 6, 3}, 2, 2, 2, 2, padding::same},
    {{1, 6, 6, 0}, 3, 3, 2, 2, padding::same},
    {{1, 9, 8, 2}, 2, 3, 1, 2, padding::valid, 2, 3},
    {{2, 9, 8, 2}, 3, 2, 2, 1, padding::same, 2, 2},
    {{1, 7, 6, 3}, 3, 3, 2, 2, padding::explicit_, 1, 1, {1, 2, 0, 1}},
    {{2, 5, 5, 2}, 3, 2, 1, 2, padding::explicit_, 2, 1, {3, 1, 1, 0}},
    {{1, 7, 9, 2}, 3, 3, 2, 2, padding::valid, 1, 1, {}, true},
    {{1, 6, 6, 2}, 3, 3, 2, 2, padding::explicit_, 1, 1, {1, 1, 1, 1}, true},
    {{1, 5, 8, 2}, 2, 3, 3, 3, padding::explicit_, 1, 1, {1, 0, 2, 1}, true},
    {{1, 4, 4, 1}, 3, 3, 2, 2, padding::explicit_, 1, 1, {2, 1, 2, 2}, true},
    {{4, 32, 32, 16}, 3, 3, 2, 2, padding::same},
};

template <class Op, class T, class Device>
void check_pool2d(Device& device, double lo, double hi, bool count_include_pad = false) {
  std::uint64_t seed = 500;
  for (const data_format format : {data_format::nhwc, data_format::nchw}) {
    for (const auto& c : pool_cases) {
      Op op{.window_h = c.window_h, .window_w = c.window_w, .stride_h = c.stride_h, .stride_w = c.stride_w,
            .pad = c.pad, .dilation_h = c.dilation_h, .dilation_w = c.dilation_w, .pad_top = c.pads[0],
            .pad_bottom = c.pads[1], .pad_left = c.pads[2], .pad_right = c.pads[3], .format = format,
            .ceil_mode = c.ceil_mode};
      if constexpr (std::is_same_v<Op, tf::ops::avg_pool2d>) op.count_include_pad = count_include_pad;
      const tf::shape xs = image_shape(format, c.x[0], c.x[1], c.x[2], c.x[3]);
      INFO(Op::name << " " << tf::name_of(tf::dtype_of<T>) << ", " << tf::ops::name_of(format) << " input "
                    << xs.to_string() << ", window " << c.window_h << "x" << c.window_w << ", stride " << c.stride_h
                    << "x" << c.stride_w << ", dilation " << c.dilation_h << "x" << c.dilation_w << ", "
                    << tf::ops::name_of(c.pad) << " padding " << c.pads[0] << " " << c.pads[1] << " " << c.pads[2]
                    << " " << c.pads[3] << (c.ceil_mode ? ", ceil_mode" : "")
                    << (count_include_pad ? ", count_include_pad" : "") << ", values in [" << lo << ", " << hi
                    << "]");
      const tf::tensor x = random_tensor<T>(xs, seed++, lo, hi);
      auto y = tf::test::call<T>(device, op, x);
      REQUIRE(y.ok());
      tf::shape expected_shape;
      const auto expected = reference_pool2d(xs, as_doubles<T>(x), op, expected_shape);
      require_close<T>(*y, expected_shape, expected);
    }
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("pools match nested-loop references", "[pool]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("max f32") { check_pool2d<tf::ops::max_pool2d, float>(device, -2, 2); }
  SECTION("max f64") { check_pool2d<tf::ops::max_pool2d, double>(device, -2, 2); }
  SECTION("max i32") { check_pool2d<tf::ops::max_pool2d, std::int32_t>(device, -100, 100); }
  // All negative: a padded zero would win if max did not ignore the padding.
  SECTION("max f32, negative values") { check_pool2d<tf::ops::max_pool2d, float>(device, -5, -1); }
  SECTION("max i32, negative values") { check_pool2d<tf::ops::max_pool2d, std::int32_t>(device, -100, -1); }
  SECTION("max u8") { check_pool2d<tf::ops::max_pool2d, std::uint8_t>(device, 0, 255); }
  SECTION("max i8, negative values") { check_pool2d<tf::ops::max_pool2d, std::int8_t>(device, -128, -1); }
  SECTION("avg f32") { check_pool2d<tf::ops::avg_pool2d, float>(device, -2, 2); }
  SECTION("avg f64") { check_pool2d<tf::ops::avg_pool2d, double>(device, -2, 2); }
  // All positive: dividing border windows by the full window size would shrink them.
  SECTION("avg f64, positive values") { check_pool2d<tf::ops::avg_pool2d, double>(device, 1, 5); }
  // Dividing by the taps inside the padding as well: ONNX's and PyTorch's count_include_pad.
  SECTION("avg f64, count_include_pad") { check_pool2d<tf::ops::avg_pool2d, double>(device, 1, 5, true); }
}

TEMPLATE_LIST_TEST_CASE("avg_pool2d divides border windows by their real positions", "[pool]",
                        tf::test::device_policies) {
  // 3x3 window, stride 1, same padding on a 2x2 image of ones plus a ramp: every window covers
  // the whole image, so every output is the plain mean of the 4 values, not their sum / 9.
  auto device = tf::test::make_device<TestType>();
  const auto x = tf::tensor::from_values<float>({1.0f, 2.0f, 3.0f, 6.0f}, tf::shape{1, 2, 2, 1});
  REQUIRE(x.ok());
  const tf::ops::avg_pool2d op{.window_h = 3, .window_w = 3, .stride_h = 1, .stride_w = 1, .pad = padding::same};
  auto y = tf::test::call<float>(device, op, *x);
  REQUIRE(y.ok());
  require_close<float>(*y, tf::shape{1, 2, 2, 1}, {3, 3, 3, 3});
}

TEMPLATE_LIST_TEST_CASE("a pooling window whose dilated taps all miss the image", "[pool]", tf::test::device_policies) {
  // One row, a 2-tap window 2 apart, same padding: the taps are rows -1 and 1, both outside.
  auto device = tf::test::make_device<TestType>();
  for (const data_format format : {data_format::nhwc, data_format::nchw}) {
    const auto x = tf::tensor::from_values<float>({3.0f, 5.0f}, image_shape(format, 1, 1, 2, 1));
    REQUIRE(x.ok());
    const tf::ops::avg_pool2d avg{.window_h = 2, .window_w = 1, .stride_h = 1, .stride_w = 1, .pad = padding::same,
                                  .dilation_h = 2, .format = format};
    auto a = tf::test::call<float>(device, avg, *x);
    REQUIRE(a.ok());
    require_close<float>(*a, image_shape(format, 1, 1, 2, 1), {0, 0});
    const tf::ops::max_pool2d max{.window_h = 2, .window_w = 1, .stride_h = 1, .stride_w = 1, .pad = padding::same,
                                  .dilation_h = 2, .format = format};
    auto m = tf::test::call<float>(device, max, *x);
    REQUIRE(m.ok());
    CHECK(m->template unchecked_values<float>()[0] == -std::numeric_limits<float>::infinity());
    const auto xi = tf::tensor::from_values<std::int32_t>({3, 5}, image_shape(format, 1, 1, 2, 1));
    REQUIRE(xi.ok());
    auto mi = tf::test::call<std::int32_t>(device, max, *xi);
    REQUIRE(mi.ok());
    CHECK(mi->template unchecked_values<std::int32_t>()[1] == std::numeric_limits<std::int32_t>::lowest());
  }
}

TEST_CASE("padding arithmetic follows TensorFlow and ONNX", "[conv][static]") {
  using tf::ops::padding_before;
  using tf::ops::window_axis;
  constexpr auto out = [](std::int64_t in, window_axis a, padding pad) {
    return tf::ops::windowed_output_size(in, a, pad);
  };
  // same: ceil(in / stride), whatever the window.
  STATIC_REQUIRE(out(5, {.size = 3, .stride = 2}, padding::same) == 3);
  STATIC_REQUIRE(out(6, {.size = 3, .stride = 2}, padding::same) == 3);
  STATIC_REQUIRE(out(7, {.size = 9, .stride = 1, .dilation = 2}, padding::same) == 7);
  // valid: floor((in - extent) / stride) + 1, extent = (k - 1) * dilation + 1; 0 when the window does not fit.
  STATIC_REQUIRE(out(5, {.size = 3}, padding::valid) == 3);
  STATIC_REQUIRE(out(7, {.size = 3, .stride = 2}, padding::valid) == 3);
  STATIC_REQUIRE(out(8, {.size = 3, .stride = 2}, padding::valid) == 3);
  STATIC_REQUIRE(out(9, {.size = 3, .dilation = 2}, padding::valid) == 5);
  STATIC_REQUIRE(out(4, {.size = 3, .dilation = 2}, padding::valid) == 0);
  STATIC_REQUIRE(out(dyn, {.size = 3}, padding::valid) == dyn);
  STATIC_REQUIRE(out(5, {.size = dyn}, padding::valid) == dyn);
  STATIC_REQUIRE(out(5, {.size = dyn, .stride = 2}, padding::same) == 3);
  // valid ignores explicit pads; explicit counts them: (5 + 1 + 2 - 3) / 2 + 1 = 3.
  STATIC_REQUIRE(out(5, {.size = 3, .stride = 2, .before = 1, .after = 2}, padding::valid) == 2);
  STATIC_REQUIRE(out(5, {.size = 3, .stride = 2, .before = 1, .after = 2}, padding::explicit_) == 3);
  STATIC_REQUIRE(out(2, {.size = 4, .before = 3, .after = 3}, padding::explicit_) == 5);
  STATIC_REQUIRE(out(0, {.size = 1, .before = 3, .after = 3}, padding::explicit_) == 0);  // an empty image stays empty
  // ceil_mode: 7 rows, window 3, stride 2: (7 - 3) / 2 = 2 exactly, so 3 both ways; 8 rows: 3 or 4.
  STATIC_REQUIRE(out(7, {.size = 3, .stride = 2, .ceil = true}, padding::valid) == 3);
  STATIC_REQUIRE(out(8, {.size = 3, .stride = 2}, padding::valid) == 3);
  STATIC_REQUIRE(out(8, {.size = 3, .stride = 2, .ceil = true}, padding::valid) == 4);
  // The 4th window would start at padded row 6 = in + before: only padding after, so it is dropped.
  STATIC_REQUIRE(out(5, {.size = 2, .stride = 2, .before = 1, .after = 2, .ceil = true}, padding::explicit_) == 3);
  // Here the 4th starts at padded row 6 < in + before = 7, and is kept: floor gives 3.
  STATIC_REQUIRE(out(6, {.size = 3, .stride = 2, .before = 1, .after = 1}, padding::explicit_) == 3);
  STATIC_REQUIRE(out(6, {.size = 3, .stride = 2, .before = 1, .after = 1, .ceil = true}, padding::explicit_) == 4);
  // Padding before is half the total, rounded down: the odd one goes after.
  STATIC_REQUIRE(padding_before(5, 3, {.size = 3, .stride = 2}, padding::same) == 1);  // total 2
  STATIC_REQUIRE(padding_before(6, 3, {.size = 3, .stride = 2}, padding::same) == 0);  // total 1
  STATIC_REQUIRE(padding_before(6, 6, {.size = 4}, padding::same) == 1);               // total 3
  STATIC_REQUIRE(padding_before(9, 9, {.size = 3, .dilation = 2}, padding::same) == 2);  // dilated extent 5, total 4
  STATIC_REQUIRE(padding_before(10, 4, {.size = 2, .stride = 3}, padding::same) == 0);   // windows leave gaps: total 0
  STATIC_REQUIRE(padding_before(5, 3, {.size = 3}, padding::valid) == 0);
  STATIC_REQUIRE(padding_before(5, 3, {.size = 3, .before = 2}, padding::explicit_) == 2);
  STATIC_REQUIRE(tf::ops::effective_window(3, 2) == 5);
}

TEST_CASE("conv and pool shape inference at compile time", "[conv][pool][static]") {
  using tf::spec;
  using tf::static_shape;
  using images = spec<float, static_shape<dyn, 28, 28, 3>>;
  using filter = spec<float, static_shape<3, 3, 3, 16>>;
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{}, images, filter> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 26, 26, 16}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{.stride_h = 2, .stride_w = 2, .pad = padding::same}, images,
                                    filter> == tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 14, 14, 16}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{.dilation_h = 2, .dilation_w = 3}, images, filter> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 24, 22, 16}});
  // Unknown image sizes, channels and filter sizes propagate; same padding does not need the filter size.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{}, spec<double, static_shape<2, dyn, 10, dyn>>,
                                    spec<double, static_shape<3, dyn, 4, dyn>>> ==
                 tf::tensor_spec{tf::dtype::f64, tf::shape{2, dyn, dyn, dyn}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{.stride_h = 2, .stride_w = 3, .pad = padding::same},
                                    spec<float, static_shape<dyn, 9, 10, 3>>, spec<float, static_shape<dyn, dyn, 3, 8>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 5, 4, 8}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::max_pool2d{}, spec<float, static_shape<dyn, 28, 27, 8>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 14, 13, 8}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::max_pool2d{.pad = padding::same}, spec<std::int32_t, static_shape<dyn, 27, 27, 8>>> ==
                 tf::tensor_spec{tf::dtype::i32, tf::shape{dyn, 14, 14, 8}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::avg_pool2d{.window_h = 3, .window_w = 3, .stride_h = 2, .stride_w = 2,
                                                       .pad = padding::same},
                                    spec<double, static_shape<dyn, 7, dyn, 2>>> ==
                 tf::tensor_spec{tf::dtype::f64, tf::shape{dyn, 4, dyn, 2}});
  // What is certainly wrong is rejected at compile time too.
  STATIC_REQUIRE(!tf::infer(tf::ops::conv2d{}, std::array{tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 8, 8, 3}},
                                                          tf::tensor_spec{tf::dtype::f32, tf::shape{3, 3, 4, 8}}})
                      .ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::avg_pool2d{}, std::array{tf::tensor_spec{tf::dtype::i32, tf::shape{1, 4, 4, 1}}}).ok());
  // NCHW keeps the layout; explicit pads count; ceil_mode rounds up.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{.format = data_format::nchw}, spec<float, static_shape<dyn, 3, 28, 27>>,
                                    filter> == tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 16, 26, 25}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::conv2d{.pad = padding::explicit_, .pad_top = 1, .pad_bottom = 0,
                                                    .pad_left = 2, .pad_right = 2},
                                    images, filter> == tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 27, 30, 16}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::max_pool2d{.window_h = 3, .window_w = 3, .format = data_format::nchw,
                                                        .ceil_mode = true},
                                    spec<std::uint8_t, static_shape<2, 4, 8, 9>>> ==
                 tf::tensor_spec{tf::dtype::u8, tf::shape{2, 4, 4, 4}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::avg_pool2d{.pad = padding::explicit_, .pad_top = 1, .pad_bottom = 1,
                                                        .count_include_pad = true},
                                    spec<float, static_shape<1, 7, 8, 3>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{1, 4, 4, 3}});
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::conv2d, tf::cpu, double>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::conv2d, tf::thread_pool, float>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::max_pool2d, tf::cpu, std::int32_t>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::avg_pool2d, tf::cpu, std::int32_t>);
}

TEST_CASE("conv2d reports bad inputs and attributes", "[conv][errors]") {
  tf::cpu device;
  const auto code = tf::status_code::invalid_argument;
  const auto x = random_tensor<float>(tf::shape{1, 5, 5, 3}, 1);
  const auto f = random_tensor<float>(tf::shape{3, 3, 3, 4}, 2);
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, random_tensor<float>(tf::shape{5, 5, 3}, 3), f), code,
                "conv2d: input 0 (NHWC images) must have rank 4, got shape [5, 5, 3]");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{3, 3, 3, 4, 1}, 3)),
                code, "conv2d: input 1 (HWIO filter) must have rank 4, got shape [3, 3, 3, 4, 1]");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{3, 3, 2, 4}, 3)), code,
                "conv2d: input 0 has 3 channels but the filter expects 2 (input shape [1, 5, 5, 3], filter shape "
                "[3, 3, 2, 4])");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.stride_h = 0}, x, f), code,
                "conv2d: strides must be >= 1, got stride_h 0 and stride_w 1");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.stride_w = -2}, x, f), code,
                "conv2d: strides must be >= 1, got stride_h 1 and stride_w -2");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.dilation_w = 0}, x, f), code,
                "conv2d: dilations must be >= 1, got dilation_h 1 and dilation_w 0");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.pad = static_cast<padding>(7)}, x, f), code,
                "conv2d: invalid padding code 7");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{0, 3, 3, 4}, 3)), code,
                "conv2d: the filter's height and width must be >= 1, got filter shape [0, 3, 3, 4]");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{6, 3, 3, 4}, 3)), code,
                "conv2d: with valid padding the filter (6 x 3 after dilation) is larger than the input's 5 x 5 image");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.dilation_w = 3}, x, f), code,
                "conv2d: with valid padding the filter (3 x 7 after dilation) is larger than the input's 5 x 5 image");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.pad = padding::explicit_, .dilation_w = 4, .pad_left = 1}, x, f),
                code,
                "conv2d: with explicit padding the filter (3 x 9 after dilation) is larger than the input's 5 x 5 image "
                "with its padding (5 x 6), so the output would be empty (input shape [1, 5, 5, 3])");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.pad = padding::same, .pad_top = 1}, x, f), code,
                "conv2d: pad_top, pad_bottom, pad_left and pad_right are for explicit padding; with same padding they "
                "must be 0, got 1, 0, 0, 0");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.pad = padding::explicit_, .pad_right = -1}, x, f), code,
                "conv2d: explicit pads must be in [0, 2147483647], got pad_top 0, pad_bottom 0, pad_left 0 and "
                "pad_right -1");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.format = static_cast<data_format>(2)}, x, f), code,
                "conv2d: invalid data_format code 2");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.format = data_format::nchw}, x, f), code,
                "conv2d: input 0 has 5 channels but the filter expects 3 (input shape [1, 5, 5, 3], filter shape "
                "[3, 3, 3, 4])");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{.format = data_format::nchw},
                                random_tensor<float>(tf::shape{5, 5, 3}, 3), f),
                code, "conv2d: input 0 (NCHW images) must have rank 4, got shape [5, 5, 3]");
  // The same filters fit with same padding.
  REQUIRE(tf::test::call<float>(device, tf::ops::conv2d{.pad = padding::same, .dilation_w = 3}, x, f).ok());
  // dtypes: floating only, one dtype for both inputs, and the kernel's dtype must be input 0's.
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, random_tensor<std::int32_t>(tf::shape{1, 5, 5, 3}, 4),
                                       random_tensor<std::int32_t>(tf::shape{3, 3, 3, 4}, 5)),
                code, "conv2d: input dtype i32 is not supported");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, x, random_tensor<double>(tf::shape{3, 3, 3, 4}, 5)), code,
                "conv2d: all inputs must have one dtype, input 0 is f32 and input 1 is f64");
  require_error(tf::test::call<double>(device, tf::ops::conv2d{}, x, f), code,
                "conv2d: called with the kernel for f64 but input 0 has dtype f32");
  require_error(tf::test::call<float>(device, tf::ops::conv2d{}, x), code, "conv2d: expects 2 inputs, got 1");
}

TEST_CASE("pools report bad inputs and attributes", "[pool][errors]") {
  tf::cpu device;
  const auto code = tf::status_code::invalid_argument;
  const auto x = random_tensor<float>(tf::shape{1, 5, 6, 3}, 1);
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{}, random_tensor<float>(tf::shape{5, 6, 3}, 2)), code,
                "max_pool2d: input (NHWC images) must have rank 4, got shape [5, 6, 3]");
  require_error(tf::test::call<float>(device, tf::ops::avg_pool2d{.window_w = 0}, x), code,
                "avg_pool2d: windows must be >= 1, got window_h 2 and window_w 0");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{.stride_h = 0}, x), code,
                "max_pool2d: strides must be >= 1, got stride_h 0 and stride_w 2");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{.pad = static_cast<padding>(3)}, x), code,
                "max_pool2d: invalid padding code 3");
  require_error(tf::test::call<float>(device, tf::ops::avg_pool2d{.window_h = 6}, x), code,
                "avg_pool2d: with valid padding the window (6 x 2 after dilation) is larger than the input's 5 x 6 "
                "image, so the output would be empty (input shape [1, 5, 6, 3])");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{.window_w = 7}, x), code,
                "max_pool2d: with valid padding the window (2 x 7 after dilation) is larger than the input's 5 x 6 image");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{.dilation_h = 0}, x), code,
                "max_pool2d: dilations must be >= 1, got dilation_h 0 and dilation_w 1");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{.pad = padding::explicit_, .pad_top = 2}, x), code,
                "max_pool2d: explicit pads must be smaller than the window (2 x 2 after dilation), got pad_top 2, "
                "pad_bottom 0, pad_left 0 and pad_right 0: a window would lie wholly in the padding");
  require_error(tf::test::call<float>(device, tf::ops::avg_pool2d{.pad = padding::same, .ceil_mode = true}, x), code,
                "avg_pool2d: ceil_mode applies to valid and explicit padding, not to same");
  require_error(tf::test::call<float>(device, tf::ops::avg_pool2d{.pad = padding::valid, .pad_left = 1}, x), code,
                "avg_pool2d: pad_top, pad_bottom, pad_left and pad_right are for explicit padding; with valid "
                "padding they must be 0, got 0, 0, 1, 0");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{.format = data_format::nchw}, random_tensor<float>(tf::shape{1, 3, 1, 6}, 2)),
                code, "max_pool2d: with valid padding the window (2 x 2 after dilation) is larger than the input's 1 x 6 image");
  REQUIRE(tf::test::call<float>(device, tf::ops::max_pool2d{.window_w = 7, .pad = padding::same}, x).ok());
  require_error(tf::test::call<float>(device, tf::ops::avg_pool2d{}, random_tensor<std::int32_t>(tf::shape{1, 4, 4, 1}, 3)),
                code, "avg_pool2d: input dtype i32 is not supported");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{}, random_tensor<double>(tf::shape{1, 4, 4, 1}, 3)), code,
                "max_pool2d: called with the kernel for f32 but input 0 has dtype f64");
  require_error(tf::test::call<float>(device, tf::ops::max_pool2d{}, x, x), code, "max_pool2d: expects 1 input, got 2");
}
