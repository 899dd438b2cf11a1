// SPDX-License-Identifier: Apache-2.0
// Matrix products through cuBLASLt on a GPU against a plain double-precision reference: every
// transpose, batches (packed and broadcast), each epilogue, each dtype and precision, k = 0,
// pointers aligned to less than 16 bytes, and the plan cache.
#include <cmath>
#include <random>

#include <typeflow/cuda/blas.hpp>

#include "gpu_support.hpp"

using namespace gpu_test;

namespace {

struct product_case {
  gpu::elem type = gpu::elem::f32;
  gpu::precision math = gpu::precision::exact;
  gpu::epilogue post = gpu::epilogue::none;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  bool broadcast_a = false;  // batch stride 0 for a
  std::size_t misalign = 0;  // elements by which a, b and out are offset from the allocation
};

double activation(gpu::epilogue e, double v) {
  if (e == gpu::epilogue::relu || e == gpu::epilogue::bias_relu) return v > 0 ? v : 0;
  if (e == gpu::epilogue::gelu_tanh || e == gpu::epilogue::bias_gelu_tanh)
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
  return v;
}

template <gpu::elem E>
void check_product(gpu::blas_context& ctx, const gpu::stream& s, const product_case& c, std::mt19937& rng) {
  using T = host_t<E>;
  std::uniform_real_distribution<double> dist(-1, 1);
  const std::int64_t batches_a = c.broadcast_a ? 1 : c.batch;
  std::vector<T> a(static_cast<std::size_t>(batches_a * c.m * c.k + c.misalign)),
      b(static_cast<std::size_t>(c.batch * c.k * c.n + c.misalign)), bias(static_cast<std::size_t>(c.n + c.misalign));
  for (auto& v : a) v = static_cast<T>(dist(rng));
  for (auto& v : b) v = static_cast<T>(dist(rng));
  for (auto& v : bias) v = static_cast<T>(dist(rng));
  auto da = upload(s, a);
  auto db = upload(s, b);
  auto dbias = upload(s, bias);
  const std::size_t out_count = static_cast<std::size_t>(c.batch * c.m * c.n + c.misalign);
  device_buffer dout(out_count * sizeof(T));
  gpu::matmul_params p;
  p.type = E;
  p.batch = c.batch;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.transpose_a = c.ta;
  p.transpose_b = c.tb;
  p.a = static_cast<const T*>(da.get()) + c.misalign;
  p.b = static_cast<const T*>(db.get()) + c.misalign;
  p.out = static_cast<T*>(dout.get()) + c.misalign;
  p.batch_stride_a = c.broadcast_a ? 0 : -1;
  p.bias = gpu::has_bias(c.post) ? static_cast<const T*>(dbias.get()) + c.misalign : nullptr;
  p.math = c.math;
  p.post = c.post;
  REQUIRE_OK(gpu::matmul(ctx, p, "dense"));
  const auto out = download<T>(s, dout, out_count);
  // cuBLASLt's GELU epilogue may use a fast tanh (not documented): its cases get 2e-3.
  const bool gelu = c.post == gpu::epilogue::gelu_tanh || c.post == gpu::epilogue::bias_gelu_tanh;
  const double rel = c.math == gpu::precision::tf32 ? 5e-3 : c.math == gpu::precision::bf16 ? 2e-2
                     : E == gpu::elem::f64 ? 1e-12 : E == gpu::elem::f32 ? (gelu ? 2e-3 : 1e-5) : tolerance(E) * 4;
  for (std::int64_t q = 0; q < c.batch; ++q) {
    const T* pa = a.data() + c.misalign + (c.broadcast_a ? 0 : q * c.m * c.k);
    const T* pb = b.data() + c.misalign + q * c.k * c.n;
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j) {
        double sum = 0, magnitude = 0;
        for (std::int64_t l = 0; l < c.k; ++l) {
          const double x = static_cast<double>(c.ta ? pa[l * c.m + i] : pa[i * c.k + l]);
          const double y = static_cast<double>(c.tb ? pb[j * c.k + l] : pb[l * c.n + j]);
          sum += x * y;
          magnitude += std::abs(x * y);
        }
        if (gpu::has_bias(c.post)) sum += static_cast<double>(bias[static_cast<std::size_t>(j) + c.misalign]);
        const double want = activation(c.post, sum);
        const double got = static_cast<double>(out[static_cast<std::size_t>(c.misalign + (q * c.m + i) * c.n + j)]);
        INFO(gpu::to_string(E) << " batch " << q << " (" << i << ", " << j << ") m n k " << c.m << " " << c.n << " "
                               << c.k << " ta " << c.ta << " tb " << c.tb << " epilogue " << static_cast<int>(c.post));
        REQUIRE(std::abs(got - want) <= rel * (magnitude + 1));
      }
  }
}

} // namespace

