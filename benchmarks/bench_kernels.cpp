// SPDX-License-Identifier: Apache-2.0
// Kernel benchmarks (BENCHMARKS.md, "Compute"): the matmul and conv2d kernels that the registry
// picks, against the raw Eigen computations they must match, on 1 and 2 threads.
//   matmul 1024^3 f32            vs C.device(d) = A.contract(B, dims)           target ratio <= 1/0.95
//                                and vs Eigen's matrix product (Eigen/Core, OpenMP threads), where built
//   conv2d 3x3 64->64 same       vs extract_image_patches + contraction          target ratio <= 1/0.95
// "kernel" cases run the registry's kernel on preallocated outputs, as an executor does;
// "call" cases go through tf::call, which also infers shapes and allocates the output.
// Where oneDNN was found: its matmul kernel (onednn_kernel_list) against one dnnl_sgemm call over
// the whole product on as many OpenMP threads as the policy has, at 1024^3 and at the MLP's
// [64, 1024] x [1024, 1024]; and the default kernel against the same call. Its conv2d kernel
// (oneDNN's direct convolution for a short patch, else im2col + sgemm) against im2col +
// dnnl_sgemm on the same blocks (the kernel it replaced), on the CNN's three convolutions at batch
// 1 and 64 and on 3x3 64->64 1x56x56.
#include <typeflow/typeflow.hpp>
#if TYPEFLOW_BENCH_ONEDNN
#include <typeflow/kernels/onednn/kernel_list.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "harness.hpp"
#if TYPEFLOW_BENCH_EIGEN_PRODUCT
#include "eigen_matrix_product.hpp"
#endif

namespace tf = typeflow;

namespace {

tf::tensor random_tensor(const tf::shape& s, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto t = tf::tensor::allocate(tf::dtype::f32, s);
  for (auto& v : t->unchecked_values<float>()) v = u(rng);
  return *t;
}

double max_abs_diff(const tf::tensor& a, const tf::tensor& b) {
  double m = 0;
  const auto x = a.unchecked_values<float>();
  const auto y = b.unchecked_values<float>();
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, double(std::abs(x[i] - y[i])));
  return m;
}

template <class Device>
void bench_matmul(tf::bench::harness& h, Device& device, const std::string& threads) {
  const std::int64_t n = h.quick() ? 256 : 1024;
  const tf::tensor a = random_tensor(tf::shape{n, n}, 1);
  const tf::tensor b = random_tensor(tf::shape{n, n}, 2);
  tf::tensor c_ours = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n, n});
  tf::tensor c_raw = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n, n});

  using kernel = tf::default_registry::kernel<tf::ops::matmul, Device, float>;
  const tf::tensor inputs[] = {a, b};
  tf::kernel_context<Device> ctx{device, inputs, std::span<tf::tensor>(&c_ours, 1)};
  auto ours = [&] { (void)kernel::compute(tf::ops::matmul{}, ctx); };
  auto raw = [&] {
    const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{Eigen::IndexPair<Eigen::Index>(1, 0)};
    c_raw.unchecked_eigen<float, 2>().device(device.eigen()) =
        a.unchecked_eigen<const float, 2>().contract(b.unchecked_eigen<const float, 2>(), dims);
  };
  ours();
  raw();
  if (max_abs_diff(c_ours, c_raw) > 1e-3) std::printf("!! matmul disagrees with Eigen\n");
  const std::string size = std::to_string(n) + "^3";
  h.compare("matmul " + size + " kernel, " + threads, "Eigen contract", ours, raw, 7, 1.0);
  h.compare("matmul " + size + " call, " + threads, "Eigen contract",
            [&] { (void)tf::call<float>(device, tf::ops::matmul{}, a, b); }, raw, 7, 1.0);
#if TYPEFLOW_BENCH_EIGEN_PRODUCT
  // Eigen's matrix product (Eigen/Core's GEMM) on as many OpenMP threads as the policy has.
  tf::tensor c_product = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n, n});
  auto product = [&] {
    tf::bench::eigen_matrix_product(a.unchecked_data<const float>(), b.unchecked_data<const float>(),
                                    c_product.unchecked_data<float>(), n, n, n, std::max(1, device.num_threads()));
  };
  product();
  if (max_abs_diff(c_ours, c_product) > 1e-3) std::printf("!! matmul disagrees with Eigen's matrix product\n");
  // 50 ms apart: libgomp's threads spin after the product (300,000 rounds by default) and typeflow's
  // helpers after the kernel (200 us), each taking the cores from the other's next call.
  h.compare_apart("matmul " + size + " kernel, " + threads + ", 50 ms apart", "Eigen matrix product", ours, product,
                  std::chrono::milliseconds(50), 7, 1.0);
