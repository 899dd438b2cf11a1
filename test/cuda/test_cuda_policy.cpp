// SPDX-License-Identifier: Apache-2.0
// The cuda<0> device policy on a GPU: eager calls against the CPU's kernels on random inputs, a
// static graph run on the GPU alone and split between the CPU and the GPU, and the errors a user meets
// (a host tensor given to the GPU, integer division by zero found on the device).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <vector>

#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

#include "../unit/support.hpp"
#include "tensor_support.hpp"

namespace tf = typeflow;
using Catch::Matchers::Contains;
using tf::test::random_tensor;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

namespace {

tf::tensor on_gpu(const tf::tensor& x, tf::cpu& host, tf::cuda<0>& g) { return tf::test::moved(x, host, g); }
tf::tensor on_host(const tf::tensor& x, tf::cuda<0>& g, tf::cpu& host) { return tf::test::moved(x, g, host); }
using tf::test::require_close;

} // namespace

TEST_CASE("eager calls on cuda<0> match the CPU kernels") {
  tf::cpu host;
  tf::cuda<0> g;
  REQUIRE(g.available().ok());
  const auto a = random_tensor<float>(tf::shape{3, 8, 16}, 1);
  const auto b = random_tensor<float>(tf::shape{16}, 2);
  const auto w = random_tensor<float>(tf::shape{16, 5}, 3);
  const auto ga = on_gpu(a, host, g), gb = on_gpu(b, host, g), gw = on_gpu(w, host, g);

  const auto check = [&](auto op, auto&&... inputs_pairs) {
    auto want = tf::call<float>(host, op, inputs_pairs.first...);
    auto got = tf::call<float, registry>(g, op, inputs_pairs.second...);
    INFO(op.name << ": " << got.status().to_string());
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    CHECK(got->space() == g.space());
    require_close(on_host(*got, g, host), *want, 2e-5);
  };
  check(tf::ops::add{}, std::pair{a, ga}, std::pair{b, gb});
  check(tf::ops::mul{}, std::pair{a, ga}, std::pair{a, ga});
  check(tf::ops::tanh{}, std::pair{a, ga});
  check(tf::ops::gelu{.approximate = true}, std::pair{a, ga});
  check(tf::ops::matmul{}, std::pair{a, ga}, std::pair{w, gw});
  check(tf::ops::reduce_sum{.axes = {1}}, std::pair{a, ga});
  check(tf::ops::reduce_max{.axes = {0, 2}, .keep_dims = true}, std::pair{a, ga});
  check(tf::ops::softmax{.axis = -1}, std::pair{a, ga});
  check(tf::ops::log_softmax{.axis = 1}, std::pair{a, ga});
  check(tf::ops::bias_add{}, std::pair{a, ga}, std::pair{b, gb});
  const auto scale = random_tensor<float>(tf::shape{8, 16}, 4), offset = random_tensor<float>(tf::shape{8, 16}, 5);
  check(tf::ops::layer_norm{.axis = 1}, std::pair{a, ga}, std::pair{scale, on_gpu(scale, host, g)},
        std::pair{offset, on_gpu(offset, host, g)});
  const auto variance = random_tensor<float>(tf::shape{16}, 6, 0.5, 2.0);
  check(tf::ops::batch_norm{}, std::pair{a, ga}, std::pair{b, gb}, std::pair{b, gb}, std::pair{b, gb},
        std::pair{variance, on_gpu(variance, host, g)});
  REQUIRE(g.synchronize().ok());
}

