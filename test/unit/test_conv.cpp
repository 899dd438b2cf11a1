// SPDX-License-Identifier: Apache-2.0
// conv2d, max_pool2d and avg_pool2d: every op x dtype against nested-loop references (double
// precision, TensorFlow's padding arithmetic written out again here) on random inputs, on both
// host policies; the padding helpers and shape inference at compile time; run-time errors.
#include "support.hpp"

#include <algorithm>
#include <limits>

namespace tf = typeflow;
using tf::dyn;
using tf::ops::padding;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;
using tf::test::require_error;

namespace {

// One spatial dimension as TensorFlow computes it: output positions and padding before.
struct window_1d {
  std::int64_t out, pad_before;
};

window_1d tf_window(std::int64_t in, std::int64_t size, std::int64_t stride, std::int64_t dilation, padding pad) {
  const std::int64_t extent = (size - 1) * dilation + 1;
  if (pad == padding::valid) return {in >= extent ? (in - extent) / stride + 1 : 0, 0};
  const std::int64_t out = (in + stride - 1) / stride;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + extent - in, 0);
  return {out, out > 0 ? total / 2 : 0};
}

// y[b, i, j, o] = sum over (di, dj, c) of x[b, i*sh + di*dh - top, j*sw + dj*dw - left, c] * f[di, dj, c, o].
std::vector<double> reference_conv2d(const tf::tensor& x_t, const tf::tensor& f_t, const std::vector<double>& x,
                                     const std::vector<double>& f, const tf::ops::conv2d& op, tf::shape& out_shape) {
  const std::int64_t n = x_t.dim(0), h = x_t.dim(1), w = x_t.dim(2), c = x_t.dim(3);
  const std::int64_t kh = f_t.dim(0), kw = f_t.dim(1), k = f_t.dim(3);
  const auto wy = tf_window(h, kh, op.stride_h, op.dilation_h, op.pad);
  const auto wx = tf_window(w, kw, op.stride_w, op.dilation_w, op.pad);
  out_shape = tf::shape{n, wy.out, wx.out, k};
  std::vector<double> y;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < wy.out; ++i)
      for (std::int64_t j = 0; j < wx.out; ++j)
        for (std::int64_t o = 0; o < k; ++o) {
          double sum = 0;
          for (std::int64_t di = 0; di < kh; ++di)
            for (std::int64_t dj = 0; dj < kw; ++dj) {
              const std::int64_t iy = i * op.stride_h + di * op.dilation_h - wy.pad_before;
              const std::int64_t ix = j * op.stride_w + dj * op.dilation_w - wx.pad_before;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (std::int64_t ci = 0; ci < c; ++ci)
                sum += x[static_cast<std::size_t>(((b * h + iy) * w + ix) * c + ci)] *
                       f[static_cast<std::size_t>(((di * kw + dj) * c + ci) * k + o)];
            }
          y.push_back(sum);
        }
  return y;
}

struct conv_case {
  tf::shape x, f;
  tf::ops::conv2d op;
};