#endif
}

#if TYPEFLOW_BENCH_ONEDNN
template <class Device>
void bench_onednn_matmul(tf::bench::harness& h, Device& device, const std::string& threads, std::int64_t m,
                         std::int64_t k, std::int64_t n) {
  const tf::tensor a = random_tensor(tf::shape{m, k}, 1);
  const tf::tensor b = random_tensor(tf::shape{k, n}, 2);
  tf::tensor c_ours = *tf::tensor::allocate(tf::dtype::f32, tf::shape{m, n});
  tf::tensor c_default = *tf::tensor::allocate(tf::dtype::f32, tf::shape{m, n});
  tf::tensor c_raw = *tf::tensor::allocate(tf::dtype::f32, tf::shape{m, n});
  const tf::tensor inputs[] = {a, b};
  using onednn = tf::onednn::onednn_matmul_kernel<tf::ops::matmul, Device, float>;
  using eigen = tf::default_registry::kernel<tf::ops::matmul, Device, float>;
  tf::kernel_context<Device> ctx{device, inputs, std::span<tf::tensor>(&c_ours, 1)};
  tf::kernel_context<Device> ctx_default{device, inputs, std::span<tf::tensor>(&c_default, 1)};
  auto ours = [&] { (void)onednn::compute(tf::ops::matmul{}, ctx); };
  auto ours_default = [&] { (void)eigen::compute(tf::ops::matmul{}, ctx_default); };
  auto raw = [&] {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(std::max(1, device.num_threads()));
    (void)dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.unchecked_data<const float>(), k, b.unchecked_data<const float>(), n,
                     0.0f, c_raw.unchecked_data<float>(), n);
    omp_set_num_threads(saved);
  };
  ours();
  ours_default();
  raw();
  if (max_abs_diff(c_ours, c_raw) > 1e-3 || max_abs_diff(c_default, c_raw) > 1e-3)
    std::printf("!! matmul disagrees with oneDNN\n");
  const std::string size = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  h.compare("matmul " + size + " oneDNN kernel, " + threads, "dnnl_sgemm", ours, raw, 7, 1.0);
  h.compare("matmul " + size + " default kernel, " + threads, "dnnl_sgemm", ours_default, raw, 7, 1.0);
}
#endif

// Eigen's spatial convolution as TensorFlow writes it: image patches, then one contraction.
// NHWC input [n, h, w, c], HWIO filter [kh, kw, c, k], same padding, stride 1.
template <class Device>
void eigen_conv(Device& device, const tf::tensor& x, const tf::tensor& f, tf::tensor& y) {
  const auto n = x.dim(0), hh = x.dim(1), ww = x.dim(2), c = x.dim(3);
  const auto kh = f.dim(0), kw = f.dim(1), k = f.dim(3);
  auto in = x.unchecked_eigen<const float, 4>();
  auto filter = f.unchecked_eigen<const float, 4>();
  // Row-major patches: [n, h*w patches, kh, kw, c] (Eigen's row-major image dims are (cols, rows)
  // of the reversed layout, hence kw before kh in the call).
  const Eigen::array<Eigen::Index, 2> patches_shape{n * hh * ww, kh * kw * c};
  const Eigen::array<Eigen::Index, 2> filter_shape{kh * kw * c, k};
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{Eigen::IndexPair<Eigen::Index>(1, 0)};
  auto out = y.unchecked_eigen<float, 2>();  // [n*h*w, k]
  out.device(device.eigen()) =
      in.extract_image_patches(kw, kh, 1, 1, 1, 1, Eigen::PADDING_SAME).reshape(patches_shape).contract(
          filter.reshape(filter_shape), dims);
}

