// SPDX-License-Identifier: Apache-2.0
// tracking_allocator<A>: passes every request to A and counts what goes through it per step (bytes,
// peak, allocations), as TensorFlow's TrackingAllocator does for a kernel's memory in step stats.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

// What went through a tracking allocator since the last reset_step(), in requested bytes.
struct step_memory_record {
  std::size_t bytes_allocated = 0;
  std::size_t bytes_deallocated = 0;
  std::size_t num_allocs = 0;
  std::size_t num_deallocs = 0;
  std::size_t num_failed_allocs = 0;
  std::size_t peak_bytes_in_use = 0;  // the most bytes in use through the tracker during the step,
                                      // counting blocks still live from earlier steps
  std::size_t bytes_in_use = 0;       // when the record was taken

  constexpr void append_to(detail::text& out) const {
    detail::append(out, detail::cat("bytes_allocated=", bytes_allocated, ", bytes_deallocated=", bytes_deallocated,
                                    ", num_allocs=", num_allocs, ", num_deallocs=", num_deallocs,
                                    ", num_failed_allocs=", num_failed_allocs, ", peak_bytes_in_use=",
                                    peak_bytes_in_use, ", bytes_in_use=", bytes_in_use));
  }
  friend constexpr bool operator==(const step_memory_record&, const step_memory_record&) = default;
};

// A is an allocator type, held by value and built in place (tracking_allocator<cpu_allocator>
// t(std::in_place)), or a reference to one that lives elsewhere (tracking_allocator t(bfc) deduces
// A = bfc_allocator<...>&). The counts trust the `bytes` given to deallocate. stats() is the
// wrapped allocator's. Thread-safe when A is.
template <class A>
class tracking_allocator {
 public:
  using inner_type = std::remove_reference_t<A>;
  static_assert(allocator<inner_type>,
                "tracking_allocator<A> requires A (or the type it refers to) to satisfy typeflow::allocator");
  static constexpr std::string_view name = "tracking";

  explicit tracking_allocator(inner_type& inner) requires std::is_lvalue_reference_v<A> : inner_(inner) {}
  template <class... Args>
  explicit tracking_allocator(std::in_place_t, Args&&... args) : inner_(std::forward<Args>(args)...) {}
  tracking_allocator(const tracking_allocator&) = delete;
  tracking_allocator& operator=(const tracking_allocator&) = delete;

  result<void*> allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    auto p = inner_.allocate(bytes, alignment);
    std::lock_guard lock(mu_);
    if (!p.ok()) {
      ++step_.num_failed_allocs;
      return p;
    }
    step_.bytes_allocated += bytes;
    ++step_.num_allocs;
    step_.bytes_in_use += bytes;
    step_.peak_bytes_in_use = std::max(step_.peak_bytes_in_use, step_.bytes_in_use);
    return p;
  }

  void deallocate(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    {
      std::lock_guard lock(mu_);
      step_.bytes_deallocated += bytes;
      ++step_.num_deallocs;
      step_.bytes_in_use -= std::min(bytes, step_.bytes_in_use);
    }
    inner_.deallocate(p, bytes);
  }

  allocator_stats stats() const { return inner_.stats(); }

  step_memory_record step_record() const {
    std::lock_guard lock(mu_);
    return step_;
  }

  // Starts a new step and returns the record of the one that ended. Blocks still live carry over
  // into the new step's bytes_in_use and peak.
  step_memory_record reset_step() {
    std::lock_guard lock(mu_);
    step_memory_record done = step_;
    step_ = step_memory_record{};
    step_.bytes_in_use = done.bytes_in_use;
    step_.peak_bytes_in_use = done.bytes_in_use;
    return done;
  }

  inner_type& inner() noexcept { return inner_; }
  const inner_type& inner() const noexcept { return inner_; }

 private:
  A inner_;
  mutable std::mutex mu_;
  step_memory_record step_;
};

template <class A>
tracking_allocator(A&) -> tracking_allocator<A&>;

} // namespace typeflow
