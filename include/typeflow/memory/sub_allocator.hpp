// SPDX-License-Identifier: Apache-2.0
// The sub-allocator concept: where a pooling allocator (bfc_allocator) gets its large regions from,
// as TensorFlow's SubAllocator (host memory here; device memory from the CUDA shim later).
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstddef>

#include <typeflow/memory/cpu_allocator.hpp>

namespace typeflow {

// alloc(bytes, alignment) -> `bytes` bytes aligned to `alignment` (a power of two, at least 256),
// or nullptr when there is no memory; free(p, bytes) gives back a region with the size it was
// allocated with. Called rarely (once per region) and always under the pool's lock, so it need not
// be fast or thread-safe on its own.
//
// Satisfied by host_sub_allocator; not by cpu_allocator (an allocator returns a result<void*> with
// a status; a sub-allocator answers nullptr and leaves the message to the pool).
template <class S>
concept sub_allocator = requires(S& s, void* p, std::size_t n) {
  { s.alloc(n, n) } -> std::same_as<void*>;
  { s.free(p, n) } -> std::same_as<void>;
};

// Host memory from the global ::operator new through a cpu_allocator (so regions are counted there).
class host_sub_allocator {
 public:
  host_sub_allocator() = default;
  host_sub_allocator(host_sub_allocator&&) = delete;  // a cpu_allocator's counters do not move

  void* alloc(std::size_t bytes, std::size_t alignment) { return memory_.allocate(bytes, alignment).value_or(nullptr); }
  void free(void* p, std::size_t bytes) { memory_.deallocate(p, bytes); }

  // Region bytes currently held from the system.
  std::size_t bytes_in_use() const noexcept { return memory_.stats().bytes_in_use; }

 private:
  cpu_allocator memory_;
};

static_assert(sub_allocator<host_sub_allocator>, "host_sub_allocator must satisfy typeflow::sub_allocator");

} // namespace typeflow
