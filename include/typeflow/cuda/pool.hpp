// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's 2-D pooling: max_pool2d and avg_pool2d (ops/pool.hpp) on NHWC or NCHW images,
// with strides, dilations, same, valid or explicit padding, ceil_mode and count_include_pad, one
// thread per output element. The host describes each spatial axis as the CPU kernel walks it
// (pool_axis); pool_element is the value of one output element, the same function on both sides,
// so the host tests check the index arithmetic the GPU runs against the CPU kernel.
// Written here rather than through cuDNN: cuDNN's resample operation has no dilation, no
// count_include_pad with ceil_mode's extra taps, and pooling is bound by memory, not arithmetic.
#pragma once

#include <cstdint>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

enum class pool_kind : std::uint8_t { max, average };

// One spatial axis: `in` input positions, `out` windows of `size` taps `dilation` apart, the window
// o starting at o * stride - before; padded_end is the end of the input with its padding after it
// (what count_include_pad counts).
struct pool_axis {
  std::int64_t in = 0, out = 0, size = 1, stride = 1, dilation = 1, before = 0, padded_end = 0;
};

struct pool_params {
  pool_kind kind = pool_kind::max;
  elem type = elem::f32;         // max: f16, bf16, f32, f64, i8, i32, u8; average: floating types
  bool nchw = false;             // the images' layout: NHWC by default
  std::int64_t batch = 0, channels = 0;
  pool_axis h, w;
  bool count_include_pad = false;  // average: divide by the taps inside the image with its padding
  const void* x = nullptr;       // [batch, h.in, w.in, channels] (or NCHW)
  void* y = nullptr;             // [batch, h.out, w.out, channels] (or NCHW); may not overlap x
};

// The taps [first, last) of a window of `size` taps `dilation` apart starting at `start` whose
// positions start + i * dilation lie in [lo, hi).
struct tap_range {
  std::int64_t first = 0, last = 0;
};
TYPEFLOW_HOST_DEVICE constexpr tap_range taps_within(std::int64_t start, std::int64_t size, std::int64_t dilation,
                                                     std::int64_t lo, std::int64_t hi) {
  const std::int64_t first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
  std::int64_t last = start >= hi ? 0 : (hi - 1 - start) / dilation + 1;
  if (last > size) last = size;
  return {first, last > first ? last : first};
}

// Output element `index` of the pool, accumulated in A from x's elements of type T. Max starts from
// `lowest` (-inf, or an integer type's lowest) and keeps a tap only when it is greater, so padding
// is never the maximum; average divides by the taps counted (none counted: 0).
template <class A, class T>
TYPEFLOW_HOST_DEVICE A pool_element(const pool_params& p, const T* x, std::int64_t index, A lowest) {
  std::int64_t b, c, oy, ox;
  if (p.nchw) {
    ox = index % p.w.out;
    oy = (index / p.w.out) % p.h.out;
    c = (index / (p.w.out * p.h.out)) % p.channels;
    b = index / (p.w.out * p.h.out * p.channels);
  } else {
    c = index % p.channels;
    ox = (index / p.channels) % p.w.out;
    oy = (index / (p.channels * p.w.out)) % p.h.out;
    b = index / (p.channels * p.w.out * p.h.out);
  }
  const std::int64_t sy = oy * p.h.stride - p.h.before, sx = ox * p.w.stride - p.w.before;
  const tap_range ty = taps_within(sy, p.h.size, p.h.dilation, 0, p.h.in);
  const tap_range tx = taps_within(sx, p.w.size, p.w.dilation, 0, p.w.in);
  // Element (iy, ix) of image b, channel c is at base + iy * row + ix * column.
  const std::int64_t row = p.nchw ? p.w.in : p.w.in * p.channels;
  const std::int64_t column = p.nchw ? 1 : p.channels;
  const std::int64_t base = p.nchw ? (b * p.channels + c) * p.h.in * p.w.in : b * p.h.in * p.w.in * p.channels + c;
  A acc = p.kind == pool_kind::max ? lowest : A(0);
  for (std::int64_t i = ty.first; i < ty.last; ++i) {
    const std::int64_t at = base + (sy + i * p.h.dilation) * row + sx * column;
    for (std::int64_t j = tx.first; j < tx.last; ++j) {
      const A v = static_cast<A>(x[at + j * p.w.dilation * column]);
      if (p.kind == pool_kind::max) acc = v > acc ? v : acc;
      else acc += v;
    }
  }
  if (p.kind == pool_kind::average) {
    std::int64_t count = (ty.last - ty.first) * (tx.last - tx.first);
    if (p.count_include_pad) {
      const tap_range py = taps_within(sy, p.h.size, p.h.dilation, -p.h.before, p.h.padded_end);
      const tap_range px = taps_within(sx, p.w.size, p.w.dilation, -p.w.before, p.w.padded_end);
      count = (py.last - py.first) * (px.last - px.first);
    }
    if (count != 0) acc /= static_cast<A>(count);
  }
  return acc;
}

// Checks the parameters without a device: dtype for the kind, non-negative sizes whose element
// counts fit, windows, strides and dilations >= 1, non-null pointers for a non-empty output.
TYPEFLOW_CUDA_API status validate(const pool_params& p);
// Enqueues the pool on `s`.
TYPEFLOW_CUDA_API status pool2d(const stream& s, const pool_params& p);

} // namespace typeflow::gpu
