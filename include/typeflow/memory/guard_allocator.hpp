// SPDX-License-Identifier: Apache-2.0
// guard_allocator<A>: surrounds each block with canary bytes and checks them when the block is given
// back, as TensorFlow's GPUDebugAllocator, but records what it finds instead of aborting, so a test
// can assert on it: violations() lists them and check() turns them into a status.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

struct guard_violation {
  enum class kind : std::uint8_t {
    underrun,       // a canary byte before the block changed
    overrun,        // a canary byte after the block changed
    unknown_block,  // deallocate of an address this allocator did not hand out (or gave back already)
    size_mismatch,  // deallocate with a size other than the one requested
  };
  kind what = kind::overrun;
  const void* block = nullptr;
  std::size_t bytes = 0;            // the requested size (unknown_block, size_mismatch: the size passed)
  std::ptrdiff_t first_offset = 0;  // under/overrun: offsets from the block start of the lowest and
  std::ptrdiff_t last_offset = 0;   // highest changed canary bytes (negative before the block)
  std::size_t corrupted_bytes = 0;  // how many canary bytes changed

  static constexpr std::string_view kind_name(kind k) noexcept {
    switch (k) {
      case kind::underrun: return "underrun";
      case kind::overrun: return "overrun";
      case kind::unknown_block: return "unknown block";
      case kind::size_mismatch: return "size mismatch";
    }
    return "?";
  }
  // "overrun of block 0x7f.. (100 bytes): 3 canary bytes changed at offsets 100..102"
  void append_to(detail::text& out) const {
    detail::append(out, detail::cat(kind_name(what), " of block ", detail::address{block}, " (", bytes, " bytes)"));
    if (what == kind::underrun || what == kind::overrun)
      detail::append(out, detail::cat(": ", corrupted_bytes, " canary bytes changed at offsets ",
                                      static_cast<long long>(first_offset), "..", static_cast<long long>(last_offset)));
  }
};

// Layout of each block in A: [canary: align_up(64, alignment) bytes][the block][canary: 64 bytes]; A is
// asked for the alignment requested, so the block keeps it. Sizes and alignments of live blocks are
// kept in a map beside the memory, where a stray write cannot reach them. stats() is A's, and counts
// the canaries. A is held as in tracking_allocator: by value, built in place, or by reference.
template <class A>
class guard_allocator {
 public:
  using inner_type = std::remove_reference_t<A>;
  static_assert(allocator<inner_type>,
                "guard_allocator<A> requires A (or the type it refers to) to satisfy typeflow::allocator");
  static constexpr std::string_view name = "guard";
  static constexpr std::size_t canary_bytes = 64;

  explicit guard_allocator(inner_type& inner) requires std::is_lvalue_reference_v<A> : inner_(inner) {}
  template <class... Args>
  explicit guard_allocator(std::in_place_t, Args&&... args) : inner_(std::forward<Args>(args)...) {}
  guard_allocator(const guard_allocator&) = delete;
  guard_allocator& operator=(const guard_allocator&) = delete;

