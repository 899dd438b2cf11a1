// SPDX-License-Identifier: Apache-2.0
// buffer: reference-counted memory that remembers how to give itself back to whoever allocated it.
#pragma once

#include <typeflow/fwd.hpp>

#include <atomic>
#include <cstddef>
#include <new>
#include <utility>

namespace typeflow {

// How a buffer returns its memory: release(context, data, bytes). Allocators (memory/) supply one.
struct buffer_release {
  void (*release)(void* context, void* data, std::size_t bytes) = nullptr;
  void* context = nullptr;
};

// Default alignment of tensor data: a cache line, enough for AVX-512 loads.
inline constexpr std::size_t default_alignment = 64;

class buffer {
 public:
  // Takes ownership of `data`; `how` gives it back when the last reference goes.
  static buffer* adopt(void* data, std::size_t bytes, buffer_release how) { return new buffer(data, bytes, how); }

  // Aligned memory from the global operator new; nullptr when the system is out of memory.
  static buffer* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{alignment}, std::nothrow);
    if (!p) return nullptr;
    // The alignment travels in the context pointer so the matching delete can be called.
    return adopt(p, bytes,
                 {[](void* ctx, void* d, std::size_t) {
                    ::operator delete(d, std::align_val_t{reinterpret_cast<std::size_t>(ctx)});
                  },
                  reinterpret_cast<void*>(alignment)});
  }

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  long use_count() const noexcept { return refs_.load(std::memory_order_acquire); }

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;

 private:
  buffer(void* data, std::size_t bytes, buffer_release how) : data_(data), bytes_(bytes), how_(how) {}
  ~buffer() {
    if (how_.release) how_.release(how_.context, data_, bytes_);
  }

  void* data_;
  std::size_t bytes_;
  buffer_release how_;
  std::atomic<long> refs_{1};
};

// An owning, copyable handle to a buffer (an intrusive pointer).
class buffer_ref {
 public:
  buffer_ref() noexcept = default;
  explicit buffer_ref(buffer* adopted) noexcept : p_(adopted) {}  // takes over one reference
  buffer_ref(const buffer_ref& o) noexcept : p_(o.p_) { if (p_) p_->retain(); }
  buffer_ref(buffer_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  buffer_ref& operator=(buffer_ref o) noexcept { std::swap(p_, o.p_); return *this; }
  ~buffer_ref() { if (p_) p_->release(); }

  buffer* get() const noexcept { return p_; }
  buffer* operator->() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  buffer* p_ = nullptr;
};

} // namespace typeflow
