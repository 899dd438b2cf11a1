// SPDX-License-Identifier: Apache-2.0
// Helpers of the GPU tests: device buffers, copies, host element types of the library's elems
// (Eigen's half and bfloat16 have the bit layout of CUDA's), and a check of a status.
#pragma once

#include <catch2/catch.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <typeflow/cuda/runtime.hpp>

namespace gpu_test {

namespace gpu = typeflow::gpu;

#define REQUIRE_OK(expr)                                              \
  do {                                                                \
    const ::typeflow::status _s = (expr);                             \
    INFO(_s.to_string());                                             \
    REQUIRE(_s.ok());                                                 \
  } while (0)

template <class T>
T value_of(typeflow::result<T> r) {
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  return std::move(r).value();
}

// Device memory freed at scope exit.
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) : bytes_(bytes) { p_ = value_of(gpu::device_alloc(0, bytes == 0 ? 1 : bytes)); }
  device_buffer(device_buffer&& other) noexcept
      : p_(std::exchange(other.p_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  device_buffer& operator=(device_buffer&&) = delete;
  ~device_buffer() { (void)gpu::device_free(0, p_); }
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

template <class T>
device_buffer upload(const gpu::stream& s, const std::vector<T>& host) {
  device_buffer d(host.size() * sizeof(T));
  REQUIRE_OK(gpu::copy_async(s, d.get(), host.data(), host.size() * sizeof(T), gpu::copy_kind::host_to_device));
  REQUIRE_OK(s.synchronize());
  return d;
}

template <class T>
std::vector<T> download(const gpu::stream& s, const device_buffer& d, std::size_t count) {
  std::vector<T> host(count);
  REQUIRE_OK(gpu::copy_async(s, host.data(), d.get(), count * sizeof(T), gpu::copy_kind::device_to_host));
  REQUIRE_OK(s.synchronize());
  return host;
}

// A bool that a std::vector stores one per byte, as the GPU does (std::vector<bool> packs bits).
struct host_bool {
  bool value = false;
  host_bool() = default;
  template <class V>
  host_bool(V v) : value(static_cast<double>(v) != 0) {}  // NOLINT: converts like bool
  explicit operator double() const { return value ? 1.0 : 0.0; }
  friend bool operator==(host_bool a, host_bool b) { return a.value == b.value; }
};
static_assert(sizeof(host_bool) == 1);

// The host type of each elem, in enum order.
template <gpu::elem E> struct host;
template <> struct host<gpu::elem::f16> { using type = Eigen::half; };
template <> struct host<gpu::elem::bf16> { using type = Eigen::bfloat16; };
template <> struct host<gpu::elem::f32> { using type = float; };
template <> struct host<gpu::elem::f64> { using type = double; };
template <> struct host<gpu::elem::i8> { using type = std::int8_t; };
template <> struct host<gpu::elem::i32> { using type = std::int32_t; };
template <> struct host<gpu::elem::i64> { using type = std::int64_t; };
template <> struct host<gpu::elem::u8> { using type = std::uint8_t; };
template <> struct host<gpu::elem::boolean> { using type = host_bool; };
template <gpu::elem E> using host_t = typename host<E>::type;

// Relative tolerance of results computed in (and rounded to) an elem.
inline double tolerance(gpu::elem e) {
  switch (e) {
    case gpu::elem::f16: return 2e-3;
    case gpu::elem::bf16: return 1.6e-2;
    case gpu::elem::f32: return 2e-6;
    case gpu::elem::f64: return 1e-13;
    default: return 0;
  }
}

} // namespace gpu_test
