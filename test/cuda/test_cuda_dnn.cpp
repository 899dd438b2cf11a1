// SPDX-License-Identifier: Apache-2.0
// Convolution (cuDNN), pooling, resize and top_k on a GPU against the CPU's kernels on random inputs:
// every padding, strides, dilations, both layouts, odd sizes, coordinate modes, ties; the fused bias and ReLU epilogues of the shim; the
// plan cache; a static CNN on cuda<0> against the CPU session; and the errors a user meets.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include <typeflow/cuda/dnn.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

#include "../unit/support.hpp"
#include "tensor_support.hpp"

namespace tf = typeflow;
using Catch::Matchers::Contains;
using tf::test::random_tensor;
using tf::test::require_close;
constexpr auto to = [](const tf::tensor& x, auto& from, auto& dest) { return tf::test::moved(x, from, dest); };
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

namespace {

tf::tensor value_of(tf::result<tf::tensor> r) {
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  return *r;
}


// op on x (and a filter) on the GPU against the CPU.
template <class Op>
void check_against_cpu(const Op& op, const tf::tensor& x, const tf::tensor* filter, double tol) {
  tf::cpu host;
  tf::cuda<0> g;
  auto want = filter ? tf::call<float>(host, op, x, *filter) : tf::call<float>(host, op, x);
  INFO(Op::name << " on " << x.shape().to_string() << ": " << want.status().to_string());
  REQUIRE(want.ok());
  const tf::tensor gx = to(x, host, g);
  auto got = filter ? tf::call<float, registry>(g, op, gx, to(*filter, host, g)) : tf::call<float, registry>(g, op, gx);
  INFO(got.status().to_string());
  REQUIRE(got.ok());
  require_close(to(*got, g, host), *want, tol);
}

} // namespace

TEST_CASE("pooling on cuda<0> matches the CPU kernels on random pools") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::int64_t> small(1, 3), image(1, 17), channels(1, 9);
  std::uniform_int_distribution<int> pad_kind(0, 2), coin(0, 1);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    tf::ops::max_pool2d mp{.window_h = small(rng), .window_w = small(rng), .stride_h = small(rng), .stride_w = small(rng),
                           .pad = static_cast<tf::ops::padding>(pad_kind(rng)),
                           .dilation_h = small(rng), .dilation_w = small(rng)};
    if (mp.pad == tf::ops::padding::explicit_) {  // smaller than the dilated window
      mp.pad_top = static_cast<std::int64_t>(rng() % static_cast<unsigned>((mp.window_h - 1) * mp.dilation_h + 1));
      mp.pad_bottom = static_cast<std::int64_t>(rng() % static_cast<unsigned>((mp.window_h - 1) * mp.dilation_h + 1));
      mp.pad_left = static_cast<std::int64_t>(rng() % static_cast<unsigned>((mp.window_w - 1) * mp.dilation_w + 1));
      mp.pad_right = static_cast<std::int64_t>(rng() % static_cast<unsigned>((mp.window_w - 1) * mp.dilation_w + 1));
    }
    mp.format = coin(rng) ? tf::ops::data_format::nchw : tf::ops::data_format::nhwc;
    if (mp.pad != tf::ops::padding::same) mp.ceil_mode = coin(rng) == 1;
    const tf::shape xs{small(rng), image(rng), image(rng), channels(rng)};
    const tf::shape shapes[] = {xs};
    if (!mp.infer_shape(shapes).ok()) continue;
    const auto x = random_tensor<float>(xs, static_cast<std::uint64_t>(trial));
    check_against_cpu(mp, x, nullptr, 0);
    const tf::ops::avg_pool2d ap{.window_h = mp.window_h, .window_w = mp.window_w, .stride_h = mp.stride_h,
                                 .stride_w = mp.stride_w, .pad = mp.pad, .dilation_h = mp.dilation_h,
                                 .dilation_w = mp.dilation_w, .pad_top = mp.pad_top, .pad_bottom = mp.pad_bottom,
                                 .pad_left = mp.pad_left, .pad_right = mp.pad_right, .format = mp.format,
                                 .ceil_mode = mp.ceil_mode, .count_include_pad = mp.pad == tf::ops::padding::explicit_ && coin(rng) == 1};
    check_against_cpu(ap, x, nullptr, 1e-5);
    ++checked;
  }
  CHECK(checked > 20);
}