TEST_CASE("an attention block runs on cuda<0> as on the CPU") {
  using tf::static_shape;
  // [8 tokens, 16] -> layer norm -> q, k, v -> 2 heads of 8 -> softmax(q k^T) v -> back to [8, 16] -> gelu
  constexpr auto x = tf::input<"x", float, static_shape<8, 16>>;
  constexpr auto gamma = tf::variable<"gamma", float, static_shape<16>>;
  constexpr auto beta = tf::variable<"beta", float, static_shape<16>>;
  constexpr auto wq = tf::variable<"wq", float, static_shape<16, 16>>;
  constexpr auto wk = tf::variable<"wk", float, static_shape<16, 16>>;
  constexpr auto wv = tf::variable<"wv", float, static_shape<16, 16>>;
  constexpr auto n = tf::apply<tf::ops::layer_norm{.axis = -1}>(x, gamma, beta);
  constexpr auto heads = [](auto t) {
    return tf::apply<tf::ops::transpose{.perm = {1, 0, 2}}>(tf::reshape<tf::shape{8, 2, 8}>(t));
  };
  constexpr auto q = heads(tf::matmul(n, wq));
  constexpr auto k = heads(tf::matmul(n, wk));
  constexpr auto v = heads(tf::matmul(n, wv));
  constexpr auto attention = tf::matmul(tf::softmax(tf::apply<tf::ops::matmul{.transpose_b = true}>(q, k)), v);
  constexpr auto y = tf::gelu(tf::reshape<tf::shape{8, 16}>(tf::apply<tf::ops::transpose{.perm = {1, 0, 2}}>(attention)));
  using g = decltype(tf::graph(y));

  tf::cpu host;
  tf::cuda<0> gpu;
  tf::session<g, tf::cpu> reference(g{}, host);
  tf::session<g, tf::cuda<0>, registry> on_gpu_only(g{}, gpu);
  const auto xt = random_tensor<float>(tf::shape{8, 16}, 31);
  const auto init = [&](auto& s) {
    std::uint64_t sd = 32;  // the same weights in both sessions
    REQUIRE(s.initialize(gamma, random_tensor<float>(tf::shape{16}, sd++)).ok());
    REQUIRE(s.initialize(beta, random_tensor<float>(tf::shape{16}, sd++)).ok());
    REQUIRE(s.initialize(wq, random_tensor<float>(tf::shape{16, 16}, sd++, -0.5, 0.5)).ok());
    REQUIRE(s.initialize(wk, random_tensor<float>(tf::shape{16, 16}, sd++, -0.5, 0.5)).ok());
    REQUIRE(s.initialize(wv, random_tensor<float>(tf::shape{16, 16}, sd++, -0.5, 0.5)).ok());
  };
  init(reference);
  init(on_gpu_only);
  auto want = reference.run(tf::feed(x, xt), tf::fetch(y));
  auto got = on_gpu_only.run(tf::feed(x, xt), tf::fetch(y));
  INFO(got.status().to_string());
  REQUIRE((want.ok() && got.ok()));
  require_close(std::get<0>(*got).untyped(), std::get<0>(*want).untyped(), 1e-4);
}

TEST_CASE("an eager GPU call copies host inputs in, a kernel given a host tensor says so, integer division by zero is a status") {
  tf::cpu host;
  tf::cuda<0> g;
  const auto a = random_tensor<float>(tf::shape{4}, 1);
  auto r = tf::call<float, registry>(g, tf::ops::relu{}, a);
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  CHECK(r->space() == g.space());
  require_close(on_host(*r, g, host), *tf::call<float>(host, tf::ops::relu{}, a), 0);
  // A kernel launched with a host tensor (what no executor does) refuses it.
  auto out = g.allocate(tf::dtype::f32, tf::shape{4});
  REQUIRE(out.ok());
  std::array<tf::tensor, 1> outputs{*out};
  tf::kernel_context<tf::cuda<0>> ctx{g, std::span<const tf::tensor>(&a, 1), outputs};
  const tf::status s = tf::cuda_kernels::cuda_unary_kernel<tf::ops::relu, tf::cuda<0>, float>::compute(tf::ops::relu{}, ctx);
  CHECK(s.code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(s.message()), Contains("relu: input 0 is in host memory") && Contains("copy it there first"));

  auto x = tf::tensor::filled<std::int32_t>(tf::shape{3}, 6);
  auto zero = tf::tensor::filled<std::int32_t>(tf::shape{3}, 0);
  REQUIRE((x.ok() && zero.ok()));
  auto d = tf::call<std::int32_t, registry>(g, tf::ops::div{}, on_gpu(*x, host, g), on_gpu(*zero, host, g));
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(std::string(d.status().message()), Contains("div: division by zero in input 1"));
}

