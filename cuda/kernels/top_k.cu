// SPDX-License-Identifier: Apache-2.0
// top_k: a thread per entry ranks it in its row (top_k_rank, which the host tests check against the
// CPU kernel) and writes it to its output when selected; not sorted, the ranks go to scratch and a
// second kernel places each selected entry after the selected entries before it.
#include "top_k.cuh"

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

template <class T>
__global__ void rank_kernel(top_k_params p, const T* x, T* values, std::int64_t size) {
  using A = compute_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride) {
    const std::int64_t row = i / p.n, at = i % p.n;
    const std::int64_t rank = top_k_rank<A>(x + row * p.n, p.n, at);
    if (!p.sorted) {
      p.ranks[i] = rank;
    } else if (rank < p.k) {
      values[row * p.k + rank] = x[i];
      p.indices[row * p.k + rank] = at;
    }
  }
}

template <class T>
__global__ void place_kernel(top_k_params p, const T* x, T* values, std::int64_t size) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride) {
    if (p.ranks[i] >= p.k) continue;
    const std::int64_t row = i / p.n, at = i % p.n;
    const std::int64_t slot = unsorted_slot(p.ranks + row * p.n, at, p.k);
    values[row * p.k + slot] = x[i];
    p.indices[row * p.k + slot] = at;
  }
}

} // namespace

cudaError_t launch_top_k(cudaStream_t s, const top_k_params& p) {
  const std::int64_t size = p.rows * p.n;
  if (size == 0 || p.k == 0) return cudaSuccess;
  bool launched = false;
  visit_elem(p.type, [&](auto e) {
    constexpr elem type = decltype(e)::value;
    if constexpr (type != elem::boolean && type != elem::i8 && type != elem::u8) {
      using T = storage_t<type>;
      const auto* x = static_cast<const T*>(p.x);
      auto* values = static_cast<T*>(p.values);
      rank_kernel<T><<<grid_for(size), block_size, 0, s>>>(p, x, values, size);
      if (!p.sorted) place_kernel<T><<<grid_for(size), block_size, 0, s>>>(p, x, values, size);
      launched = true;
    }
  });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

} // namespace typeflow::gpu::kernels
