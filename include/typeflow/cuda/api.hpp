// SPDX-License-Identifier: Apache-2.0
// What every header of libtypeflow_cuda's public interface shares: the export macro, the element
// types the library knows, and the macro that lets an inline function of these headers run on both
// sides (host code built by any C++20 compiler, kernels built by nvcc inside the library).
// These headers include the standard library and core/status.hpp only: no CUDA, Hana or Eigen type
// reaches a user's translation unit, which compiles with g++ or clang++ alone and links the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

// Symbols the shared library exports (it is built with hidden visibility).
#if defined(__GNUC__) || defined(__clang__)
#define TYPEFLOW_CUDA_API __attribute__((visibility("default")))
#else
#define TYPEFLOW_CUDA_API
#endif

// An inline function both host code and the library's kernels call.
#ifdef __CUDACC__
#define TYPEFLOW_HOST_DEVICE __host__ __device__
#else
#define TYPEFLOW_HOST_DEVICE
#endif

namespace typeflow::gpu {

// The element types of the library's kernels, in the order of typeflow::dtype, so that one converts to
// the other by value (test_cuda_host checks it; this header cannot include core/dtype.hpp, which
// needs Hana and Eigen).
enum class elem : std::uint8_t { f16, bf16, f32, f64, i8, i32, i64, u8, boolean };

inline constexpr int num_elems = 9;

constexpr std::string_view to_string(elem e) noexcept {
  switch (e) {
    case elem::f16: return "f16";
    case elem::bf16: return "bf16";
    case elem::f32: return "f32";
    case elem::f64: return "f64";
    case elem::i8: return "i8";
    case elem::i32: return "i32";
    case elem::i64: return "i64";
    case elem::u8: return "u8";
    case elem::boolean: return "bool";
  }
  return "invalid";
}

// Bytes of one element; 0 for a value outside the enumeration.
constexpr std::size_t size_of(elem e) noexcept {
  switch (e) {
    case elem::f16: case elem::bf16: return 2;
    case elem::f32: case elem::i32: return 4;
    case elem::f64: case elem::i64: return 8;
    case elem::i8: case elem::u8: case elem::boolean: return 1;
  }
  return 0;
}

constexpr bool is_valid(elem e) noexcept { return static_cast<int>(e) < num_elems; }
constexpr bool is_floating(elem e) noexcept {
  return e == elem::f16 || e == elem::bf16 || e == elem::f32 || e == elem::f64;
}
constexpr bool is_integer(elem e) noexcept {
  return e == elem::i8 || e == elem::i32 || e == elem::i64 || e == elem::u8;
}

} // namespace typeflow::gpu
