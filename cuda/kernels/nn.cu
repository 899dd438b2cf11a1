// SPDX-License-Identifier: Apache-2.0
// Layer norm (a warp per row: the mean, then the variance around it, then the output) and inference
// batch norm (elementwise, per channel). Statistics in f32 (f64 for f64), as the CPU kernels.
#include "nn.cuh"

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

template <class T>
__global__ void layer_norm_kernel(const T* x, std::int64_t rows, std::int64_t n, const T* scale, const T* offset,
                                  compute_t<T> epsilon, T* y) {
  using A = compute_t<T>;
  for_each_warp_row(rows, [&](std::int64_t row, int lane) {
    const T* p = x + row * n;
    T* q = y + row * n;
    A sum = 0;
    for (std::int64_t i = lane; i < n; i += 32) sum += static_cast<A>(p[i]);
    const A mean = warp_sum(sum) / static_cast<A>(n);
    A squares = 0;
    for (std::int64_t i = lane; i < n; i += 32) {
      const A d = static_cast<A>(p[i]) - mean;
      squares += d * d;
    }
    const A inverse = m_rsqrt(warp_sum(squares) / static_cast<A>(n) + epsilon);
    for (std::int64_t i = lane; i < n; i += 32)
      q[i] = static_cast<T>((static_cast<A>(p[i]) - mean) * inverse * static_cast<A>(scale[i]) + static_cast<A>(offset[i]));
  });
}

template <class T>
__global__ void batch_norm_kernel(const T* x, std::int64_t size, std::int64_t channels, const T* scale, const T* offset,
                                  const T* mean, const T* variance, compute_t<T> epsilon, T* y) {
  using A = compute_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride) {
    const std::int64_t c = i % channels;
    // sqrt of a negative variance is NaN, as on the CPU (the data is not checked)
    const A factor = static_cast<A>(scale[c]) / m_sqrt(static_cast<A>(variance[c]) + epsilon);
    y[i] = static_cast<T>((static_cast<A>(x[i]) - static_cast<A>(mean[c])) * factor + static_cast<A>(offset[c]));
  }
}

} // namespace

cudaError_t launch_layer_norm(cudaStream_t s, elem type, const void* x, std::int64_t rows, std::int64_t n,
                              const void* scale, const void* offset, double epsilon, void* y) {
  if (rows * n == 0) return cudaSuccess;
  if (!is_floating(type)) return cudaErrorInvalidValue;
  visit_elem(type, [&](auto e) {
    if constexpr (is_floating(decltype(e)::value)) {
      using T = storage_t<decltype(e)::value>;
      layer_norm_kernel<T><<<grid_for(rows * 32), block_size, 0, s>>>(
          static_cast<const T*>(x), rows, n, static_cast<const T*>(scale), static_cast<const T*>(offset),
          static_cast<compute_t<T>>(epsilon), static_cast<T*>(y));
    }
  });
  return cudaGetLastError();
}

cudaError_t launch_batch_norm(cudaStream_t s, elem type, const void* x, std::int64_t rows, std::int64_t channels,
                              const void* scale, const void* offset, const void* mean, const void* variance,
                              double epsilon, void* y) {
  const std::int64_t size = rows * channels;
  if (size == 0) return cudaSuccess;
  if (!is_floating(type)) return cudaErrorInvalidValue;
  visit_elem(type, [&](auto e) {
    if constexpr (is_floating(decltype(e)::value)) {
      using T = storage_t<decltype(e)::value>;
      batch_norm_kernel<T><<<grid_for(size), block_size, 0, s>>>(
          static_cast<const T*>(x), size, channels, static_cast<const T*>(scale), static_cast<const T*>(offset),
          static_cast<const T*>(mean), static_cast<const T*>(variance), static_cast<compute_t<T>>(epsilon),
          static_cast<T*>(y));
    }
  });
  return cudaGetLastError();
}

} // namespace typeflow::gpu::kernels
