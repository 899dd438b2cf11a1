// SPDX-License-Identifier: Apache-2.0
// resize: every method x coordinate mode x rounding against a nested-loop reference (double
// precision, ONNX's definitions written out again here) on random NHWC and NCHW images, up and
// down, by sizes, by scales and by both, on both host policies; small cases worked by hand from
// ONNX's and TensorFlow's documented outputs; shape inference at compile time; attributes by
// name; every error.
#include "support.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace tf = typeflow;
using tf::dyn;
using tf::ops::data_format;
using tf::ops::nearest_rounding;
using tf::ops::resize_coordinates;
using tf::ops::resize_method;
using tf::test::as_doubles;
using tf::test::random_tensor;
using tf::test::require_close;
using tf::test::require_error;

namespace {

// Where output position x of an axis reads from, as ONNX's Resize defines it. The resized
// length is in * scale when the scale is given (unrounded), else the output's length.
double reference_source(resize_coordinates mode, std::int64_t x, std::int64_t in, std::int64_t out, double scale_attr) {
  const double scale = scale_attr > 0 ? scale_attr : static_cast<double>(out) / static_cast<double>(in);
  const double length = scale_attr > 0 ? static_cast<double>(in) * scale_attr : static_cast<double>(out);
  const double xd = static_cast<double>(x);
  switch (mode) {
    case resize_coordinates::half_pixel: return (xd + 0.5) / scale - 0.5;
    case resize_coordinates::pytorch_half_pixel: return length > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case resize_coordinates::align_corners: return length == 1 ? 0.0 : xd * static_cast<double>(in - 1) / (length - 1);
    case resize_coordinates::asymmetric: return xd / scale;
  }
  return std::nan("");
}

// The pixel nearest reads: v rounded, then clamped to the axis.
std::int64_t reference_nearest(nearest_rounding r, double v, std::int64_t in) {
  const bool half = v - std::floor(v) == 0.5;
  double rounded = 0;
  switch (r) {
    case nearest_rounding::round_prefer_floor: rounded = half ? std::floor(v) : std::round(v); break;
    case nearest_rounding::round_prefer_ceil: rounded = half ? std::ceil(v) : std::round(v); break;
    case nearest_rounding::floor: rounded = std::floor(v); break;
    case nearest_rounding::ceil: rounded = std::ceil(v); break;
  }
  return std::clamp(static_cast<std::int64_t>(rounded), std::int64_t{0}, in - 1);
}

// A bilinear tap: the two pixels around v (clamped to the axis) and the weight of the second.
struct tap {
  std::int64_t i0, i1;
  double t;
};
tap reference_tap(double v, std::int64_t in) {
  const double c = std::clamp(v, 0.0, static_cast<double>(in - 1));
  const auto i0 = static_cast<std::int64_t>(std::floor(c));
  return {i0, std::min(i0 + 1, in - 1), c - std::floor(c)};
}

// The output's length along an axis: the size when given, else floor(in * scale).
std::int64_t reference_length(std::int64_t in, std::int64_t size, double scale) {
  return size > 0 ? size : static_cast<std::int64_t>(std::floor(static_cast<double>(in) * scale));
}

// The resized image, in the layout of `op`, and its shape.
std::vector<double> reference_resize(const tf::shape& xs, const std::vector<double>& x, const tf::ops::resize& op,
                                     tf::shape& out_shape) {
  const bool nchw = op.format == data_format::nchw;
  const std::int64_t n = xs[0], c = nchw ? xs[1] : xs[3], h = nchw ? xs[2] : xs[1], w = nchw ? xs[3] : xs[2];
  const std::int64_t oh = reference_length(h, op.height, op.scale_h), ow = reference_length(w, op.width, op.scale_w);
  out_shape = nchw ? tf::shape{n, c, oh, ow} : tf::shape{n, oh, ow, c};
  const auto at = [&](std::int64_t b, std::int64_t ch, std::int64_t i, std::int64_t j) {
    return x[static_cast<std::size_t>(nchw ? ((b * c + ch) * h + i) * w + j : ((b * h + i) * w + j) * c + ch)];
  };
  std::vector<double> y(static_cast<std::size_t>(n * c * oh * ow));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          const double vy = reference_source(op.coordinates, i, h, oh, op.scale_h);
          const double vx = reference_source(op.coordinates, j, w, ow, op.scale_w);
          double v = 0;
          if (op.method == resize_method::nearest) {
            v = at(b, ch, reference_nearest(op.rounding, vy, h), reference_nearest(op.rounding, vx, w));
          } else {
            const tap ty = reference_tap(vy, h), tx = reference_tap(vx, w);
            const double top = (1 - tx.t) * at(b, ch, ty.i0, tx.i0) + tx.t * at(b, ch, ty.i0, tx.i1);
            const double bottom = (1 - tx.t) * at(b, ch, ty.i1, tx.i0) + tx.t * at(b, ch, ty.i1, tx.i1);
            v = (1 - ty.t) * top + ty.t * bottom;
          }
          const std::int64_t k = nchw ? ((b * c + ch) * oh + i) * ow + j : ((b * oh + i) * ow + j) * c + ch;
          y[static_cast<std::size_t>(k)] = v;
        }
  return y;
}

