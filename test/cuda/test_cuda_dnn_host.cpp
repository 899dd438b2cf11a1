// SPDX-License-Identifier: Apache-2.0
// The GPU's convolution on any machine: the parameters the conv2d kernel derives from random ops
// (every padding, strides, dilations, both layouts' shapes) pass the launcher's checks, whose output
// size is the op's; cuDNN finalizes the operation graph of each (tensors, convolution, bias and
// ReLU epilogues), which needs no device; and each bad parameter has its message.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include <typeflow/cuda/dnn.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
namespace gpu = tf::gpu;
using Catch::Matchers::Contains;

namespace {

using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;
static_assert(registry::has_kernel<tf::ops::conv2d, tf::cuda<0>, float>);
static_assert(registry::has_kernel<tf::ops::conv2d, tf::cuda<1>, Eigen::half>);
static_assert(registry::has_kernel<tf::ops::conv2d, tf::cuda<0>, Eigen::bfloat16>);

void require_invalid(const gpu::conv2d_params& p, const std::string& text) {
  const tf::status s = gpu::validate(p);
  INFO(s.to_string());
  REQUIRE(s.code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(s.message()), Contains(text));
}

} // namespace

TEST_CASE("conv2d's GPU parameters agree with the op's output shape, and cuDNN finalizes their graphs") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::int64_t> small(1, 3), image(1, 9), channels(1, 6);
  std::uniform_int_distribution<int> pad_kind(0, 2), type_of(0, 2), post_of(0, 2);
  float dummy[1] = {};
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    tf::ops::conv2d op{.stride_h = small(rng), .stride_w = small(rng), .pad = static_cast<tf::ops::padding>(pad_kind(rng)),
                       .dilation_h = small(rng), .dilation_w = small(rng)};
    if (op.pad == tf::ops::padding::explicit_) {
      op.pad_top = small(rng) - 1;
      op.pad_bottom = small(rng) - 1;
      op.pad_left = small(rng) - 1;
      op.pad_right = small(rng) - 1;
    }
    const tf::shape xs{small(rng), image(rng), image(rng), channels(rng)};
    const tf::shape fs{small(rng), small(rng), xs[3], channels(rng)};
    const tf::shape shapes[] = {xs, fs};
    auto ys = op.infer_shape(shapes);
    if (!ys.ok()) continue;
    auto f = tf::tensor::allocate(tf::dtype::f32, fs);
    REQUIRE(f.ok());
    const std::int64_t xd[4] = {xs[0], xs[1], xs[2], xs[3]};
    gpu::conv2d_params p = tf::cuda_kernels::detail::conv2d_params_of(op, xd, *f, (*ys)[1], (*ys)[2],
                                                                      static_cast<gpu::elem>(type_of(rng)));
    p.x = p.bias = dummy;
    p.y = dummy;
    p.post = static_cast<gpu::conv_epilogue>(post_of(rng));
    INFO("trial " << trial << ": " << xs.to_string() << " x " << fs.to_string() << " -> " << ys->to_string()
                  << ", padding " << static_cast<int>(op.pad) << ", "
                  << gpu::to_string(p.type));
    const tf::status valid = gpu::validate(p);
    INFO(valid.to_string());
    REQUIRE(valid.ok());
    if ((*ys).num_elements() == 0) continue;
    const tf::status graph = gpu::check_conv2d_graph(p);
    INFO(graph.to_string());
    REQUIRE(graph.ok());
    ++checked;
  }
  CHECK(checked > 100);
}

TEST_CASE("the convolution launcher's parameters are checked before a device is touched") {
  float data[1] = {};
  // [1, 5, 5, 2] x [3, 3, 2, 4] -> [1, 5, 5, 4] with padding 1 on each side
  const gpu::conv2d_params good{.batch = 1, .height = 5, .width = 5, .in_channels = 2, .filter_h = 3, .filter_w = 3,
                                .out_channels = 4, .out_h = 5, .out_w = 5, .pad_top = 1, .pad_bottom = 1, .pad_left = 1,
                                .pad_right = 1, .x = data, .filter = data, .y = data};
  REQUIRE(gpu::validate(good).ok());
  auto p = good;
  p.type = gpu::elem::f64;
  require_invalid(p, "conv2d: dtype f64 is not supported by the GPU's convolution (f16, bf16, f32)");
  p = good;
  p.type = gpu::elem::f16;
  p.math = gpu::precision::tf32;
  require_invalid(p, "tf32 precision applies to f32 data, not f16");
  p = good;
  p.math = gpu::precision::bf16;
  require_invalid(p, "takes exact or tf32 precision");
  p = good;
  p.out_w = 4;
  require_invalid(p, "the output is 5 x 4 but the input 5 x 5 with this filter, stride, dilation and padding gives 5 x 5");
  p = good;
  p.stride_h = 0;
  require_invalid(p, "strides 0 x 1 and dilations 1 x 1 must be >= 1");
  p = good;
  p.pad_left = -1;
  require_invalid(p, "padding must be >= 0");
  p = good;
  p.filter_w = 0;
  require_invalid(p, "the filter is 3 x 0");
  p = good;
  p.in_channels = -2;
  require_invalid(p, "the input has a negative dimension");
  p = good;
  p.filter = nullptr;
  require_invalid(p, "the filter is null");
  p = good;
  p.post = gpu::conv_epilogue::bias_relu;
  require_invalid(p, "the epilogue adds a bias but the bias is null");
  p = good;
  p.post = static_cast<gpu::conv_epilogue>(7);
  require_invalid(p, "invalid epilogue code 7");
  // No input channel: the input and the filter are empty and may have no memory; the output of zeros has.
  p = good;
  p.in_channels = 0;
  p.x = p.filter = nullptr;
  CHECK(gpu::validate(p).ok());
  p.y = nullptr;
  require_invalid(p, "the output is null");
  // The graph check runs the same checks first.
  p = good;
  p.out_h = 9;
  CHECK(gpu::check_conv2d_graph(p).code() == tf::status_code::invalid_argument);
}