TEST_CASE("a static MLP runs on cuda<0> alone, and split between the CPU and the GPU, as on the CPU") {
  using tf::static_shape;
  constexpr auto x = tf::input<"x", float, static_shape<8, 32>>;
  constexpr auto w1 = tf::variable<"w1", float, static_shape<32, 64>>;
  constexpr auto b1 = tf::variable<"b1", float, static_shape<64>>;
  constexpr auto w2 = tf::variable<"w2", float, static_shape<64, 10>>;
  constexpr auto y = tf::softmax(tf::matmul(tf::relu(tf::matmul(x, w1) + b1), w2));
  using g = decltype(tf::graph(y));

  const auto xt = random_tensor<float>(tf::shape{8, 32}, 11);
  const auto w1t = random_tensor<float>(tf::shape{32, 64}, 12), b1t = random_tensor<float>(tf::shape{64}, 13);
  const auto w2t = random_tensor<float>(tf::shape{64, 10}, 14);

  tf::cpu host;
  tf::session<g, tf::cpu> reference(g{}, host);
  REQUIRE((reference.initialize(w1, w1t).ok() && reference.initialize(b1, b1t).ok() && reference.initialize(w2, w2t).ok()));
  auto want = reference.run(tf::feed(x, xt), tf::fetch(y));
  REQUIRE(want.ok());

  tf::cuda<0> gpu;
  tf::session<g, tf::cuda<0>, registry, false> on_gpu_only(g{}, gpu);
  REQUIRE((on_gpu_only.initialize(w1, w1t).ok() && on_gpu_only.initialize(b1, b1t).ok() &&
           on_gpu_only.initialize(w2, w2t).ok()));
  for (int run = 0; run < 3; ++run) {
    auto got = on_gpu_only.run(tf::feed(x, xt), tf::fetch(y));
    INFO(got.status().to_string());
    REQUIRE(got.ok());
    CHECK(std::get<0>(*got).untyped().space().host_accessible());
    require_close(std::get<0>(*got).untyped(), std::get<0>(*want).untyped(), 1e-5);
  }

  // The hidden layer on the GPU, the rest on the CPU: transfers both ways.
  constexpr auto hidden = tf::on<tf::cuda<0>>(tf::relu(tf::matmul(x, w1) + b1));
  constexpr auto z = tf::softmax(tf::matmul(hidden, w2));
  using split = decltype(tf::graph(z));
  tf::session<split, tf::device_group<tf::cpu, tf::cuda<0>>, registry, false> mixed(split{}, tf::device_group(host, gpu));
  REQUIRE((mixed.initialize(w1, w1t).ok() && mixed.initialize(b1, b1t).ok() && mixed.initialize(w2, w2t).ok()));
  auto got = mixed.run(tf::feed(x, xt), tf::fetch(z));
  INFO(got.status().to_string());
  REQUIRE(got.ok());
  require_close(std::get<0>(*got).untyped(), std::get<0>(*want).untyped(), 1e-5);
}

