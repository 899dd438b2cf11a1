// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's resize (ops/resize.hpp): nearest and bilinear, NHWC or NCHW, a thread per output
// element. Where each output row and column reads from (the input positions and, bilinear, their
// weights) is mapped on the host by the CPU kernel's own function for the op's coordinate mode and
// rounding, and handed to the kernel as tables in device memory; resize_element is the value of one
// output element, the same function on both sides, so the host tests check it against the CPU kernel.
#pragma once

#include <cstdint>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// Per output position along each axis, rows first ([out_h] entries) and columns after ([out_w]):
// the input position(s) read and, bilinear, their weights, in the accumulation type (f64 for f64
// data, f32 otherwise). All in device memory for the kernel.
template <class A>
struct resize_tables {
  const std::int64_t* first = nullptr;
  const std::int64_t* second = nullptr;  // bilinear
  const A* first_weight = nullptr;       // bilinear
  const A* second_weight = nullptr;      // bilinear
};

struct resize_params {
  elem type = elem::f32;  // nearest: every elem but bool; bilinear: f16, bf16, f32, f64
  bool bilinear = false;
  bool nchw = false;
  std::int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  const void* tables = nullptr;  // a resize_tables<A>'s four arrays, one after another: see table_bytes
  const void* x = nullptr;
  void* y = nullptr;
};

// The bytes of the tables for p, laid out as first, second, first_weight, second_weight, each of
// out_h + out_w entries (the weights of p.type's accumulation type).
constexpr std::int64_t resize_table_entries(const resize_params& p) noexcept { return p.out_h + p.out_w; }
constexpr std::int64_t resize_accumulator_bytes(elem type) noexcept { return type == elem::f64 ? 8 : 4; }
constexpr std::int64_t resize_table_bytes(const resize_params& p) noexcept {
  return resize_table_entries(p) * (16 + 2 * resize_accumulator_bytes(p.type));
}

// The four arrays of the tables that start at `base`.
template <class A>
TYPEFLOW_HOST_DEVICE resize_tables<A> resize_tables_at(const void* base, std::int64_t entries) {
  const auto* index = static_cast<const std::int64_t*>(base);
  const auto* weight = reinterpret_cast<const A*>(index + 2 * entries);
  return {index, index + entries, weight, weight + entries};
}

// Output element `index` of x of type T: the pixel nearest reads, or bilinear's two rows each blended
// across its two columns, then the two rows blended, in the accumulation type A, as the CPU kernel
// computes them.
template <class A, class T>
TYPEFLOW_HOST_DEVICE T resize_element(const resize_params& p, const resize_tables<A>& t, const T* x, std::int64_t index) {
  std::int64_t b, c, oy, ox;
  if (p.nchw) {
    ox = index % p.out_w;
    oy = (index / p.out_w) % p.out_h;
    c = (index / (p.out_w * p.out_h)) % p.channels;
    b = index / (p.out_w * p.out_h * p.channels);
  } else {
    c = index % p.channels;
    ox = (index / p.channels) % p.out_w;
    oy = (index / (p.channels * p.out_w)) % p.out_h;
    b = index / (p.channels * p.out_w * p.out_h);
  }
  const std::int64_t row = p.nchw ? p.in_w : p.in_w * p.channels;
  const std::int64_t column = p.nchw ? 1 : p.channels;
  const T* image = x + (p.nchw ? (b * p.channels + c) * p.in_h * p.in_w : b * p.in_h * p.in_w * p.channels + c);
  const std::int64_t col = p.out_h + ox;
  const T* top = image + t.first[oy] * row;
  if (!p.bilinear) return top[t.first[col] * column];
  const T* bottom = image + t.second[oy] * row;
  const std::int64_t i0 = t.first[col] * column, i1 = t.second[col] * column;
  const A w0 = t.first_weight[col], w1 = t.second_weight[col];
  const A upper = w0 * static_cast<A>(top[i0]) + w1 * static_cast<A>(top[i1]);
  const A lower = w0 * static_cast<A>(bottom[i0]) + w1 * static_cast<A>(bottom[i1]);
  return static_cast<T>(t.first_weight[oy] * upper + t.second_weight[oy] * lower);
}

// Checks the parameters without a device: dtype for the method, non-negative sizes whose element
// counts fit, an empty input only for an empty output, non-null pointers for a non-empty output.
TYPEFLOW_CUDA_API status validate(const resize_params& p);
// Enqueues the resize on `s`; the tables must be in device memory, written before it on `s`.
TYPEFLOW_CUDA_API status resize(const stream& s, const resize_params& p);

} // namespace typeflow::gpu