TEST_CASE("conv2d on cuda<0> matches the CPU kernel on random convolutions") {
  std::mt19937 rng(4);
  std::uniform_int_distribution<std::int64_t> small(1, 3), image(1, 13), channels(1, 17);
  std::uniform_int_distribution<int> pad_kind(0, 2), coin(0, 1);
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    tf::ops::conv2d op{.stride_h = small(rng), .stride_w = small(rng), .pad = static_cast<tf::ops::padding>(pad_kind(rng)),
                       .dilation_h = small(rng), .dilation_w = small(rng)};
    if (op.pad == tf::ops::padding::explicit_) {
      op.pad_top = small(rng) - 1;
      op.pad_bottom = small(rng);
      op.pad_left = small(rng);
      op.pad_right = small(rng) - 1;
    }
    op.format = trial % 5 == 4 ? tf::ops::data_format::nchw : tf::ops::data_format::nhwc;
    const std::int64_t n = small(rng), h = image(rng), w = image(rng), c = channels(rng);
    const tf::shape xs = op.format == tf::ops::data_format::nchw ? tf::shape{n, c, h, w} : tf::shape{n, h, w, c};
    const tf::shape fs{small(rng) + coin(rng), small(rng), c, channels(rng)};
    const tf::shape shapes[] = {xs, fs};
    if (!op.infer_shape(shapes).ok()) continue;
    const auto x = random_tensor<float>(xs, 100 + static_cast<std::uint64_t>(trial));
    const auto f = random_tensor<float>(fs, 200 + static_cast<std::uint64_t>(trial));
    check_against_cpu(op, x, &f, 2e-4);
    ++checked;
  }
  CHECK(checked > 20);
}

TEST_CASE("resize and top_k on cuda<0> match the CPU kernels") {
  tf::cpu host;
  tf::cuda<0> g;
  const auto x = random_tensor<float>(tf::shape{2, 7, 5, 3}, 31);
  for (const auto method : {tf::ops::resize_method::nearest, tf::ops::resize_method::bilinear})
    for (const auto format : {tf::ops::data_format::nhwc, tf::ops::data_format::nchw}) {
      check_against_cpu(tf::ops::resize{.height = 11, .width = 4, .method = method, .format = format}, x, nullptr, 1e-5);
      check_against_cpu(tf::ops::resize{.scale_h = 0.5, .scale_w = 1.7, .method = method,
                                        .coordinates = tf::ops::resize_coordinates::align_corners, .format = format},
                        x, nullptr, 1e-5);
    }
  // Rows of ties: values in {-2, ..., 2}.
  auto ties = tf::tensor::allocate(tf::dtype::f32, tf::shape{37, 301});
  REQUIRE(ties.ok());
  std::mt19937 rng(5);
  for (float& v : ties->unchecked_values<float>()) v = static_cast<float>(static_cast<int>(rng() % 5) - 2);
  const tf::tensor gties = to(*ties, host, g);
  for (const bool sorted : {true, false})
    for (const std::int64_t k : {0, 1, 17, 301}) {
      const tf::ops::top_k op{.k = k, .sorted = sorted};
      auto want = tf::call<float>(host, op, *ties);
      auto got = tf::call<float, registry>(g, op, gties);
      INFO("top_k k = " << k << (sorted ? ", sorted: " : ", not sorted: ") << got.status().to_string());
      REQUIRE((want.ok() && got.ok()));
      const tf::tensor values = to((*got)[0], g, host), indices = to((*got)[1], g, host);
      CHECK(values.unchecked_values<float>().size() == (*want)[0].unchecked_values<float>().size());
      const auto wv = (*want)[0].unchecked_values<float>(), gv = values.unchecked_values<float>();
      const auto wi = (*want)[1].unchecked_values<std::int64_t>(), gi = indices.unchecked_values<std::int64_t>();
      for (std::size_t j = 0; j < wv.size(); ++j) REQUIRE((gv[j] == wv[j] && gi[j] == wi[j]));
    }
}

TEST_CASE("conv2d on cuda<0> in f16, and with no input channel, matches the CPU kernel") {
  tf::cpu host;
  tf::cuda<0> g;
  const tf::ops::conv2d op{.stride_h = 2, .pad = tf::ops::padding::same};
  const auto x = random_tensor<float>(tf::shape{2, 11, 9, 8}, 51), f = random_tensor<float>(tf::shape{3, 2, 8, 16}, 52);
  // The CPU has no f16 convolution: its f32 one on the f16-rounded inputs is the reference.
  const auto half = [&](const tf::tensor& t) { return value_of(tf::call<float>(host, tf::ops::cast{.to = tf::dtype::f16}, t)); };
  const auto wide = [&](const tf::tensor& t) { return value_of(tf::call<Eigen::half>(host, tf::ops::cast{.to = tf::dtype::f32}, t)); };
  auto want = tf::call<float>(host, op, wide(half(x)), wide(half(f)));
  REQUIRE(want.ok());
  auto got = tf::call<Eigen::half, registry>(g, op, to(half(x), host, g), to(half(f), host, g));
  INFO(got.status().to_string());
  REQUIRE(got.ok());
  const tf::tensor back = wide(to(*got, g, host));
  const auto gv = back.unchecked_values<float>(), wv = want->unchecked_values<float>();
  REQUIRE(gv.size() == wv.size());
  for (std::size_t i = 0; i < gv.size(); ++i) REQUIRE(gv[i] == Approx(wv[i]).epsilon(2e-3).margin(2e-2));
  // No input channel: every output is 0 on both devices.
  const auto empty_x = random_tensor<float>(tf::shape{1, 4, 4, 0}, 53), empty_f = random_tensor<float>(tf::shape{3, 3, 0, 5}, 54);
  check_against_cpu(tf::ops::conv2d{.pad = tf::ops::padding::same}, empty_x, &empty_f, 0);
}

