// SPDX-License-Identifier: Apache-2.0
// heap_allocator: aligned memory from the C heap with no state at all, the allocator of the default
// cpu and thread_pool policies.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <string_view>

#include <typeflow/core/buffer.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

// std::aligned_alloc and std::free, which is what the aligned ::operator new does underneath (the
// count of heap calls per tensor is the same as tensor::allocate's). Every block is aligned to
// max(alignment, 64) and its size rounded up to a multiple of that (C's rule for aligned_alloc); a
// zero-byte request gets a block of its own. free() needs neither size nor alignment, so nothing is
// stored beside the block and deallocate ignores `bytes`.
//
// No counters and no limit: stats() is all zeros. Keeping counts would put shared atomics on every
// tensor of every step; cpu_allocator counts, tracking_allocator<cpu_allocator> records steps.
//
// An empty type whose instances are interchangeable (a block from one may go to any other), so a
// policy holding one needs nothing to outlive it: is_stateless_allocator<heap_allocator> is true.
class heap_allocator {
 public:
  static constexpr std::string_view name = "heap";

  static result<void*> allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (auto st = check_alignment(name, alignment); !st.ok()) return st;
    const std::size_t align = std::max(alignment, default_alignment);
    if (bytes > std::numeric_limits<std::size_t>::max() - align)
      return errors::resource_exhausted(name, ": cannot allocate ", bytes, " bytes: the size overflows");
    void* p = std::aligned_alloc(align, bytes == 0 ? align : detail::align_up(bytes, align));
    if (p == nullptr)
      return errors::resource_exhausted(name, ": the system is out of memory allocating ", bytes,
                                        " bytes with alignment ", alignment);
    return p;
  }

  // nullptr is ignored.
  static void deallocate(void* p, std::size_t /*bytes*/) noexcept { std::free(p); }

  static allocator_stats stats() noexcept { return {}; }
};

static_assert(allocator<heap_allocator>, "heap_allocator must satisfy typeflow::allocator");

} // namespace typeflow
