// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime as libtypeflow_cuda gives it: devices and their properties, device and pinned host
// memory, streams, events, host callbacks and asynchronous copies. Every call answers a status that
// names the CUDA call, its arguments and the device; none throws, none aborts.
//
// No device, or no driver, is a normal answer: device_count() is 0 and unavailable_reason() says why.
// A call that needs a device then fails with failed_precondition, a wrong ordinal with
// invalid_argument, and a full device with resource_exhausted.
#pragma once

#include <cstddef>
#include <string>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>

namespace typeflow::gpu {

struct device_properties {
  int ordinal = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int compute_major = 0;     // 9 for sm_90
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory = 0;           // bytes
  std::size_t l2_cache_bytes = 0;
  std::size_t shared_memory_per_block = 0;  // bytes, without opting in to more
  int max_threads_per_block = 0;
};

struct memory_info {
  std::size_t free = 0;   // bytes
  std::size_t total = 0;
};

// CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies): 0 when there are none or no driver.
TYPEFLOW_CUDA_API result<int> device_count();
// Why device_count() is 0 ("no CUDA driver is installed (cudaErrorInsufficientDriver)"); empty when
// there are devices.
TYPEFLOW_CUDA_API std::string unavailable_reason();
TYPEFLOW_CUDA_API result<device_properties> properties(int ordinal);
TYPEFLOW_CUDA_API result<memory_info> memory(int ordinal);

// Device memory (cudaMalloc: 256-byte aligned). device_free(nullptr) is ok.
TYPEFLOW_CUDA_API result<void*> device_alloc(int ordinal, std::size_t bytes);
TYPEFLOW_CUDA_API status device_free(int ordinal, void* p);
// Page-locked host memory, which asynchronous copies need to overlap with compute.
TYPEFLOW_CUDA_API result<void*> pinned_alloc(std::size_t bytes);
TYPEFLOW_CUDA_API status pinned_free(void* p);

class event;

// An ordered queue of work on one device. Movable, not copyable; destroying it waits for nothing
// (CUDA releases the stream once its work is done).
class TYPEFLOW_CUDA_API stream {
 public:
  enum class priority { normal, high };

  static result<stream> create(int ordinal, priority p = priority::normal);

  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;
  ~stream();

  int ordinal() const noexcept { return ordinal_; }
  // The cudaStream_t, for code of one's own built with nvcc (cast it back there).
  void* native() const noexcept { return handle_; }

  // Waits until all work enqueued so far has finished; an error of that work comes back here.
  status synchronize() const;
  // true when all work enqueued so far has finished.
  result<bool> done() const;
  // Work enqueued after this call waits until `e` has passed (e may be on another stream or device).
  status wait(const event& e) const;
  // Runs fn(arg) on a driver thread once the work before it has finished; fn must not call CUDA.
  status launch_host_func(void (*fn)(void*), void* arg) const;

 private:
  stream(int ordinal, void* handle) noexcept : ordinal_(ordinal), handle_(handle) {}
  int ordinal_ = -1;
  void* handle_ = nullptr;
};

// A marker in a stream: when it has passed, everything enqueued before it has finished.
class TYPEFLOW_CUDA_API event {
 public:
  // timing: the event records a timestamp (elapsed_ms); otherwise it is cheaper to record and wait on.
  static result<event> create(int ordinal, bool timing = false);

  event(event&& other) noexcept;
  event& operator=(event&& other) noexcept;
  ~event();

  int ordinal() const noexcept { return ordinal_; }
  void* native() const noexcept { return handle_; }

  status record(const stream& s);
  result<bool> done() const;
  status synchronize() const;

  // Milliseconds between two recorded timing events that have both passed.
  static result<float> elapsed_ms(const event& start, const event& end);

 private:
  event(int ordinal, void* handle) noexcept : ordinal_(ordinal), handle_(handle) {}
  int ordinal_ = -1;
  void* handle_ = nullptr;
};

enum class copy_kind { host_to_device, device_to_host, device_to_device, host_to_host };

constexpr std::string_view to_string(copy_kind k) noexcept {
  switch (k) {
    case copy_kind::host_to_device: return "host to device";
    case copy_kind::device_to_host: return "device to host";
    case copy_kind::device_to_device: return "device to device";
    case copy_kind::host_to_host: return "host to host";
  }
  return "invalid";
}

// Enqueues a copy of `bytes` bytes on `s`. Host memory must be pinned for the copy to be asynchronous
// (pageable memory makes CUDA stage it, and the call returns when the source has been read).
TYPEFLOW_CUDA_API status copy_async(const stream& s, void* dst, const void* src, std::size_t bytes, copy_kind kind);
// Enqueues setting `bytes` bytes of device memory to `value`.
TYPEFLOW_CUDA_API status set_async(const stream& s, void* dst, unsigned char value, std::size_t bytes);

} // namespace typeflow::gpu