TEST_CASE("array ops on cuda<0> match the CPU kernels; an index outside gather's axis is a status") {
  tf::cpu host;
  tf::cuda<0> g;
  const auto a = random_tensor<float>(tf::shape{4, 5, 6}, 21);
  const auto b = random_tensor<float>(tf::shape{4, 2, 6}, 22);
  const auto ga = on_gpu(a, host, g), gb = on_gpu(b, host, g);
  const auto compare = [&](auto op, const std::vector<std::pair<tf::tensor, tf::tensor>>& inputs) {
    std::vector<tf::tensor> cpu_in, gpu_in;
    for (const auto& [c, d] : inputs) {
      cpu_in.push_back(c);
      gpu_in.push_back(d);
    }
    auto want = tf::call<float>(host, op, std::span<const tf::tensor>(cpu_in));
    auto got = tf::call<float, registry>(g, op, std::span<const tf::tensor>(gpu_in));
    INFO(op.name << ": " << got.status().to_string());
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    const tf::tensor back = on_host(*got, g, host);
    const tf::tensor& expected = *want;
    REQUIRE(back.spec() == expected.spec());
    const auto gv = back.unchecked_values<float>(), wv = expected.unchecked_values<float>();
    for (std::size_t i = 0; i < gv.size(); ++i) REQUIRE(gv[i] == wv[i]);  // copies are exact
  };
  compare(tf::ops::transpose{.perm = {2, 0, 1}}, {{a, ga}});
  compare(tf::ops::transpose{}, {{a, ga}});
  compare(tf::ops::slice{.begin = {1, 4, 0}, .size = {2, -1, 3}, .strides = {1, -2, 2}}, {{a, ga}});
  compare(tf::ops::concat{.axis = 1}, {{a, ga}, {b, gb}});
  compare(tf::ops::broadcast_to{.dims = {3, 4, 5, 6}}, {{a, ga}});
  compare(tf::ops::identity{}, {{a, ga}});
  for (const auto mode : {tf::ops::pad_mode::constant, tf::ops::pad_mode::reflect, tf::ops::pad_mode::symmetric,
                          tf::ops::pad_mode::edge})
    compare(tf::ops::pad{.paddings = {1, 2, 0, 3, 4, 1}, .value = mode == tf::ops::pad_mode::constant ? 1.5 : 0.0,
                         .mode = mode},
            {{a, ga}});
  {
    auto want = tf::call<float>(host, tf::ops::split{.axis = 2, .num_split = 3}, a);
    auto got = tf::call<float, registry>(g, tf::ops::split{.axis = 2, .num_split = 3}, ga);
    INFO(got.status().to_string());
    REQUIRE((want.ok() && got.ok()));
    REQUIRE(got->size() == 3);
    for (std::size_t k = 0; k < 3; ++k) require_close(on_host((*got)[k], g, host), (*want)[k], 0);
  }

  {
    auto c = tf::tensor::allocate(tf::dtype::boolean, tf::shape{5, 1});
    REQUIRE(c.ok());
    auto cv = c->unchecked_values<bool>();
    for (std::size_t i = 0; i < cv.size(); ++i) cv[i] = i % 2 == 0;
    const auto other = random_tensor<float>(tf::shape{6}, 23);
    auto want = tf::call<float>(host, tf::ops::where{}, *c, a, other);  // [5, 1], [4, 5, 6], [6]
    auto got = tf::call<float, registry>(g, tf::ops::where{}, on_gpu(*c, host, g), ga, on_gpu(other, host, g));
    INFO(got.status().to_string());
    REQUIRE((want.ok() && got.ok()));
    require_close(on_host(*got, g, host), *want, 0);
  }

  auto idx = tf::tensor::allocate(tf::dtype::i64, tf::shape{3});
  REQUIRE(idx.ok());
  auto iv = idx->unchecked_values<std::int64_t>();
  iv[0] = 4; iv[1] = -1; iv[2] = 0;
  const auto gidx = on_gpu(*idx, host, g);
  auto want = tf::call<float>(host, tf::ops::gather{.axis = 1}, a, *idx);
  auto got = tf::call<float, registry>(g, tf::ops::gather{.axis = 1}, ga, gidx);
  REQUIRE((want.ok() && got.ok()));
  require_close(on_host(*got, g, host), *want, 0);
  iv[1] = 5;  // outside [-5, 5)
  auto bad = tf::call<float, registry>(g, tf::ops::gather{.axis = 1}, ga, on_gpu(*idx, host, g));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Contains("gather: an index in input 1 is outside the gathered axis"));
}

TEST_CASE("cuda_spilling serves pinned host memory when the GPU's pool is full, and kernels run on it") {
  tf::cpu host;
  // A 4 MiB device pool: the third 2 MiB tensor spills.
  tf::cuda_spilling<0> g(std::size_t{64} << 20, std::size_t{4} << 20);
  REQUIRE(g.available().ok());
  const auto x = random_tensor<float>(tf::shape{512, 1024}, 41);
  std::vector<tf::tensor> held;
  for (int i = 0; i < 3; ++i) {
    auto t = tf::copy(x, host, g);
    INFO(t.status().to_string());
    REQUIRE(t.ok());
    CHECK(t->space() == g.space());
    held.push_back(*t);
  }
  CHECK(g.allocator().spills().num_spilled_allocs >= 1);
  auto want = tf::call<float>(host, tf::ops::relu{}, x);
  REQUIRE(want.ok());
  for (const tf::tensor& t : held) {
    auto got = tf::call<float, registry>(g, tf::ops::relu{}, t);
    INFO(got.status().to_string());
    REQUIRE(got.ok());
    auto back = tf::copy(*got, g, host);
    REQUIRE(back.ok());
    require_close(*back, *want, 0);
  }
  // Past both pools: resource_exhausted naming the tensor and the device.
  auto too_big = g.allocate(tf::dtype::f32, tf::shape{std::int64_t{1} << 26});
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == tf::status_code::resource_exhausted);
  CHECK_THAT(std::string(too_big.status().message()), Contains("GPU:0"));
}
