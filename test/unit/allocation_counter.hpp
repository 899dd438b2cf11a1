// SPDX-License-Identifier: Apache-2.0
// Counts heap allocations. Including this header (in one translation unit of an executable)
// replaces the C allocation functions (malloc, calloc, realloc, aligned_alloc, posix_memalign,
// memalign) with versions that count while armed and then call glibc's own; operator new, Eigen's
// aligned_malloc and every library in the process allocate through them, so nothing escapes.
// Under AddressSanitizer or ThreadSanitizer the sanitizer owns the allocation functions: nothing
// is replaced, `counting_available` is false and the counts are -1.
#pragma once

// GCC says so with __SANITIZE_*__, Clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TYPEFLOW_TEST_NO_ALLOCATION_COUNTER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TYPEFLOW_TEST_NO_ALLOCATION_COUNTER 1
#endif
#endif

#include <atomic>
#include <cerrno>
#include <cstddef>

namespace typeflow::test {

#ifdef TYPEFLOW_TEST_NO_ALLOCATION_COUNTER
inline constexpr bool counting_available = false;
#else
inline constexpr bool counting_available = true;
#endif
inline std::atomic<bool> counting_allocations{false};
inline std::atomic<long> allocations_counted{0};

// Heap allocations made by `calls` calls of f, after two warm-up calls.
template <class F>
long allocations_per_calls(int calls, F&& f) {
  f();
  f();
  if (!counting_available) return -1;
  allocations_counted.store(0);
  counting_allocations.store(true);
  for (int i = 0; i < calls; ++i) f();
  counting_allocations.store(false);
  return allocations_counted.load();
}

}  // namespace typeflow::test

namespace typeflow::test::detail {
inline void count_allocation() noexcept {
  if (counting_allocations.load(std::memory_order_relaxed)) allocations_counted.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace typeflow::test::detail

#ifndef TYPEFLOW_TEST_NO_ALLOCATION_COUNTER
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);

void* malloc(std::size_t n) {
  typeflow::test::detail::count_allocation();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
  typeflow::test::detail::count_allocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
  typeflow::test::detail::count_allocation();
  return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t alignment, std::size_t n) {
  typeflow::test::detail::count_allocation();
  return __libc_memalign(alignment, n);
}
void* memalign(std::size_t alignment, std::size_t n) {
  typeflow::test::detail::count_allocation();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) {
  typeflow::test::detail::count_allocation();
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}
#endif
