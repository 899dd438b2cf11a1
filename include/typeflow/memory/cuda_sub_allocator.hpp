// SPDX-License-Identifier: Apache-2.0
// Sub-allocators over the CUDA shim (libtypeflow_cuda): the regions a bfc_allocator pools, in device
// memory of one GPU or in pinned host memory (TensorFlow's DeviceMemAllocator and HostMemAllocator).
//   tf::bfc_allocator<tf::cuda_device_sub_allocator> gpu_pool(tf::bfc_options{...}, std::in_place, 0);
// A program that uses them links libtypeflow_cuda (pkg-config typeflow-cuda).
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>

#include <typeflow/cuda/runtime.hpp>
#include <typeflow/memory/sub_allocator.hpp>

namespace typeflow {

// Regions of device memory of GPU:ordinal from cudaMalloc (256-byte aligned). A region that cannot
// be had (the device is full, or there is no device) is nullptr, which the pool turns into its
// resource_exhausted with the request's size; last_error() keeps the shim's own message.
class cuda_device_sub_allocator {
 public:
  explicit cuda_device_sub_allocator(int ordinal = 0) noexcept : ordinal_(ordinal) {}

  void* alloc(std::size_t bytes, std::size_t alignment) {
    auto p = gpu::device_alloc(ordinal_, bytes);
    if (!p.ok()) {
      last_error_ = p.status();
      return nullptr;
    }
    if (reinterpret_cast<std::uintptr_t>(*p) % alignment != 0) {  // cudaMalloc promises 256 only
      (void)gpu::device_free(ordinal_, *p);
      last_error_ = errors::invalid_argument("cudaMalloc gave an address not aligned to ", alignment, " bytes");
      return nullptr;
    }
    return *p;
  }
  void free(void* p, std::size_t /*bytes*/) { (void)gpu::device_free(ordinal_, p); }

  int ordinal() const noexcept { return ordinal_; }
  const status& last_error() const noexcept { return last_error_; }

 private:
  int ordinal_;
  status last_error_;
};

// Regions of page-locked host memory (cudaHostAlloc): staging buffers for asynchronous copies.
class cuda_pinned_sub_allocator {
 public:
  void* alloc(std::size_t bytes, std::size_t alignment) {
    auto p = gpu::pinned_alloc(bytes);
    if (!p.ok()) {
      last_error_ = p.status();
      return nullptr;
    }
    if (reinterpret_cast<std::uintptr_t>(*p) % alignment != 0) {
      (void)gpu::pinned_free(*p);
      last_error_ = errors::invalid_argument("cudaHostAlloc gave an address not aligned to ", alignment, " bytes");
      return nullptr;
    }
    return *p;
  }
  void free(void* p, std::size_t /*bytes*/) { (void)gpu::pinned_free(p); }

  const status& last_error() const noexcept { return last_error_; }

 private:
  status last_error_;
};

static_assert(sub_allocator<cuda_device_sub_allocator>, "cuda_device_sub_allocator must satisfy typeflow::sub_allocator");
static_assert(sub_allocator<cuda_pinned_sub_allocator>, "cuda_pinned_sub_allocator must satisfy typeflow::sub_allocator");

} // namespace typeflow
