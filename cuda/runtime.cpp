// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime shim: devices, memory, streams, events, copies (include/typeflow/cuda/runtime.hpp).
#include <typeflow/cuda/runtime.hpp>

#include <cuda_runtime_api.h>

#include <utility>

#include "detail/check.hpp"

namespace typeflow::gpu {

namespace {

// The answer of cudaGetDeviceCount, asked once: it is what every later call checks an ordinal
// against, and asking again after a failed driver load would only repeat the failure.
struct device_census {
  cudaError_t error = cudaSuccess;
  int count = 0;
};

const device_census& census() {
  static const device_census answer = [] {
    device_census c;
    c.error = cudaGetDeviceCount(&c.count);
    if (c.error != cudaSuccess) {
      (void)cudaGetLastError();
      c.count = 0;
    }
    return c;
  }();
  return answer;
}

bool is_no_device(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
         e == cudaErrorDevicesUnavailable || e == cudaErrorInitializationError ||
         e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice;
}

// Makes `ordinal` current for the scope and restores the thread's device after (a destructor must not
// change which device later calls of the thread go to). Errors are dropped: destructors report none.
class device_scope {
 public:
  explicit device_scope(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != ordinal) (void)cudaSetDevice(ordinal);
    restore_ = previous_ >= 0 && previous_ != ordinal;
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;
  ~device_scope() {
    if (restore_) (void)cudaSetDevice(previous_);
    (void)cudaGetLastError();
  }

 private:
  int previous_ = -1;
  bool restore_ = false;
};

cudaStream_t native_stream(const stream& s) { return static_cast<cudaStream_t>(s.native()); }

} // namespace

namespace detail {

status use_device(int ordinal) {
  const auto& c = census();
  if (c.count == 0)
    return errors::failed_precondition("GPU:", ordinal, " was asked for, but this process sees no CUDA device: ",
                                       unavailable_reason());
  if (ordinal < 0 || ordinal >= c.count) {
    if (c.count == 1) return errors::invalid_argument("GPU:", ordinal, " does not exist: this process sees one CUDA device (GPU:0)");
    return errors::invalid_argument("GPU:", ordinal, " does not exist: this process sees ", c.count,
                                    " CUDA devices (GPU:0 to GPU:", c.count - 1, ")");
  }
  return cuda_status(cudaSetDevice(ordinal), "cudaSetDevice", "GPU:", ordinal);
}

status use_stream(const stream& s, std::string_view op) {
  if (s.native() == nullptr) return errors::failed_precondition(op, ": the stream is moved-from");
  return use_device(s.ordinal());
}

} // namespace detail

result<int> device_count() {
  const auto& c = census();
  if (c.error != cudaSuccess && !is_no_device(c.error))
    return detail::cuda_status(c.error, "cudaGetDeviceCount");
  return c.count;
}

std::string unavailable_reason() {
  const auto& c = census();
  if (c.count > 0) return {};
  if (c.error == cudaSuccess) return "the CUDA driver reports no device";
  std::string why;
  switch (c.error) {
    case cudaErrorInsufficientDriver: why = "no CUDA driver is installed, or it is older than the runtime"; break;
    case cudaErrorNoDevice: why = "the CUDA driver finds no device (check CUDA_VISIBLE_DEVICES)"; break;
    case cudaErrorStubLibrary: why = "the CUDA driver is the toolkit's stub library, not a real driver"; break;
    default: why = cudaGetErrorString(c.error); break;
  }
  return why + " (" + cudaGetErrorName(c.error) + ")";
}

result<device_properties> properties(int ordinal) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal));
  cudaDeviceProp p{};
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties",
                                                    "GPU:", ordinal));
  device_properties out;
  out.ordinal = ordinal;
  out.name = p.name;
  out.compute_major = p.major;
  out.compute_minor = p.minor;
  out.multiprocessors = p.multiProcessorCount;
  out.total_memory = p.totalGlobalMem;
  out.l2_cache_bytes = static_cast<std::size_t>(p.l2CacheSize);
  out.shared_memory_per_block = p.sharedMemPerBlock;
  out.max_threads_per_block = p.maxThreadsPerBlock;
  return out;
}

result<memory_info> memory(int ordinal) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal));
  memory_info m;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(cudaMemGetInfo(&m.free, &m.total), "cudaMemGetInfo", "GPU:", ordinal));
  return m;
}

result<void*> device_alloc(int ordinal, std::size_t bytes) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal));
  void* p = nullptr;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(
      detail::cuda_status(cudaMalloc(&p, bytes), "cudaMalloc", bytes, " bytes on GPU:", ordinal));
  return p;
}

status device_free(int ordinal, void* p) {
  if (p == nullptr) return ok_status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal));
  return detail::cuda_status(cudaFree(p), "cudaFree", "GPU:", ordinal);
}

result<void*> pinned_alloc(std::size_t bytes) {
  if (census().count == 0)
    return errors::failed_precondition("pinned host memory (", bytes, " bytes) needs a CUDA device: ",
                                       unavailable_reason());
  void* p = nullptr;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(
      detail::cuda_status(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc", bytes, " bytes"));
  return p;
}

status pinned_free(void* p) {
  if (p == nullptr) return ok_status();
  return detail::cuda_status(cudaFreeHost(p), "cudaFreeHost");
}

// --- stream ---

result<stream> stream::create(int ordinal, priority prio) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal));
  int least = 0, greatest = 0;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                                                    "cudaDeviceGetStreamPriorityRange", "GPU:", ordinal));
  cudaStream_t s = nullptr;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
      cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, prio == priority::high ? greatest : least),
      "cudaStreamCreateWithPriority", "GPU:", ordinal));
  return stream(ordinal, s);
}

