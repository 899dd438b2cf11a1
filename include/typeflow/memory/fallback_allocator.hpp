// SPDX-License-Identifier: Apache-2.0
// fallback_allocator<Primary, Secondary>: serves from Primary and, when Primary is exhausted, from
// Secondary (device memory spilling to host memory, as TensorFlow's GPUVMemAllocator). Each block
// goes back to the allocator that served it.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

// What the secondary allocator served, in requested bytes.
struct spill_record {
  std::size_t num_spilled_allocs = 0;
  std::size_t bytes_spilled = 0;  // in total since construction
  std::size_t spilled_bytes_in_use = 0;
  std::size_t peak_spilled_bytes_in_use = 0;

  constexpr void append_to(detail::text& out) const {
    detail::append(out, detail::cat("num_spilled_allocs=", num_spilled_allocs, ", bytes_spilled=", bytes_spilled,
                                    ", spilled_bytes_in_use=", spilled_bytes_in_use,
                                    ", peak_spilled_bytes_in_use=", peak_spilled_bytes_in_use));
  }
  friend constexpr bool operator==(const spill_record&, const spill_record&) = default;
};

// Only resource_exhausted from Primary spills; any other error (a bad alignment) is returned as is.
// The addresses served by Secondary are kept in a map under a mutex; every other address belongs to
// Primary. stats() counts requested bytes through this allocator; its limit is the sum of both
// limits (none if either has none), its largest free block the larger of the two.
//
// Each of Primary and Secondary is an allocator type held by value or a reference to one:
//   fallback_allocator both(bfc, host);  // deduces references to both
//   fallback_allocator<bfc_allocator<host_sub_allocator>&, cpu_allocator> f(
//       std::piecewise_construct, std::forward_as_tuple(bfc), std::forward_as_tuple(limit));
template <class Primary, class Secondary>
class fallback_allocator {
 public:
  using primary_type = std::remove_reference_t<Primary>;
  using secondary_type = std::remove_reference_t<Secondary>;
  static_assert(allocator<primary_type>,
                "fallback_allocator<Primary, Secondary> requires Primary to satisfy typeflow::allocator");
  static_assert(allocator<secondary_type>,
                "fallback_allocator<Primary, Secondary> requires Secondary to satisfy typeflow::allocator");
  static constexpr std::string_view name = "fallback";

  fallback_allocator(primary_type& primary, secondary_type& secondary)
    requires(std::is_lvalue_reference_v<Primary> && std::is_lvalue_reference_v<Secondary>)
      : primary_(primary), secondary_(secondary) {}
  template <class... P, class... S>
  fallback_allocator(std::piecewise_construct_t, std::tuple<P...> primary_args, std::tuple<S...> secondary_args)
      : fallback_allocator(primary_args, secondary_args, std::index_sequence_for<P...>{},
                           std::index_sequence_for<S...>{}) {}
  fallback_allocator(const fallback_allocator&) = delete;
  fallback_allocator& operator=(const fallback_allocator&) = delete;

  result<void*> allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (auto st = check_alignment(name, alignment); !st.ok()) return st;
    auto p = primary_.allocate(bytes, alignment);
    if (p.ok()) {
      std::lock_guard lock(mu_);
      count_allocation(bytes);
      return p;
    }
    if (p.status().code() != status_code::resource_exhausted) return p;
    auto s = secondary_.allocate(bytes, alignment);
    if (!s.ok())
      return status(s.status().code(), detail::cat(name, ": the primary and the secondary allocator both failed: ",
                                                   p.status(), " / ", s.status()));
    std::lock_guard lock(mu_);
    count_allocation(bytes);
    spilled_.emplace(*s, bytes);
    ++spills_.num_spilled_allocs;
    spills_.bytes_spilled += bytes;
    spills_.spilled_bytes_in_use += bytes;
    spills_.peak_spilled_bytes_in_use = std::max(spills_.peak_spilled_bytes_in_use, spills_.spilled_bytes_in_use);
    return s;
  }

  void deallocate(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    bool spilled = false;
    {
      std::lock_guard lock(mu_);
      in_use_ -= std::min(bytes, in_use_);
      if (auto it = spilled_.find(p); it != spilled_.end()) {
        spilled = true;
        spills_.spilled_bytes_in_use -= std::min(it->second, spills_.spilled_bytes_in_use);
        spilled_.erase(it);
      }
    }
    if (spilled) secondary_.deallocate(p, bytes);
    else primary_.deallocate(p, bytes);
  }

  allocator_stats stats() const {
    const allocator_stats a = primary_.stats();
    const allocator_stats b = secondary_.stats();
    allocator_stats s;
    {
      std::lock_guard lock(mu_);
      s.bytes_in_use = in_use_;
      s.peak_bytes_in_use = peak_;
      s.num_allocs = num_allocs_;
      s.largest_alloc_size = largest_alloc_;
    }
    s.bytes_limit = (a.bytes_limit == 0 || b.bytes_limit == 0) ? 0 : a.bytes_limit + b.bytes_limit;
    s.largest_free_block = std::max(a.largest_free_block, b.largest_free_block);
    s.bytes_reserved = a.bytes_reserved + b.bytes_reserved;
    return s;
  }

  spill_record spills() const {
    std::lock_guard lock(mu_);
    return spills_;
  }

  primary_type& primary() noexcept { return primary_; }
  const primary_type& primary() const noexcept { return primary_; }
  secondary_type& secondary() noexcept { return secondary_; }
  const secondary_type& secondary() const noexcept { return secondary_; }

 private:
  template <class TP, class TS, std::size_t... I, std::size_t... J>
  fallback_allocator(TP& primary_args, TS& secondary_args, std::index_sequence<I...>, std::index_sequence<J...>)
      : primary_(std::get<I>(std::move(primary_args))...), secondary_(std::get<J>(std::move(secondary_args))...) {}

  void count_allocation(std::size_t bytes) {
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
    largest_alloc_ = std::max(largest_alloc_, bytes);
    ++num_allocs_;
  }

  Primary primary_;
  Secondary secondary_;
  mutable std::mutex mu_;
  std::unordered_map<void*, std::size_t> spilled_;  // address -> requested bytes
  spill_record spills_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
  std::size_t num_allocs_ = 0;
  std::size_t largest_alloc_ = 0;
};

template <class P, class S>
fallback_allocator(P&, S&) -> fallback_allocator<P&, S&>;

} // namespace typeflow
