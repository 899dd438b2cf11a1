// SPDX-License-Identifier: Apache-2.0
// max_pool2d and avg_pool2d: a thread per output element, each through pool_element (pool.hpp), the
// function the host tests check against the CPU kernel. Neighbouring threads own neighbouring
// channels (NHWC) or columns (NCHW), so their loads of one tap coalesce.
#include "pool.cuh"

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

template <class T>
__global__ void pool2d_kernel(pool_params p, const T* x, T* y, std::int64_t size) {
  using A = compute_t<T>;
  const A lowest = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                        : std::numeric_limits<A>::lowest();
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    y[i] = static_cast<T>(pool_element<A>(p, x, i, lowest));
}

} // namespace

cudaError_t launch_pool2d(cudaStream_t s, const pool_params& p) {
  const std::int64_t size = p.batch * p.channels * p.h.out * p.w.out;
  if (size == 0) return cudaSuccess;
  bool launched = false;
  visit_elem(p.type, [&](auto e) {
    constexpr elem type = decltype(e)::value;
    if constexpr (type != elem::i64 && type != elem::boolean) {
      using T = storage_t<type>;
      pool2d_kernel<T><<<grid_for(size), block_size, 0, s>>>(p, static_cast<const T*>(p.x), static_cast<T*>(p.y), size);
      launched = true;
    }
  });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

} // namespace typeflow::gpu::kernels