stream::stream(stream&& other) noexcept
    : ordinal_(std::exchange(other.ordinal_, -1)), handle_(std::exchange(other.handle_, nullptr)) {}

stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    stream gone(std::move(*this));
    ordinal_ = std::exchange(other.ordinal_, -1);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

stream::~stream() {
  if (handle_ != nullptr) {
    const device_scope on(ordinal_);
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
  }
}

status stream::synchronize() const {
  if (handle_ == nullptr) return errors::failed_precondition("stream::synchronize on a moved-from stream");
  return detail::cuda_status(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)), "cudaStreamSynchronize",
                             "GPU:", ordinal_);
}

result<bool> stream::done() const {
  if (handle_ == nullptr) return errors::failed_precondition("stream::done on a moved-from stream");
  const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(handle_));
  if (e == cudaErrorNotReady) { (void)cudaGetLastError(); return false; }
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(e, "cudaStreamQuery", "GPU:", ordinal_));
  return true;
}

status stream::wait(const event& e) const {
  if (handle_ == nullptr || e.native() == nullptr)
    return errors::failed_precondition("stream::wait with a moved-from stream or event");
  return detail::cuda_status(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_), static_cast<cudaEvent_t>(e.native()), 0),
      "cudaStreamWaitEvent", "stream on GPU:", ordinal_, ", event on GPU:", e.ordinal());
}

status stream::launch_host_func(void (*fn)(void*), void* arg) const {
  if (handle_ == nullptr) return errors::failed_precondition("stream::launch_host_func on a moved-from stream");
  if (fn == nullptr) return errors::invalid_argument("stream::launch_host_func: the function is null");
  return detail::cuda_status(cudaLaunchHostFunc(static_cast<cudaStream_t>(handle_), fn, arg), "cudaLaunchHostFunc",
                             "GPU:", ordinal_);
}

// --- event ---

result<event> event::create(int ordinal, bool timing) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal));
  cudaEvent_t e = nullptr;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
      cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreateWithFlags",
      "GPU:", ordinal));
  return event(ordinal, e);
}

event::event(event&& other) noexcept
    : ordinal_(std::exchange(other.ordinal_, -1)), handle_(std::exchange(other.handle_, nullptr)) {}

event& event::operator=(event&& other) noexcept {
  if (this != &other) {
    event gone(std::move(*this));
    ordinal_ = std::exchange(other.ordinal_, -1);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

event::~event() {
  if (handle_ != nullptr) {
    const device_scope on(ordinal_);
    (void)cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
  }
}

status event::record(const stream& s) {
  if (handle_ == nullptr || s.native() == nullptr)
    return errors::failed_precondition("event::record with a moved-from stream or event");
  if (s.ordinal() != ordinal_)
    return errors::invalid_argument("event::record: the event belongs to GPU:", ordinal_, " but the stream to GPU:",
                                    s.ordinal());
  return detail::cuda_status(cudaEventRecord(static_cast<cudaEvent_t>(handle_), native_stream(s)), "cudaEventRecord",
                             "GPU:", ordinal_);
}

result<bool> event::done() const {
  if (handle_ == nullptr) return errors::failed_precondition("event::done on a moved-from event");
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
  if (e == cudaErrorNotReady) { (void)cudaGetLastError(); return false; }
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(e, "cudaEventQuery", "GPU:", ordinal_));
  return true;
}

status event::synchronize() const {
  if (handle_ == nullptr) return errors::failed_precondition("event::synchronize on a moved-from event");
  return detail::cuda_status(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)), "cudaEventSynchronize", "GPU:",
                             ordinal_);
}

result<float> event::elapsed_ms(const event& start, const event& end) {
  if (start.handle_ == nullptr || end.handle_ == nullptr)
    return errors::failed_precondition("event::elapsed_ms with a moved-from event");
  float ms = 0;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.handle_), static_cast<cudaEvent_t>(end.handle_)),
      "cudaEventElapsedTime", "GPU:", start.ordinal_));
  return ms;
}

// --- copies ---

status copy_async(const stream& s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
  if (s.native() == nullptr) return errors::failed_precondition("copy_async on a moved-from stream");
  if (bytes == 0) return ok_status();
  if (dst == nullptr || src == nullptr)
    return errors::invalid_argument("copy_async (", to_string(kind), ", ", bytes, " bytes): ",
                                    dst == nullptr ? "the destination" : "the source", " is null");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(s.ordinal()));
  // The direction from the pointers (unified addressing): `kind` says what the caller meant, and a
  // block of pinned host memory that stands in for device memory (cuda_spilling) copies as one.
  return detail::cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, native_stream(s)), "cudaMemcpyAsync",
                             to_string(kind), ", ", bytes, " bytes, GPU:", s.ordinal());
}

status set_async(const stream& s, void* dst, unsigned char value, std::size_t bytes) {
  if (s.native() == nullptr) return errors::failed_precondition("set_async on a moved-from stream");
  if (bytes == 0) return ok_status();
  if (dst == nullptr) return errors::invalid_argument("set_async (", bytes, " bytes): the destination is null");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(s.ordinal()));
  return detail::cuda_status(cudaMemsetAsync(dst, value, bytes, native_stream(s)), "cudaMemsetAsync", bytes,
                             " bytes, GPU:", s.ordinal());
}

} // namespace typeflow::gpu