TEST_CASE("matmul matches a double-precision reference in every configuration") {
  auto s = value_of(gpu::stream::create(0));
  const std::size_t workspace_bytes = value_of(gpu::recommended_workspace(0));
  device_buffer workspace(workspace_bytes);
  auto ctx = value_of(gpu::blas_context::create(s, workspace.get(), workspace_bytes));
  std::mt19937 rng(5);
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      check_product<gpu::elem::f32>(ctx, s, {.m = 37, .n = 45, .k = 29, .ta = ta, .tb = tb}, rng);
      check_product<gpu::elem::f64>(ctx, s, {.type = gpu::elem::f64, .m = 16, .n = 8, .k = 33, .ta = ta, .tb = tb}, rng);
    }
  for (int e = 0; e <= 5; ++e)
    check_product<gpu::elem::f32>(ctx, s, {.post = static_cast<gpu::epilogue>(e), .m = 64, .n = 96, .k = 128}, rng);
  check_product<gpu::elem::f32>(ctx, s, {.batch = 5, .m = 12, .n = 20, .k = 7}, rng);
  check_product<gpu::elem::f32>(ctx, s, {.post = gpu::epilogue::bias_relu, .batch = 4, .m = 8, .n = 16, .k = 24,
                                         .tb = true, .broadcast_a = true}, rng);
  check_product<gpu::elem::f32>(ctx, s, {.math = gpu::precision::tf32, .m = 128, .n = 128, .k = 256}, rng);
  check_product<gpu::elem::f32>(ctx, s, {.math = gpu::precision::bf16, .m = 64, .n = 64, .k = 64}, rng);
  check_product<gpu::elem::f16>(ctx, s, {.type = gpu::elem::f16, .post = gpu::epilogue::bias, .m = 64, .n = 64, .k = 64}, rng);
  check_product<gpu::elem::bf16>(ctx, s, {.type = gpu::elem::bf16, .m = 32, .n = 48, .k = 80, .tb = true}, rng);
  // Pointers 4 bytes past a 256-byte boundary: the heuristic must be told the true alignment.
  check_product<gpu::elem::f32>(ctx, s, {.m = 33, .n = 17, .k = 9, .misalign = 1}, rng);
  check_product<gpu::elem::f32>(ctx, s, {.post = gpu::epilogue::bias_relu, .m = 33, .n = 17, .k = 9, .misalign = 1}, rng);
  check_product<gpu::elem::f16>(ctx, s, {.type = gpu::elem::f16, .post = gpu::epilogue::bias, .m = 8, .n = 24, .k = 16,
                                         .misalign = 1}, rng);
  // An empty inner dimension: out = epilogue(0 + bias).
  check_product<gpu::elem::f32>(ctx, s, {.post = gpu::epilogue::bias_relu, .batch = 2, .m = 5, .n = 6, .k = 0}, rng);
  // Empty outputs do nothing.
  check_product<gpu::elem::f32>(ctx, s, {.m = 0, .n = 6, .k = 3}, rng);
}

TEST_CASE("matmul on a moved-from context, and a misaligned workspace, are errors") {
  auto s = value_of(gpu::stream::create(0));
  device_buffer workspace(4096);
  auto bad = gpu::blas_context::create(s, static_cast<char*>(workspace.get()) + 16, 1024);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Matchers::Contains("256-byte aligned"));
  auto ctx = value_of(gpu::blas_context::create(s, workspace.get(), 4096));
  auto moved = std::move(ctx);
  float x = 0;
  const auto st = gpu::matmul(ctx, {.m = 1, .n = 1, .k = 1, .a = &x, .b = &x, .out = &x});  // NOLINT: moved-from on purpose
  CHECK(st.code() == typeflow::status_code::failed_precondition);
}

TEST_CASE("a second product of the same shape reuses the cached plan") {
  auto s = value_of(gpu::stream::create(0));
  auto ctx = value_of(gpu::blas_context::create(s, nullptr, 0));
  std::mt19937 rng(6);
  check_product<gpu::elem::f32>(ctx, s, {.m = 16, .n = 16, .k = 16}, rng);
  CHECK(ctx.cached_plans() == 1);
  check_product<gpu::elem::f32>(ctx, s, {.m = 16, .n = 16, .k = 16}, rng);
  CHECK(ctx.cached_plans() == 1);
  check_product<gpu::elem::f32>(ctx, s, {.m = 16, .n = 16, .k = 32}, rng);
  CHECK(ctx.cached_plans() == 2);
}
