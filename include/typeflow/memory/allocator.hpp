// SPDX-License-Identifier: Apache-2.0
// The allocator concept and the statistics every allocator reports. Allocators are types composed
// as templates (bfc_allocator<host_sub_allocator>, guard_allocator<cpu_allocator&>), not objects
// found in a registry at run time as TensorFlow's AllocatorFactory does.
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <typeflow/core/buffer.hpp>  // default_alignment
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow {

// A snapshot of an allocator's counters, as TensorFlow's AllocatorStats. Sizes are in bytes. What a
// "byte in use" is depends on the allocator and is said where it is defined: requested bytes for
// cpu_allocator, whole chunks (multiples of 256) for bfc_allocator.
struct allocator_stats {
  std::size_t bytes_in_use = 0;
  std::size_t peak_bytes_in_use = 0;
  std::size_t num_allocs = 0;           // successful allocations since construction
  std::size_t bytes_limit = 0;          // 0: no limit
  std::size_t largest_alloc_size = 0;
  std::size_t largest_free_block = 0;   // 0 for allocators that keep no free memory (cpu_allocator)
  std::size_t bytes_reserved = 0;       // held from the layer below, in use or not (BFC: its regions);
                                        // 0 for allocators that pass each request through

  // "bytes_in_use=512, peak_bytes_in_use=1024, num_allocs=3, bytes_limit=none, ..."
  constexpr void append_to(detail::text& out) const {
    detail::append(out, detail::cat("bytes_in_use=", bytes_in_use, ", peak_bytes_in_use=", peak_bytes_in_use,
                                    ", num_allocs=", num_allocs, ", bytes_limit="));
    if (bytes_limit == 0) out.append("none");
    else detail::append(out, bytes_limit);
    detail::append(out, detail::cat(", largest_alloc_size=", largest_alloc_size,
                                    ", largest_free_block=", largest_free_block, ", bytes_reserved=", bytes_reserved));
  }
  std::string to_string() const {
    detail::text t;
    append_to(t);
    return t.str();
  }
  friend constexpr bool operator==(const allocator_stats&, const allocator_stats&) = default;
};

// allocate(bytes, alignment) -> the address of `bytes` bytes aligned to `alignment`, or a status:
// invalid_argument for an alignment that is not a power of two, resource_exhausted when the memory
// or the allocator's limit is exhausted. A zero-byte request yields a unique, non-null address that
// must be given back like any other. deallocate(p, bytes) takes the `bytes` that were requested.
// `name` is a constant ("cpu", "bfc") used in messages.
//
// Satisfied by cpu_allocator and bfc_allocator<host_sub_allocator>; not by std::allocator<char>
// (untyped bytes with an alignment, a status instead of an exception, and stats are all missing).
template <class A>
concept allocator = requires(A& a, const A& ca, void* p, std::size_t n) {
  { A::name } -> std::convertible_to<std::string_view>;
  typename std::integral_constant<std::size_t, std::string_view(A::name).size()>;  // a constant expression
  { a.allocate(n, n) } -> std::same_as<result<void*>>;
  { a.deallocate(p, n) } -> std::same_as<void>;
  { ca.stats() } -> std::same_as<allocator_stats>;
};

// An allocator whose instances are interchangeable, so that a block may go back through any
// instance and nothing has to outlive the one that served it (std::allocator_traits'
// is_always_equal): by default an empty, default-constructible type, such as heap_allocator.
// cpu_allocator (counters) and bfc_allocator (a pool) are not. Specialise it to false for an empty
// allocator whose instances differ (one that keys global state on its address).
template <class A>
inline constexpr bool is_stateless_allocator = std::is_empty_v<A> && std::is_default_constructible_v<A>;

constexpr bool is_power_of_two(std::size_t n) noexcept { return n != 0 && (n & (n - 1)) == 0; }

// The check every allocator makes first: "bfc: alignment 48 is not a power of two".
constexpr status check_alignment(std::string_view allocator_name, std::size_t alignment) {
  if (!is_power_of_two(alignment))
    return errors::invalid_argument(allocator_name, ": alignment ", alignment, " is not a power of two");
  return ok_status();
}

namespace detail {

// Rounds n up to a multiple of the power of two `a`. Precondition: no overflow.
constexpr std::size_t align_up(std::size_t n, std::size_t a) noexcept { return (n + a - 1) & ~(a - 1); }

inline bool is_aligned(const void* p, std::size_t a) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}

// An address in messages: cat("block ", address{p}) -> "block 0x7f3a2c000100".
struct address {
  const void* p;
  void append_to(text& out) const {
    auto v = reinterpret_cast<std::uintptr_t>(p);
    char digits[2 * sizeof v]{};
    int n = 0;
    do { digits[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v != 0);
    out.append("0x");
    while (n > 0) out.push_back(digits[--n]);
  }
};

} // namespace detail

} // namespace typeflow