TEST_CASE("the shim's convolution fuses the bias and ReLU, caches its plan, and checks its workspace") {
  tf::cpu host;
  tf::cuda<0> g;
  // [2, 9, 7, 16] x [3, 3, 16, 32], same padding
  const tf::ops::conv2d op{.pad = tf::ops::padding::same};
  const auto x = random_tensor<float>(tf::shape{2, 9, 7, 16}, 1), f = random_tensor<float>(tf::shape{3, 3, 16, 32}, 2);
  const auto b = random_tensor<float>(tf::shape{32}, 3);
  auto conv = tf::call<float>(host, op, x, f);
  REQUIRE(conv.ok());
  auto want = tf::call<float>(host, tf::ops::relu{}, *tf::call<float>(host, tf::ops::bias_add{}, *conv, b));
  REQUIRE(want.ok());
  const tf::tensor gx = to(x, host, g), gf = to(f, host, g), gb = to(b, host, g);
  auto gy = g.allocate(tf::dtype::f32, want->shape());
  REQUIRE(gy.ok());
  const std::int64_t xd[4] = {2, 9, 7, 16};
  auto p = tf::cuda_kernels::detail::conv2d_params_of(op, xd, gf, 9, 7, tf::gpu::elem::f32);
  p.x = gx.data();
  p.y = gy->data();
  p.bias = gb.data();
  auto biased = tf::call<float>(host, tf::ops::bias_add{}, *conv, b);
  REQUIRE(biased.ok());
  auto& streams = g.streams();
  for (const auto post : {tf::gpu::conv_epilogue::bias_relu, tf::gpu::conv_epilogue::bias}) {
    p.post = post;
    auto bytes = streams.conv2d_workspace(p, "conv2d");
    INFO(bytes.status().to_string());
    REQUIRE(bytes.ok());
    auto ws = g.allocate(tf::dtype::u8, tf::shape{static_cast<std::int64_t>(*bytes)});
    REQUIRE(ws.ok());
    auto too_small = streams.conv2d(p, ws->data(), *bytes - 1, "conv2d");
    REQUIRE(too_small.code() == tf::status_code::invalid_argument);
    CHECK_THAT(std::string(too_small.message()), Contains("fewer than the"));
    REQUIRE(streams.conv2d(p, ws->data(), *bytes, "conv2d").ok());
    require_close(to(*gy, g, host), post == tf::gpu::conv_epilogue::bias ? *biased : *want, 2e-4);
  }
}

TEST_CASE("a static CNN runs on cuda<0> as on the CPU") {
  using tf::static_shape;
  constexpr tf::ops::conv2d same{.pad = tf::ops::padding::same};
  constexpr auto x = tf::input<"x", float, static_shape<4, 12, 12, 3>>;
  constexpr auto k1 = tf::variable<"k1", float, static_shape<3, 3, 3, 8>>;
  constexpr auto c1 = tf::variable<"c1", float, static_shape<8>>;
  constexpr auto w2 = tf::variable<"w2", float, static_shape<288, 10>>;
  constexpr auto p1 = tf::apply<tf::ops::max_pool2d{}>(tf::relu(tf::apply<same>(x, k1) + c1));  // [4, 6, 6, 8]
  constexpr auto y = tf::softmax(tf::matmul(tf::reshape<tf::shape{4, 288}>(p1), w2));
  using g = decltype(tf::graph(y));
  const auto xt = random_tensor<float>(tf::shape{4, 12, 12, 3}, 21), k1t = random_tensor<float>(tf::shape{3, 3, 3, 8}, 22);
  const auto c1t = random_tensor<float>(tf::shape{8}, 23), w2t = random_tensor<float>(tf::shape{288, 10}, 24, -0.2, 0.2);
  tf::cpu host;
  tf::session<g, tf::cpu> reference(g{}, host);
  REQUIRE((reference.initialize(k1, k1t).ok() && reference.initialize(c1, c1t).ok() && reference.initialize(w2, w2t).ok()));
  auto want = reference.run(tf::feed(x, xt), tf::fetch(y));
  REQUIRE(want.ok());
  tf::cuda<0> gpu;
  tf::session<g, tf::cuda<0>, registry> on_gpu(g{}, gpu);
  REQUIRE((on_gpu.initialize(k1, k1t).ok() && on_gpu.initialize(c1, c1t).ok() && on_gpu.initialize(w2, w2t).ok()));
  for (int run = 0; run < 2; ++run) {
    auto got = on_gpu.run(tf::feed(x, xt), tf::fetch(y));
    INFO(got.status().to_string());
    REQUIRE(got.ok());
    require_close(std::get<0>(*got).untyped(), std::get<0>(*want).untyped(), 1e-4);
  }
}