  result<void*> allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (auto st = check_alignment(name, alignment); !st.ok()) return st;
    const std::size_t prefix = detail::align_up(canary_bytes, alignment);
    if (bytes > std::numeric_limits<std::size_t>::max() - prefix - canary_bytes)
      return errors::resource_exhausted(name, ": cannot allocate ", bytes, " bytes: the size overflows");
    auto inner = inner_.allocate(prefix + bytes + canary_bytes, alignment);
    if (!inner.ok()) return inner;
    unsigned char* block = static_cast<unsigned char*>(*inner) + prefix;
    for (std::size_t i = 0; i < prefix; ++i) (block - prefix)[i] = canary_at(-static_cast<std::ptrdiff_t>(prefix - i));
    for (std::size_t i = 0; i < canary_bytes; ++i) block[bytes + i] = canary_at(static_cast<std::ptrdiff_t>(bytes + i));
    std::lock_guard lock(mu_);
    live_[block] = block_info{bytes, prefix};
    return static_cast<void*>(block);
  }

  // Checks the canaries, records what changed, and gives the block to A with its true size. An
  // unknown address is recorded and not passed on.
  void deallocate(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    block_info info;
    {
      std::lock_guard lock(mu_);
      auto it = live_.find(p);
      if (it == live_.end()) {
        violations_.push_back({guard_violation::kind::unknown_block, p, bytes, 0, 0, 0});
        return;
      }
      info = it->second;
      live_.erase(it);
      inspect(p, info, violations_);
      if (bytes != info.bytes) violations_.push_back({guard_violation::kind::size_mismatch, p, bytes, 0, 0, 0});
    }
    inner_.deallocate(static_cast<unsigned char*>(p) - info.prefix, info.prefix + info.bytes + canary_bytes);
  }

  allocator_stats stats() const { return inner_.stats(); }

  std::vector<guard_violation> violations() const {
    std::lock_guard lock(mu_);
    return violations_;
  }
  std::size_t live_blocks() const {
    std::lock_guard lock(mu_);
    return live_.size();
  }

  // ok when nothing was recorded and the canaries of every live block are intact; otherwise internal,
  // naming the first few problems.
  status check() const {
    std::lock_guard lock(mu_);
    std::vector<guard_violation> live_damage;
    for (const auto& [p, info] : live_) inspect(p, info, live_damage);
    if (violations_.empty() && live_damage.empty()) return ok_status();
    detail::text msg = detail::cat(name, ": ", violations_.size(), " violation(s) recorded, ", live_damage.size(),
                                   " in blocks still live");
    std::size_t shown = 0;
    for (const std::vector<guard_violation>* list : {&violations_, &std::as_const(live_damage)}) {
      for (const auto& v : *list) {
        if (shown == max_shown) break;
        detail::append(msg, detail::cat(shown++ == 0 ? ": " : "; ", v));
      }
    }
    return status(status_code::internal, std::move(msg));
  }

  inner_type& inner() noexcept { return inner_; }
  const inner_type& inner() const noexcept { return inner_; }

 private:
  struct block_info {
    std::size_t bytes = 0;
    std::size_t prefix = 0;
  };
  static constexpr std::size_t max_shown = 4;

  // The canary byte at `offset` from the block start; it depends on the offset so that a shifted copy
  // of the canary does not pass for an intact one.
  static unsigned char canary_at(std::ptrdiff_t offset) noexcept {
    constexpr unsigned char mask[8] = {0xAB, 0xCD, 0xEF, 0x12, 0x34, 0x56, 0x78, 0x9A};
    return mask[static_cast<std::size_t>(offset) & 7];
  }

  // Appends an underrun and/or an overrun for the block at p to `out`.
  static void inspect(const void* p, const block_info& info, std::vector<guard_violation>& out) {
    const unsigned char* block = static_cast<const unsigned char*>(p);
    const auto scan = [&](guard_violation::kind what, std::ptrdiff_t from, std::ptrdiff_t to) {
      guard_violation v{what, p, info.bytes, 0, 0, 0};
      for (std::ptrdiff_t off = from; off < to; ++off) {
        if (block[off] == canary_at(off)) continue;
        if (v.corrupted_bytes++ == 0) v.first_offset = off;
        v.last_offset = off;
      }
      if (v.corrupted_bytes != 0) out.push_back(v);
    };
    const auto bytes = static_cast<std::ptrdiff_t>(info.bytes);
    scan(guard_violation::kind::underrun, -static_cast<std::ptrdiff_t>(info.prefix), 0);
    scan(guard_violation::kind::overrun, bytes, bytes + static_cast<std::ptrdiff_t>(canary_bytes));
  }

  A inner_;
  mutable std::mutex mu_;
  std::unordered_map<const void*, block_info> live_;
  std::vector<guard_violation> violations_;
};

template <class A>
guard_allocator(A&) -> guard_allocator<A&>;

} // namespace typeflow