// An image given as [n, h, w, c], resized to height x width (0: by the scale) and by scale_h x
// scale_w (0: by the size).
struct resize_case {
  tf::shape nhwc;
  std::int64_t height, width;
  double scale_h, scale_w;
};

// Up and down by sizes, by integer and non-integer scales, by both (the size is the output, the
// scale maps coordinates), 1x1 inputs and outputs, the identity, one channel (NHWC then lies as
// NCHW), empty batches, heights and channels, and a case large enough to split over threads.
const std::vector<resize_case> resize_cases = {
    {{1, 4, 4, 1}, 8, 8, 0, 0},
    {{2, 5, 7, 3}, 0, 0, 2, 2},
    {{2, 5, 7, 3}, 0, 0, 0.6, 0.45},
    {{1, 6, 9, 2}, 4, 4, 0, 0},
    {{1, 3, 4, 5}, 0, 0, 1.7, 2.5},
    {{1, 5, 5, 2}, 7, 3, 1.5, 0.5},
    {{1, 6, 4, 3}, 0, 9, 0.75, 0},
    {{1, 1, 1, 3}, 3, 4, 0, 0},
    {{2, 4, 6, 3}, 1, 1, 0, 0},
    {{1, 7, 3, 1}, 1, 5, 0, 0},
    {{1, 4, 4, 2}, 0, 0, 1, 1},
    {{1, 9, 3, 2}, 0, 0, 1.333, 0.35},
    {{0, 4, 4, 2}, 0, 0, 2, 2},
    {{1, 0, 4, 2}, 0, 3, 2, 0},
    {{1, 4, 4, 0}, 6, 6, 0, 0},
    {{3, 33, 31, 8}, 50, 17, 0, 0},
};

constexpr resize_coordinates all_coordinates[] = {resize_coordinates::half_pixel, resize_coordinates::pytorch_half_pixel,
                                                  resize_coordinates::align_corners, resize_coordinates::asymmetric};
constexpr nearest_rounding all_roundings[] = {nearest_rounding::round_prefer_floor, nearest_rounding::round_prefer_ceil,
                                              nearest_rounding::floor, nearest_rounding::ceil};