// Padding modes, strides 1/2/3, dilations, 1x1 filters (the pointwise GEMM and the strided
// path), a filter as large as the image, c_in = 1, batches, odd and even sizes, size 0 and 1,
// and cases large enough to need several im2col chunks and to split over threads.
const std::vector<conv_case> conv_cases = {
    {{1, 5, 5, 3}, {3, 3, 3, 4}, {}},
    {{1, 5, 5, 3}, {3, 3, 3, 4}, {.pad = padding::same}},
    {{2, 7, 9, 3}, {3, 3, 3, 5}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
    {{2, 8, 6, 3}, {3, 3, 3, 5}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
    {{2, 7, 9, 3}, {3, 3, 3, 5}, {.stride_h = 2, .stride_w = 2}},
    {{1, 11, 10, 2}, {2, 3, 2, 3}, {.stride_h = 3, .stride_w = 2}},
    {{1, 11, 10, 2}, {2, 3, 2, 3}, {.stride_h = 3, .stride_w = 3, .pad = padding::same}},
    {{1, 9, 8, 4}, {3, 3, 4, 2}, {.dilation_h = 2, .dilation_w = 2}},
    {{2, 9, 8, 4}, {3, 3, 4, 2}, {.pad = padding::same, .dilation_h = 2, .dilation_w = 3}},
    {{1, 10, 11, 2}, {3, 2, 2, 3}, {.stride_h = 2, .stride_w = 3, .pad = padding::same, .dilation_h = 2}},
    {{1, 6, 7, 3}, {2, 2, 3, 2}, {.pad = padding::same}},  // even filter: the extra pad goes after
    {{1, 6, 7, 3}, {4, 4, 3, 2}, {.pad = padding::same}},
    {{2, 6, 5, 7}, {1, 1, 7, 3}, {}},
    {{2, 6, 5, 7}, {1, 1, 7, 3}, {.pad = padding::same, .dilation_h = 2}},
    {{2, 6, 5, 7}, {1, 1, 7, 3}, {.stride_h = 2, .stride_w = 2, .pad = padding::same}},
    {{2, 4, 5, 3}, {4, 5, 3, 6}, {}},
    {{2, 4, 5, 3}, {4, 5, 3, 6}, {.pad = padding::same}},
    {{3, 8, 8, 1}, {3, 3, 1, 2}, {.pad = padding::same}},
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
    {{1, 1, 1, 3}, {3, 3, 3, 2}, {.pad = padding::same}},
    {{0, 5, 5, 3}, {3, 3, 3, 4}, {.pad = padding::same}},
    {{1, 0, 5, 3}, {3, 3, 3, 4}, {.pad = padding::same}},
    {{1, 0, 5, 3}, {3, 3, 3, 4}, {}},
    {{1, 5, 5, 3}, {3, 3, 3, 0}, {.pad = padding::same}},
    {{1, 4, 4, 0}, {3, 3, 0, 2}, {.pad = padding::same}},
    {{1, 4, 4, 0}, {1, 1, 0, 2}, {}},
    {{2, 40, 40, 32}, {3, 3, 32, 16}, {.pad = padding::same}},
    {{3, 33, 31, 16}, {3, 3, 16, 8}, {.stride_h = 1, .stride_w = 2}},
    {{4, 32, 32, 8}, {1, 1, 8, 4}, {}},
};

template <class T, class Device>
void check_conv2d(Device& device, double tol) {
  std::uint64_t seed = 100;
  for (const auto& c : conv_cases) {
    INFO("conv2d " << tf::name_of(tf::dtype_of<T>) << ", input " << c.x.to_string() << ", filter "
                   << c.f.to_string() << ", stride " << c.op.stride_h << "x" << c.op.stride_w << ", dilation "
                   << c.op.dilation_h << "x" << c.op.dilation_w << ", " << tf::ops::name_of(c.op.pad));
    const tf::tensor x = random_tensor<T>(c.x, seed++);
    const tf::tensor f = random_tensor<T>(c.f, seed++);
    auto y = tf::call<T>(device, c.op, x, f);
    REQUIRE(y.ok());
    tf::shape expected_shape;
    const auto expected = reference_conv2d(x, f, as_doubles<T>(x), as_doubles<T>(f), c.op, expected_shape);
    require_close<T>(*y, expected_shape, expected, tol);
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("conv2d matches a nested-loop reference", "[conv]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  // Sums of up to 288 products of values in [-2, 2]: f32 rounding stays well under 1e-4 relative.
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
  auto y = tf::call<float>(device, tf::ops::conv2d{}, *x, *f);
  REQUIRE(y.ok());
  require_close<float>(*y, tf::shape{1, 2, 2, 1}, {45, 54, 81, 90});
  // Same padding, stride 2 on 4x4: total padding 1, all of it after, so the first window is
  // rows 0-2 and columns 0-2 and the last is cut by the border.
  auto z = tf::call<float>(device, tf::ops::conv2d{.stride_h = 2, .stride_w = 2, .pad = padding::same}, *x, *f);
  REQUIRE(z.ok());
  require_close<float>(*z, tf::shape{1, 2, 2, 1}, {45, 39, 66, 50});
}

namespace {

// TensorFlow's pools: the max or the mean of the window positions inside the image.
template <class Op>
std::vector<double> reference_pool2d(const tf::tensor& x_t, const std::vector<double>& x, const Op& op,
                                     tf::shape& out_shape) {
  const std::int64_t n = x_t.dim(0), h = x_t.dim(1), w = x_t.dim(2), c = x_t.dim(3);
  const auto wy = tf_window(h, op.window_h, op.stride_h, 1, op.pad);
  const auto wx = tf_window(w, op.window_w, op.stride_w, 1, op.pad);
  out_shape = tf::shape{n, wy.out, wx.out, c};
  std::vector<double> y;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < wy.out; ++i)
      for (std::int64_t j = 0; j < wx.out; ++j)
        for (std::int64_t ci = 0; ci < c; ++ci) {
          double max = -std::numeric_limits<double>::infinity(), sum = 0;
          int count = 0;
          for (std::int64_t di = 0; di < op.window_h; ++di)
            for (std::int64_t dj = 0; dj < op.window_w; ++dj) {
              const std::int64_t iy = i * op.stride_h + di - wy.pad_before;
              const std::int64_t ix = j * op.stride_w + dj - wx.pad_before;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double v = x[static_cast<std::size_t>(((b * h + iy) * w + ix) * c + ci)];
              max = std::max(max, v);
              sum += v;
              ++count;
            }
          y.push_back(std::is_same_v<Op, tf::ops::max_pool2d> ? max : sum / count);
        }
  return y;
}

struct pool_case {
  tf::shape x;
  std::int64_t window_h, window_w, stride_h, stride_w;
  padding pad;
};

// Default 2x2/2, odd sizes that drop a border, same padding (border windows partly outside),
// overlapping windows (stride < window), gaps (stride > window), size 0 and 1, and a case
// large enough to split over threads.
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
    {{4, 32, 32, 16}, 3, 3, 2, 2, padding::same},
};

template <class Op, class T, class Device>
void check_pool2d(Device& device, double lo, double hi) {
  std::uint64_t seed = 500;
  for (const auto& c : pool_cases) {
    const Op op{.window_h = c.window_h, .window_w = c.window_w, .stride_h = c.stride_h, .stride_w = c.stride_w,
                .pad = c.pad};
    INFO(Op::name << " " << tf::name_of(tf::dtype_of<T>) << ", input " << c.x.to_string() << ", window "
                  << c.window_h << "x" << c.window_w << ", stride " << c.stride_h << "x" << c.stride_w << ", "
                  << tf::ops::name_of(c.pad) << ", values in [" << lo << ", " << hi << "]");
    const tf::tensor x = random_tensor<T>(c.x, seed++, lo, hi);
    auto y = tf::call<T>(device, op, x);
    REQUIRE(y.ok());
    tf::shape expected_shape;
    const auto expected = reference_pool2d(x, as_doubles<T>(x), op, expected_shape);
    require_close<T>(*y, expected_shape, expected);
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
  SECTION("avg f32") { check_pool2d<tf::ops::avg_pool2d, float>(device, -2, 2); }
  SECTION("avg f64") { check_pool2d<tf::ops::avg_pool2d, double>(device, -2, 2); }
  // All positive: dividing border windows by the full window size would shrink them.
  SECTION("avg f64, positive values") { check_pool2d<tf::ops::avg_pool2d, double>(device, 1, 5); }
}

TEMPLATE_LIST_TEST_CASE("avg_pool2d divides border windows by their real positions", "[pool]",
                        tf::test::device_policies) {
  // 3x3 window, stride 1, same padding on a 2x2 image of ones plus a ramp: every window covers
  // the whole image, so every output is the plain mean of the 4 values, not their sum / 9.
  auto device = tf::test::make_device<TestType>();
  const auto x = tf::tensor::from_values<float>({1.0f, 2.0f, 3.0f, 6.0f}, tf::shape{1, 2, 2, 1});
  REQUIRE(x.ok());
  const tf::ops::avg_pool2d op{.window_h = 3, .window_w = 3, .stride_h = 1, .stride_w = 1, .pad = padding::same};
  auto y = tf::call<float>(device, op, *x);
  REQUIRE(y.ok());
  require_close<float>(*y, tf::shape{1, 2, 2, 1}, {3, 3, 3, 3});
}

TEST_CASE("padding arithmetic follows TensorFlow", "[conv][static]") {
  using tf::ops::padding_before;
  using tf::ops::windowed_output_size;
  // same: ceil(in / stride), whatever the window.
  STATIC_REQUIRE(windowed_output_size(5, 3, 2, 1, padding::same) == 3);
  STATIC_REQUIRE(windowed_output_size(6, 3, 2, 1, padding::same) == 3);
  STATIC_REQUIRE(windowed_output_size(7, 9, 1, 2, padding::same) == 7);
  // valid: ceil((in - (k - 1) * dilation) / stride); 0 when the window does not fit.
  STATIC_REQUIRE(windowed_output_size(5, 3, 1, 1, padding::valid) == 3);
  STATIC_REQUIRE(windowed_output_size(7, 3, 2, 1, padding::valid) == 3);
  STATIC_REQUIRE(windowed_output_size(8, 3, 2, 1, padding::valid) == 3);
  STATIC_REQUIRE(windowed_output_size(9, 3, 1, 2, padding::valid) == 5);
  STATIC_REQUIRE(windowed_output_size(4, 3, 1, 2, padding::valid) == 0);
  STATIC_REQUIRE(windowed_output_size(dyn, 3, 1, 1, padding::valid) == dyn);
  STATIC_REQUIRE(windowed_output_size(5, dyn, 1, 1, padding::valid) == dyn);
  STATIC_REQUIRE(windowed_output_size(5, dyn, 2, 1, padding::same) == 3);
  // Padding before is half the total, rounded down: the odd one goes after.
  STATIC_REQUIRE(padding_before(5, 3, 3, 2, 1, padding::same) == 1);  // total 2
  STATIC_REQUIRE(padding_before(6, 3, 3, 2, 1, padding::same) == 0);  // total 1
  STATIC_REQUIRE(padding_before(6, 6, 4, 1, 1, padding::same) == 1);  // total 3
  STATIC_REQUIRE(padding_before(9, 9, 3, 1, 2, padding::same) == 2);  // dilated extent 5, total 4
  STATIC_REQUIRE(padding_before(10, 4, 2, 3, 1, padding::same) == 0);  // windows leave gaps: total 0
  STATIC_REQUIRE(padding_before(5, 3, 3, 1, 1, padding::valid) == 0);
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
  require_error(tf::call<float>(device, tf::ops::conv2d{}, random_tensor<float>(tf::shape{5, 5, 3}, 3), f), code,
                "conv2d: input 0 (NHWC images) must have rank 4, got shape [5, 5, 3]");
  require_error(tf::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{3, 3, 3, 4, 1}, 3)),
                code, "conv2d: input 1 (HWIO filter) must have rank 4, got shape [3, 3, 3, 4, 1]");
  require_error(tf::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{3, 3, 2, 4}, 3)), code,
                "conv2d: input 0 has 3 channels but the filter expects 2 (input shape [1, 5, 5, 3], filter shape "
                "[3, 3, 2, 4])");
  require_error(tf::call<float>(device, tf::ops::conv2d{.stride_h = 0}, x, f), code,
                "conv2d: strides must be >= 1, got stride_h 0 and stride_w 1");
  require_error(tf::call<float>(device, tf::ops::conv2d{.stride_w = -2}, x, f), code,
                "conv2d: strides must be >= 1, got stride_h 1 and stride_w -2");
  require_error(tf::call<float>(device, tf::ops::conv2d{.dilation_w = 0}, x, f), code,
                "conv2d: dilations must be >= 1, got dilation_h 1 and dilation_w 0");
  require_error(tf::call<float>(device, tf::ops::conv2d{.pad = static_cast<padding>(7)}, x, f), code,
                "conv2d: invalid padding code 7");
  require_error(tf::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{0, 3, 3, 4}, 3)), code,
                "conv2d: the filter's height and width must be >= 1, got filter shape [0, 3, 3, 4]");
  require_error(tf::call<float>(device, tf::ops::conv2d{}, x, random_tensor<float>(tf::shape{6, 3, 3, 4}, 3)), code,
                "conv2d: with valid padding the filter (6 x 3 after dilation) is larger than the input's 5 x 5 image");
  require_error(tf::call<float>(device, tf::ops::conv2d{.dilation_w = 3}, x, f), code,
                "conv2d: with valid padding the filter (3 x 7 after dilation) is larger than the input's 5 x 5 image");
  // The same filters fit with same padding.
  REQUIRE(tf::call<float>(device, tf::ops::conv2d{.pad = padding::same, .dilation_w = 3}, x, f).ok());
  // dtypes: floating only, one dtype for both inputs, and the kernel's dtype must be input 0's.
  require_error(tf::call<float>(device, tf::ops::conv2d{}, random_tensor<std::int32_t>(tf::shape{1, 5, 5, 3}, 4),
                                       random_tensor<std::int32_t>(tf::shape{3, 3, 3, 4}, 5)),
                code, "conv2d: input dtype i32 is not supported");
  require_error(tf::call<float>(device, tf::ops::conv2d{}, x, random_tensor<double>(tf::shape{3, 3, 3, 4}, 5)), code,
                "conv2d: all inputs must have one dtype, input 0 is f32 and input 1 is f64");
  require_error(tf::call<double>(device, tf::ops::conv2d{}, x, f), code,
                "conv2d: called with the kernel for f64 but input 0 has dtype f32");
  require_error(tf::call<float>(device, tf::ops::conv2d{}, x), code, "conv2d: expects 2 inputs, got 1");
}

