// SPDX-License-Identifier: Apache-2.0
// Data movement: a strided copy and gather. Both move elements as opaque words of their size (1, 2,
// 4 or 8 bytes), so one instantiation per size serves every dtype.
#include "array.cuh"

#include <cstring>

#include "common.cuh"

namespace typeflow::gpu::kernels {
namespace {

template <std::size_t Bytes> struct word;
template <> struct word<1> { using type = std::uint8_t; };
template <> struct word<2> { using type = std::uint16_t; };
template <> struct word<4> { using type = std::uint32_t; };
template <> struct word<8> { using type = std::uint64_t; };

template <class W, class Index>
__global__ void strided_copy_kernel(const W* src, W* dst, strided_layout<2> l) {
  const Index size = static_cast<Index>(l.size);
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride) {
    std::int64_t offsets[2];
    operand_offsets(l, static_cast<std::int64_t>(i), offsets);
    dst[offsets[1]] = src[offsets[0]];
  }
}

template <class W>
__global__ void contiguous_copy_kernel(const W* src, W* dst, std::int64_t size) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride)
    dst[i] = src[i];
}

template <class W, class I>
__global__ void gather_kernel(const W* params, std::int64_t outer, std::int64_t axis, std::int64_t inner,
                              const I* indices, std::int64_t count, W* out, unsigned* error_word) {
  const std::int64_t total = outer * count * inner;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
    const std::int64_t q = o % inner, rest = o / inner, j = rest % count, p = rest / count;
    std::int64_t index = static_cast<std::int64_t>(indices[j]);
    if (index < 0) index += axis;
    if (index < 0 || index >= axis) {
      if (error_word != nullptr) atomicOr(error_word, 4u);  // error_bits::index_out_of_range
      out[o] = W(0);
    } else {
      out[o] = params[(p * axis + index) * inner + q];
    }
  }
}

template <class W, class Index>
__global__ void select_kernel(const bool* condition, const W* x, const W* y, W* out, strided_layout<3> l) {
  const Index size = static_cast<Index>(l.size);
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < size; i += stride) {
    Index offsets[3];
    operand_offsets(l, i, offsets);
    out[i] = condition[offsets[0]] ? x[offsets[1]] : y[offsets[2]];
  }
}

template <class W>
__global__ void pad_kernel(const W* x, W* y, pad_layout l, W value) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < l.size; o += stride) {
    const std::int64_t from = pad_source(l, o);
    y[o] = from < 0 ? value : x[from];
  }
}

template <class F>
cudaError_t by_size(std::size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(word<1>{}); break;
    case 2: f(word<2>{}); break;
    case 4: f(word<4>{}); break;
    case 8: f(word<8>{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

} // namespace

cudaError_t launch_strided_copy(cudaStream_t s, std::size_t element_bytes, const void* src, void* dst,
                                const strided_layout<2>& l) {
  if (l.size == 0) return cudaSuccess;
  return by_size(element_bytes, [&](auto w) {
    using W = typename decltype(w)::type;
    const auto* from = static_cast<const W*>(src);
    auto* to = static_cast<W*>(dst);
    if (l.same_shape)
      contiguous_copy_kernel<W><<<grid_for(l.size), block_size, 0, s>>>(from, to, l.size);
    else if (l.size <= (std::int64_t{1} << 31))
      strided_copy_kernel<W, std::uint32_t><<<grid_for(l.size), block_size, 0, s>>>(from, to, l);
    else
      strided_copy_kernel<W, std::int64_t><<<grid_for(l.size), block_size, 0, s>>>(from, to, l);
  });
}

cudaError_t launch_gather(cudaStream_t s, std::size_t element_bytes, const void* params, std::int64_t outer,
                          std::int64_t axis, std::int64_t inner, bool indices_64, const void* indices,
                          std::int64_t count, void* out, unsigned* error_word) {
  const std::int64_t total = outer * count * inner;
  if (total == 0) return cudaSuccess;
  return by_size(element_bytes, [&](auto w) {
    using W = typename decltype(w)::type;
    if (indices_64)
      gather_kernel<W, std::int64_t><<<grid_for(total), block_size, 0, s>>>(
          static_cast<const W*>(params), outer, axis, inner, static_cast<const std::int64_t*>(indices), count,
          static_cast<W*>(out), error_word);
    else
      gather_kernel<W, std::int32_t><<<grid_for(total), block_size, 0, s>>>(
          static_cast<const W*>(params), outer, axis, inner, static_cast<const std::int32_t*>(indices), count,
          static_cast<W*>(out), error_word);
  });
}

cudaError_t launch_select(cudaStream_t s, std::size_t element_bytes, const bool* condition, const void* x,
                          const void* y, void* out, const strided_layout<3>& l) {
  if (l.size == 0) return cudaSuccess;
  return by_size(element_bytes, [&](auto w) {
    using W = typename decltype(w)::type;
    const auto* a = static_cast<const W*>(x);
    const auto* b = static_cast<const W*>(y);
    auto* o = static_cast<W*>(out);
    // Broadcast strides are never negative: 32-bit indices up to 2^31 elements.
    if (l.size <= (std::int64_t{1} << 31))
      select_kernel<W, std::uint32_t><<<grid_for(l.size), block_size, 0, s>>>(condition, a, b, o, l);
    else
      select_kernel<W, std::int64_t><<<grid_for(l.size), block_size, 0, s>>>(condition, a, b, o, l);
  });
}

cudaError_t launch_pad(cudaStream_t s, elem type, const void* x, void* y, const pad_layout& l, double value) {
  if (l.size == 0) return cudaSuccess;
  visit_elem(type, [&](auto e) {
    using T = storage_t<decltype(e)::value>;
    using W = typename word<sizeof(T)>::type;
    const T converted = convert<T>(value);
    W bits{};
    std::memcpy(&bits, &converted, sizeof(T));  // the element moves as a word of its size
    pad_kernel<W><<<grid_for(l.size), block_size, 0, s>>>(static_cast<const W*>(x), static_cast<W*>(y), l, bits);
  });
  return cudaGetLastError();
}

} // namespace typeflow::gpu::kernels