template <class T, class Device>
void check_resize(Device& device, resize_method method, double lo, double hi) {
  std::uint64_t seed = 900;
  for (const auto& c : resize_cases)
    for (const auto format : {data_format::nhwc, data_format::nchw})
      for (const auto coordinates : all_coordinates)
        for (const auto rounding : all_roundings) {
          if (method == resize_method::bilinear && rounding != nearest_rounding::round_prefer_floor) continue;
          const tf::ops::resize op{.height = c.height, .width = c.width, .scale_h = c.scale_h, .scale_w = c.scale_w,
                                   .method = method, .coordinates = coordinates, .rounding = rounding, .format = format};
          const tf::shape xs = format == data_format::nchw ? tf::shape{c.nhwc[0], c.nhwc[3], c.nhwc[1], c.nhwc[2]} : c.nhwc;
          INFO("resize " << tf::name_of(tf::dtype_of<T>) << " " << tf::ops::name_of(method) << " "
                         << tf::ops::name_of(coordinates) << " " << tf::ops::name_of(rounding) << " "
                         << tf::ops::name_of(format) << ", input " << xs.to_string() << ", size " << c.height << "x"
                         << c.width << ", scale " << c.scale_h << "x" << c.scale_w);
          const tf::tensor x = random_tensor<T>(xs, seed++, lo, hi);
          auto y = tf::test::call<T>(device, op, x);
          REQUIRE(y.ok());
          tf::shape expected_shape;
          const auto expected = reference_resize(xs, as_doubles<T>(x), op, expected_shape);
          require_close<T>(*y, expected_shape, expected);
        }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("resize matches a nested-loop reference", "[resize]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("nearest f32") { check_resize<float>(device, resize_method::nearest, -2, 2); }
  SECTION("nearest f64") { check_resize<double>(device, resize_method::nearest, -2, 2); }
  SECTION("nearest u8") { check_resize<std::uint8_t>(device, resize_method::nearest, 0, 255); }
  SECTION("nearest i8") { check_resize<std::int8_t>(device, resize_method::nearest, -128, 127); }
  SECTION("nearest i32") { check_resize<std::int32_t>(device, resize_method::nearest, -1000, 1000); }
  SECTION("nearest i64") { check_resize<std::int64_t>(device, resize_method::nearest, -100000, 100000); }
  SECTION("nearest f16") { check_resize<Eigen::half>(device, resize_method::nearest, -2, 2); }
  // Weights in float: a few roundings of values in [-2, 2], well within 1e-5.
  SECTION("bilinear f32") { check_resize<float>(device, resize_method::bilinear, -2, 2); }
  SECTION("bilinear f64") { check_resize<double>(device, resize_method::bilinear, -2, 2); }
  // In float, rounded once to the half type at the end.
  SECTION("bilinear f16") { check_resize<Eigen::half>(device, resize_method::bilinear, -2, 2); }
  SECTION("bilinear bf16") { check_resize<Eigen::bfloat16>(device, resize_method::bilinear, -2, 2); }
}

TEMPLATE_LIST_TEST_CASE("resize gives ONNX's and TensorFlow's documented outputs", "[resize]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const auto image = [](std::vector<float> v, tf::shape s) {
    auto t = tf::tensor::from_values<float>(v, s);
    REQUIRE(t.ok());
    return *t;
  };
  const auto run = [&](const tf::ops::resize& op, const tf::tensor& x) {
    auto y = tf::test::call<float>(device, op, x);
    REQUIRE(y.ok());
    return *y;
  };
  const tf::tensor x22 = image({1, 2, 3, 4}, tf::shape{1, 2, 2, 1});

  // ONNX's upsample_scales_linear, 2x2 to 4x4 bilinear half_pixel: scale 2, so output x reads
  // (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to 0, 0.25, 0.75, 1: the row [1, 2]
  // becomes [1, 1.25, 1.75, 2], and the rows blend the same way.
  require_close<float>(run({.height = 4, .width = 4}, x22), tf::shape{1, 4, 4, 1},
                       {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // The same by scales, in NCHW.
  const tf::tensor x22_nchw = image({1, 2, 3, 4}, tf::shape{1, 1, 2, 2});
  require_close<float>(run({.scale_h = 2, .scale_w = 2, .format = data_format::nchw}, x22_nchw), tf::shape{1, 1, 4, 4},
                       {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // ONNX's upsample_scales_linear_align_corners: x * (2 - 1) / (4 - 1) = 0, 1/3, 2/3, 1.
  require_close<float>(run({.scale_h = 2, .scale_w = 2, .coordinates = resize_coordinates::align_corners}, x22),
                       tf::shape{1, 4, 4, 1},
                       {1, 4.0 / 3, 5.0 / 3, 2, 5.0 / 3, 2, 7.0 / 3, 8.0 / 3, 7.0 / 3, 8.0 / 3, 3, 10.0 / 3, 3, 10.0 / 3,
                        11.0 / 3, 4});
  // TensorFlow's tf.image.resize (bilinear, half-pixel centres) of [[6, 7], [11, 12]] to 4x4.
  require_close<float>(run({.height = 4, .width = 4}, image({6, 7, 11, 12}, tf::shape{1, 2, 2, 1})), tf::shape{1, 4, 4, 1},
                       {6, 6.25, 6.75, 7, 7.25, 7.5, 8, 8.25, 9.75, 10, 10.5, 10.75, 11, 11.25, 11.75, 12});

  const tf::tensor x24 = image({1, 2, 3, 4, 5, 6, 7, 8}, tf::shape{1, 2, 4, 1});
  // ONNX's downsample_scales_linear, scale 0.6 of 2x4: 1x2 pixels (floor(1.2), floor(2.4)) reading
  // y = 0.5 / 0.6 - 0.5 = 1/3 and x = 1/3, 2: rows 1 + 1/3 = 4/3 and 3, 5 + 1/3 and 7, blended a
  // third of the way: 4/3 + 4/3 = 8/3, 3 + 4/3 = 13/3.
  require_close<float>(run({.scale_h = 0.6, .scale_w = 0.6}, x24), tf::shape{1, 1, 2, 1}, {8.0 / 3, 13.0 / 3});
  // ONNX's downsample_scales_linear_align_corners: the scale makes the resized length 4 * 0.6 =
  // 2.4, not 2, so x = 1 reads 1 * 3 / 1.4 = 2.142857 (value 3.142857); y = 0 reads 0.
  require_close<float>(run({.scale_h = 0.6, .scale_w = 0.6, .coordinates = resize_coordinates::align_corners}, x24),
                       tf::shape{1, 1, 2, 1}, {1, 1 + 3 / 1.4});
  // Sizes alone align the corners of the 2 output pixels: x = 1 reads 3 (TensorFlow 1's align_corners).
  require_close<float>(run({.height = 1, .width = 2, .coordinates = resize_coordinates::align_corners}, x24),
                       tf::shape{1, 1, 2, 1}, {1, 4});
  // ONNX's downsample_scales_nearest: y = 1/3 rounds to 0, x = 1/3 and 2 to 0 and 2.
  const tf::ops::resize nearest{.method = resize_method::nearest};
  auto by_scales = nearest;
  by_scales.scale_h = by_scales.scale_w = 0.6;
  require_close<float>(run(by_scales, x24), tf::shape{1, 1, 2, 1}, {1, 3});

  // ONNX's upsample_scales_nearest, scales 2 and 3 of [[1, 2], [3, 4]]: x reads
  // (x + 0.5) / 3 - 0.5 = -1/3, 0, 1/3, 2/3, 1, 4/3, which round to 0, 0, 0, 1, 1, 1.
  auto by_2_3 = nearest;
  by_2_3.scale_h = 2;
  by_2_3.scale_w = 3;
  require_close<float>(run(by_2_3, x22), tf::shape{1, 4, 6, 1},
                       {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // [1, 2, 3, 4] to width 8, asymmetric: x reads x / 2 = 0, 0.5, 1, ..., 3.5. round_prefer_floor
  // and floor take the halves down, round_prefer_ceil and ceil up, where 3.5 clamps to 3.
  const tf::tensor row = image({1, 2, 3, 4}, tf::shape{1, 1, 4, 1});
  for (const auto& [rounding, expected] : std::vector<std::pair<nearest_rounding, std::vector<double>>>{
           {nearest_rounding::round_prefer_floor, {1, 1, 2, 2, 3, 3, 4, 4}},
           {nearest_rounding::round_prefer_ceil, {1, 2, 2, 3, 3, 4, 4, 4}},
           {nearest_rounding::floor, {1, 1, 2, 2, 3, 3, 4, 4}},
           {nearest_rounding::ceil, {1, 2, 2, 3, 3, 4, 4, 4}}}) {
    auto op = nearest;
    op.height = 1;
    op.width = 8;
    op.coordinates = resize_coordinates::asymmetric;
    op.rounding = rounding;
    INFO(tf::ops::name_of(rounding));
    require_close<float>(run(op, row), tf::shape{1, 1, 8, 1}, expected);
  }
  // pytorch_half_pixel to one pixel reads position 0; half_pixel reads the middle.
  require_close<float>(run({.height = 1, .width = 1, .coordinates = resize_coordinates::pytorch_half_pixel}, x22),
                       tf::shape{1, 1, 1, 1}, {1});
  require_close<float>(run({.height = 1, .width = 1}, x22), tf::shape{1, 1, 1, 1}, {2.5});
}

TEST_CASE("resize shape inference at compile time", "[resize][static]") {
  using tf::spec;
  using tf::static_shape;
  using tf::tensor_spec;
  using tf::dtype;
  // Sizes, scales (floor of in * scale), both, and NCHW.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::resize{.height = 224, .width = 112},
                                    spec<float, static_shape<dyn, 32, 48, 3>>> ==
                 tensor_spec{dtype::f32, tf::shape{dyn, 224, 112, 3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::resize{.scale_h = 2, .scale_w = 0.6},
                                    spec<double, static_shape<2, 5, 9, 4>>> ==
                 tensor_spec{dtype::f64, tf::shape{2, 10, 5, 4}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::resize{.height = 3, .scale_h = 0.5, .scale_w = 1.5},
                                    spec<float, static_shape<1, 7, 7, 1>>> ==
                 tensor_spec{dtype::f32, tf::shape{1, 3, 10, 1}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::resize{.width = 5, .scale_h = 2, .scale_w = 2, .format = data_format::nchw},
                                    spec<float, static_shape<dyn, 3, 8, 9>>> ==
                 tensor_spec{dtype::f32, tf::shape{dyn, 3, 16, 5}});
  // An unknown height stays unknown by scale, and is the size when one is given.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::resize{.width = 6, .scale_h = 2}, spec<float, static_shape<1, dyn, dyn, 3>>> ==
                 tensor_spec{dtype::f32, tf::shape{1, dyn, 6, 3}});
  // nearest takes integers; an empty image resized by scale stays empty.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::resize{.scale_h = 3, .scale_w = 3, .method = resize_method::nearest},
                                    spec<std::uint8_t, static_shape<1, 0, 2, 3>>> ==
                 tensor_spec{dtype::u8, tf::shape{1, 0, 6, 3}});
  // Errors are found at compile time too, with the run-time message (numbers to 6 decimals).
  constexpr auto image = std::array{tensor_spec{dtype::f32, tf::shape{1, 5, 5, 3}}};
  constexpr auto int_image = std::array{tensor_spec{dtype::i32, tf::shape{1, 5, 5, 3}}};
  STATIC_REQUIRE(!tf::infer(tf::ops::resize{.height = 2}, image).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::resize{.height = 4, .width = 4}, int_image).ok());
  STATIC_REQUIRE(tf::infer(tf::ops::resize{.height = 4, .width = 4, .method = resize_method::nearest}, int_image).ok());
  STATIC_REQUIRE(tf::infer(tf::ops::resize{.scale_h = 0.15, .scale_w = 2}, image).status().message() ==
                 "resize: scale_h 0.15 of the input's height 5 makes an output height of 0 (input shape [1, 5, 5, 3])");
  STATIC_REQUIRE(tf::infer(tf::ops::resize{.height = 4, .scale_w = -2.5}, image).status().message() ==
                 "resize: scale_w must be finite and >= 0 (0 takes it from width), got -2.5");
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::resize, tf::cpu, std::uint8_t>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::resize, tf::thread_pool, double>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::resize, tf::cpu, std::int64_t>);
  STATIC_REQUIRE(!tf::default_registry::has_kernel<tf::ops::resize, tf::cpu, bool>);
}

TEST_CASE("resize's attributes by name", "[resize]") {
  auto op = tf::from_attrs<tf::ops::resize>(tf::attr_map{{"height", 8}, {"scale_w", 1.5}, {"method", "nearest"},
                                                         {"coordinates", "align_corners"}, {"nearest_mode", "ceil"},
                                                         {"data_format", "NCHW"}});
  REQUIRE(op.ok());
  CHECK(*op == tf::ops::resize{.height = 8, .scale_w = 1.5, .method = resize_method::nearest,
                               .coordinates = resize_coordinates::align_corners, .rounding = nearest_rounding::ceil,
                               .format = data_format::nchw});
  CHECK(*tf::from_attrs<tf::ops::resize>(tf::to_attrs(*op)) == *op);
  CHECK(tf::to_attrs(tf::ops::resize{}).find("coordinates")->to_string() == "\"half_pixel\"");
  CHECK(tf::op_with<tf::ops::resize>(tf::attr<"width">(3), tf::attr<"nearest_mode">("round_prefer_ceil")) ==
        tf::ops::resize{.width = 3, .rounding = nearest_rounding::round_prefer_ceil});
  CHECK(tf::from_attrs<tf::ops::resize>(tf::attr_map{{"method", "bicubic"}}).status().message() ==
        "op resize: attribute 'method' must be one of \"nearest\", \"bilinear\", got \"bicubic\"");
  CHECK(tf::from_attrs<tf::ops::resize>(tf::attr_map{{"coordinates", "tf_crop_and_resize"}}).status().message() ==
        "op resize: attribute 'coordinates' must be one of \"half_pixel\", \"pytorch_half_pixel\", \"align_corners\", "
        "\"asymmetric\", got \"tf_crop_and_resize\"");
  CHECK(tf::from_attrs<tf::ops::resize>(tf::attr_map{{"rounding", "floor"}}).status().message() ==
        "op resize has no attribute 'rounding'; it takes: height, width, scale_h, scale_w, method, coordinates, "
        "nearest_mode, data_format");
}

TEST_CASE("resize reports bad inputs and attributes", "[resize][errors]") {
  tf::cpu device;
  const auto code = tf::status_code::invalid_argument;
  const auto x = random_tensor<float>(tf::shape{1, 5, 6, 3}, 1);
  const auto run = [&](const tf::ops::resize& op, const tf::tensor& t) { return tf::test::call<float>(device, op, t); };
  const tf::ops::resize to_2x2{.height = 2, .width = 2};
  require_error(run(to_2x2, random_tensor<float>(tf::shape{5, 6, 3}, 2)), code,
                "resize: input (NHWC images) must have rank 4, got shape [5, 6, 3]");
  auto nchw = to_2x2;
  nchw.format = data_format::nchw;
  require_error(run(nchw, random_tensor<float>(tf::shape{1, 1, 5, 6, 3}, 2)), code,
                "resize: input (NCHW images) must have rank 4, got shape [1, 1, 5, 6, 3]");
  // Sizes and scales.
  require_error(run({.height = -2, .width = 2}, x), code, "resize: height must be >= 0 (0 takes it from scale_h), got -2");
  require_error(run({.height = 2, .width = -1, .scale_w = 2}, x), code,
                "resize: width must be >= 0 (0 takes it from scale_w), got -1");
  require_error(run({.height = 2}, x), code,
                "resize: neither width nor scale_w is given (both are 0); give the output's width, the scale, or both");
  require_error(run({.width = 2}, x), code, "resize: neither height nor scale_h is given");
  require_error(run({.width = 2, .scale_h = std::nan("")}, x), code,
                "resize: scale_h must be finite and >= 0 (0 takes it from height), got nan");
  require_error(run({.height = 2, .scale_w = HUGE_VAL}, x), code,
                "resize: scale_w must be finite and >= 0 (0 takes it from width), got inf");
  require_error(run({.height = 2, .scale_h = -0.5, .scale_w = 2}, x), code,
                "resize: scale_h must be finite and >= 0 (0 takes it from height), got -0.5");
  require_error(run({.scale_h = 0.1, .scale_w = 2}, x), code,
                "resize: scale_h 0.1 of the input's height 5 makes an output height of 0 (input shape [1, 5, 6, 3])");
  require_error(run({.scale_h = 1e300, .scale_w = 2}, x), code,
                "resize: scale_h 1e+300 of the input's height 5 makes an output height past 1152921504606846975");
  require_error(run({.height = 4, .width = 4}, random_tensor<float>(tf::shape{1, 0, 6, 3}, 2)), code,
                "resize: the input's height is 0 (input shape [1, 0, 6, 3]); an empty image cannot be resized to height 4");
  // An empty batch may shrink an axis to nothing.
  REQUIRE(run({.scale_h = 0.1, .scale_w = 2}, random_tensor<float>(tf::shape{0, 5, 6, 3}, 2)).ok());
  // dtypes: bilinear takes floating point only, nearest any number but bool.
  require_error(tf::test::call<std::int32_t>(device, to_2x2, random_tensor<std::int32_t>(tf::shape{1, 5, 6, 3}, 3)), code,
                "resize: method bilinear needs a floating-point input (f16, bf16, f32, f64), got i32; nearest takes any "
                "numeric dtype");
  require_error(tf::test::call<std::uint8_t>(device, tf::ops::resize{.height = 2, .width = 2, .method = resize_method::nearest},
                                       random_tensor<bool>(tf::shape{1, 5, 6, 3}, 3)),
                code, "resize: input dtype bool is not supported; expected a numeric dtype");
  require_error(tf::test::call<double>(device, to_2x2, x), code,
                "resize: called with the kernel for f64 but input 0 has dtype f32");
  // Codes outside the enums.
  auto bad = to_2x2;
  bad.method = static_cast<resize_method>(5);
  require_error(run(bad, x), code, "resize: invalid method code 5");
  bad = to_2x2;
  bad.coordinates = static_cast<resize_coordinates>(4);
  require_error(run(bad, x), code, "resize: invalid coordinates code 4");
  bad = to_2x2;
  bad.rounding = static_cast<nearest_rounding>(9);
  require_error(run(bad, x), code, "resize: invalid nearest_mode code 9");
  bad = to_2x2;
  bad.format = static_cast<data_format>(2);
  require_error(run(bad, x), code, "resize: invalid data_format code 2");
  require_error(tf::test::call<float>(device, to_2x2, x, x), code, "resize: expects 1 input, got 2");
}
