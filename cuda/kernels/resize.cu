// SPDX-License-Identifier: Apache-2.0
// resize: a thread per output element through resize_element (resize.hpp), the function the host
// tests check against the CPU kernel; bilinear blends in f32 (f64 for f64), nearest copies.
#include "resize.cuh"

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

template <class T, class A>
__global__ void resize_kernel(resize_params p, resize_tables<A> t, const T* x, T* y, std::int64_t size) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    y[i] = resize_element<A>(p, t, x, i);
}

} // namespace

cudaError_t launch_resize(cudaStream_t s, const resize_params& p) {
  const std::int64_t size = p.batch * p.channels * p.out_h * p.out_w;
  if (size == 0) return cudaSuccess;
  bool launched = false;
  visit_elem(p.type, [&](auto e) {
    constexpr elem type = decltype(e)::value;
    if constexpr (type != elem::boolean) {
      using T = storage_t<type>;
      using A = std::conditional_t<type == elem::f64, double, float>;
      const auto t = resize_tables_at<A>(p.tables, resize_table_entries(p));
      resize_kernel<T, A><<<grid_for(size), block_size, 0, s>>>(p, t, static_cast<const T*>(p.x), static_cast<T*>(p.y), size);
      launched = true;
    }
  });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

} // namespace typeflow::gpu::kernels