template <class Device>
void bench_conv(tf::bench::harness& h, Device& device, const std::string& threads, std::int64_t n,
                std::int64_t side) {
  const std::int64_t c = 64;
  const tf::tensor x = random_tensor(tf::shape{n, side, side, c}, 3);
  const tf::tensor f = random_tensor(tf::shape{3, 3, c, c}, 4);
  tf::tensor y_ours = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n, side, side, c});
  tf::tensor y_raw = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n * side * side, c});

  const tf::ops::conv2d op{.pad = tf::ops::padding::same};
  using kernel = tf::default_registry::kernel<tf::ops::conv2d, Device, float>;
  const tf::tensor inputs[] = {x, f};
  tf::kernel_context<Device> ctx{device, inputs, std::span<tf::tensor>(&y_ours, 1)};
  auto ours = [&] { (void)kernel::compute(op, ctx); };
  auto raw = [&] { eigen_conv(device, x, f, y_raw); };
  ours();
  raw();
  if (max_abs_diff(y_ours, *y_raw.reshaped(y_ours.shape())) > 1e-3) std::printf("!! conv2d disagrees with Eigen\n");
  const std::string name = "conv2d 3x3 64->64 " + std::to_string(n) + "x" + std::to_string(side) + "x" +
                           std::to_string(side) + ", " + threads;
  h.compare(name, "Eigen image patches + contract", ours, raw, 9, 1.0);
}

#if TYPEFLOW_BENCH_ONEDNN
template <class Device>
void bench_onednn_conv(tf::bench::harness& h, Device& device, const std::string& threads, std::int64_t n,
                       std::int64_t side, std::int64_t c_in, std::int64_t c_out) {
  const tf::tensor x = random_tensor(tf::shape{n, side, side, c_in}, 5);
  const tf::tensor f = random_tensor(tf::shape{3, 3, c_in, c_out}, 6);
  tf::tensor y_direct = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n, side, side, c_out});
  tf::tensor y_gemm = *tf::tensor::allocate(tf::dtype::f32, tf::shape{n, side, side, c_out});
  const tf::ops::conv2d op{.pad = tf::ops::padding::same};
  using direct = tf::onednn::onednn_conv2d_kernel<tf::ops::conv2d, Device, float>;
  using gemm = tf::cpu_kernels::basic_im2col_conv2d_kernel<tf::ops::conv2d, Device, float, tf::onednn::onednn_gemm>;
  const tf::tensor inputs[] = {x, f};
  tf::kernel_context<Device> ctx_direct{device, inputs, std::span<tf::tensor>(&y_direct, 1)};
  tf::kernel_context<Device> ctx_gemm{device, inputs, std::span<tf::tensor>(&y_gemm, 1)};
  auto ours = [&] { (void)direct::compute(op, ctx_direct); };
  auto base = [&] { (void)gemm::compute(op, ctx_gemm); };
  ours();
  base();
  if (max_abs_diff(y_direct, y_gemm) > 1e-3) std::printf("!! oneDNN's convolution disagrees with im2col + sgemm\n");
  h.compare("conv2d 3x3 " + std::to_string(c_in) + "->" + std::to_string(c_out) + " " + std::to_string(n) + "x" +
                std::to_string(side) + "x" + std::to_string(side) + " oneDNN kernel, " + threads,
            "im2col + dnnl_sgemm", ours, base, n > 8 ? 5 : 9, 1.0);
}

template <class Device>
void bench_onednn_convs(tf::bench::harness& h, Device& device, const std::string& threads) {
  for (std::int64_t n : {1, 64}) {
    bench_onednn_conv(h, device, threads, n, 28, 1, 32);
    bench_onednn_conv(h, device, threads, n, 28, 32, 64);
    bench_onednn_conv(h, device, threads, n, 14, 64, 64);
  }
  bench_onednn_conv(h, device, threads, 1, 56, 64, 64);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("kernels", argc, argv);
  {
    tf::cpu device;
    bench_matmul(h, device, "1 thread");
#if TYPEFLOW_BENCH_ONEDNN
    bench_onednn_matmul(h, device, "1 thread", h.quick() ? 256 : 1024, h.quick() ? 256 : 1024, h.quick() ? 256 : 1024);
    bench_onednn_matmul(h, device, "1 thread", 64, 1024, 1024);
    bench_onednn_convs(h, device, "1 thread");
#endif
    bench_conv(h, device, "1 thread", 1, 56);
    bench_conv(h, device, "1 thread", 32, 28);
  }
  {
    tf::thread_pool device(2);
    bench_matmul(h, device, "2 threads");
#if TYPEFLOW_BENCH_ONEDNN
    bench_onednn_matmul(h, device, "2 threads", h.quick() ? 256 : 1024, h.quick() ? 256 : 1024, h.quick() ? 256 : 1024);
    bench_onednn_matmul(h, device, "2 threads", 64, 1024, 1024);
    bench_onednn_convs(h, device, "2 threads");
#endif
    bench_conv(h, device, "2 threads", 1, 56);
    bench_conv(h, device, "2 threads", 32, 28);
  }
  return 0;
}