TEST_CASE("pools report bad inputs and attributes", "[pool][errors]") {
  tf::cpu device;
  const auto code = tf::status_code::invalid_argument;
  const auto x = random_tensor<float>(tf::shape{1, 5, 6, 3}, 1);
  require_error(tf::call<float>(device, tf::ops::max_pool2d{}, random_tensor<float>(tf::shape{5, 6, 3}, 2)), code,
                "max_pool2d: input (NHWC images) must have rank 4, got shape [5, 6, 3]");
  require_error(tf::call<float>(device, tf::ops::avg_pool2d{.window_w = 0}, x), code,
                "avg_pool2d: windows must be >= 1, got window_h 2 and window_w 0");
  require_error(tf::call<float>(device, tf::ops::max_pool2d{.stride_h = 0}, x), code,
                "max_pool2d: strides must be >= 1, got stride_h 0 and stride_w 2");
  require_error(tf::call<float>(device, tf::ops::max_pool2d{.pad = static_cast<padding>(3)}, x), code,
                "max_pool2d: invalid padding code 3");
  require_error(tf::call<float>(device, tf::ops::avg_pool2d{.window_h = 6}, x), code,
                "avg_pool2d: with valid padding the 6 x 2 window is larger than the input's 5 x 6 image, so the "
                "output would be empty (input shape [1, 5, 6, 3])");
  require_error(tf::call<float>(device, tf::ops::max_pool2d{.window_w = 7}, x), code,
                "max_pool2d: with valid padding the 2 x 7 window is larger than the input's 5 x 6 image");
  REQUIRE(tf::call<float>(device, tf::ops::max_pool2d{.window_w = 7, .pad = padding::same}, x).ok());
  require_error(tf::call<float>(device, tf::ops::avg_pool2d{}, random_tensor<std::int32_t>(tf::shape{1, 4, 4, 1}, 3)),
                code, "avg_pool2d: input dtype i32 is not supported");
  require_error(tf::call<float>(device, tf::ops::max_pool2d{}, random_tensor<double>(tf::shape{1, 4, 4, 1}, 3)), code,
                "max_pool2d: called with the kernel for f32 but input 0 has dtype f64");
  require_error(tf::call<float>(device, tf::ops::max_pool2d{}, x, x), code, "max_pool2d: expects 1 input, got 2");
}
