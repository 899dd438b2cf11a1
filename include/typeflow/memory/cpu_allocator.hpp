// SPDX-License-Identifier: Apache-2.0
// cpu_allocator: aligned host memory straight from the global ::operator new (TensorFlow's
// CPUAllocator over port::AlignedMalloc), with lock-free counters and an optional limit.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <string_view>

#include <typeflow/core/buffer.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

// Every block is aligned to max(alignment, 64). The block is preceded by `alignment` bytes (at least
// 64) whose last 16 hold the requested size and the alignment, because the aligned ::operator delete
// needs the alignment back and deallocate(p, bytes) does not carry it. A zero-byte request costs
// that prefix only and yields a unique address.
//
// Counters are in requested bytes. The limit (0: none) applies to the sum of requested bytes in use;
// a request that would pass it fails with resource_exhausted before any memory is taken. Thread-safe.
class cpu_allocator {
 public:
  static constexpr std::string_view name = "cpu";
  static constexpr std::size_t min_alignment = default_alignment;

  cpu_allocator() noexcept = default;
  explicit cpu_allocator(std::size_t bytes_limit) noexcept : limit_(bytes_limit) {}
  cpu_allocator(const cpu_allocator&) = delete;
  cpu_allocator& operator=(const cpu_allocator&) = delete;

  result<void*> allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (auto st = check_alignment(name, alignment); !st.ok()) return st;
    const std::size_t align = std::max(alignment, min_alignment);
    if (bytes > std::numeric_limits<std::size_t>::max() - align)
      return errors::resource_exhausted(name, ": cannot allocate ", bytes, " bytes: the size overflows");
    std::size_t in_use = 0;
    if (!reserve(bytes, in_use))
      return errors::resource_exhausted(name, ": allocating ", bytes, " bytes would exceed the limit of ", limit_,
                                        " bytes; ", stats());
    void* base = ::operator new(align + bytes, std::align_val_t{align}, std::nothrow);
    if (base == nullptr) {
      in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      return errors::resource_exhausted(name, ": the system is out of memory allocating ", bytes,
                                        " bytes with alignment ", alignment);
    }
    char* p = static_cast<char*>(base) + align;
    const header h{bytes, align};
    std::memcpy(p - sizeof(header), &h, sizeof h);
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    raise_to(peak_, in_use);
    raise_to(largest_alloc_, bytes);
    return static_cast<void*>(p);
  }

  // `bytes` must be what was requested (checked in debug builds); nullptr is ignored.
  void deallocate(void* p, [[maybe_unused]] std::size_t bytes) noexcept {
    if (p == nullptr) return;
    header h;
    std::memcpy(&h, static_cast<char*>(p) - sizeof(header), sizeof h);
    assert(h.bytes == bytes && "cpu_allocator::deallocate: size differs from the one requested");
    in_use_.fetch_sub(h.bytes, std::memory_order_relaxed);
    ::operator delete(static_cast<char*>(p) - h.alignment, std::align_val_t{h.alignment});
  }

  allocator_stats stats() const noexcept {
    allocator_stats s;
    s.bytes_in_use = in_use_.load(std::memory_order_relaxed);
    s.peak_bytes_in_use = std::max(peak_.load(std::memory_order_relaxed), s.bytes_in_use);
    s.num_allocs = num_allocs_.load(std::memory_order_relaxed);
    s.bytes_limit = limit_;
    s.largest_alloc_size = largest_alloc_.load(std::memory_order_relaxed);
    return s;
  }

  std::size_t bytes_limit() const noexcept { return limit_; }

 private:
  struct header {
    std::size_t bytes;
    std::size_t alignment;
  };
  static_assert(sizeof(header) <= min_alignment, "cpu_allocator: the block header must fit in the minimum prefix");

  // Adds `bytes` to the bytes in use unless that passes the limit; `in_use` receives the new total.
  bool reserve(std::size_t bytes, std::size_t& in_use) noexcept {
    if (limit_ == 0) {
      in_use = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
      return true;
    }
    std::size_t cur = in_use_.load(std::memory_order_relaxed);
    do {
      if (cur > limit_ || bytes > limit_ - cur) return false;
    } while (!in_use_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
    in_use = cur + bytes;
    return true;
  }

  static void raise_to(std::atomic<std::size_t>& a, std::size_t v) noexcept {
    std::size_t cur = a.load(std::memory_order_relaxed);
    while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
  }

  std::size_t limit_ = 0;
  std::atomic<std::size_t> in_use_{0};
  std::atomic<std::size_t> peak_{0};
  std::atomic<std::size_t> num_allocs_{0};
  std::atomic<std::size_t> largest_alloc_{0};
};

static_assert(allocator<cpu_allocator>, "cpu_allocator must satisfy typeflow::allocator");

} // namespace typeflow
