// SPDX-License-Identifier: Apache-2.0
// bfc_allocator<SubAllocator>: TensorFlow's best-fit-with-coalescing pool. Large regions come from a
// sub-allocator; each region is cut into chunks linked to their neighbours; free chunks sit in 21
// size-class bins; an allocation takes the smallest free chunk that fits and splits off the rest,
// and a free merges the chunk with free neighbours. Region bytes never pass the memory limit.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/buffer.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/memory/allocator.hpp>
#include <typeflow/memory/detail/pool_mutex.hpp>
#include <typeflow/memory/sub_allocator.hpp>

namespace typeflow {

struct bfc_options {
  // Hard limit on the bytes of all regions together (rounded down to a multiple of 256).
  std::size_t memory_limit = std::size_t{1} << 30;
  // true: the first region is `initial_region_bytes` and each new one doubles, as TensorFlow's
  // allow_growth; false: the first allocation takes the whole limit as one region.
  bool allow_growth = true;
  std::size_t initial_region_bytes = std::size_t{2} << 20;
};

// One region as check_invariants sees it, for tests and for memory reports.
struct bfc_region_summary {
  const void* base = nullptr;
  std::size_t bytes = 0;
  std::size_t num_chunks = 0;
  std::size_t num_free_chunks = 0;
  std::size_t largest_free_chunk = 0;
};

// Sizes: every request is rounded up to a multiple of 256 (zero bytes to 256, which gives zero-byte
// requests unique addresses). Stats count whole chunks, so bytes_in_use is at least the sum of the
// rounded requests. A chunk is split when the rest is at least as large as the request or at least
// 128 MiB (TensorFlow's rule), so a block may be up to twice its rounded size.
//
// Alignment: chunks start at multiples of 256 from a region base aligned to at least 256, so any
// alignment up to 256 is free. A larger alignment is served from a free chunk in which an aligned
// address leaves room for the request: the bytes in front of that address are split off as a free
// chunk of their own (nothing is wasted), and a new region for such a request is asked for with
// that alignment. An alignment larger than the memory limit fails with resource_exhausted.
//
// Regions stay until the pool is destroyed (TensorFlow's optional garbage collection of free regions
// is not done), so after everything is freed each region is one free chunk; except that the limit
// may be changed while the pool is in use (set_memory_limit, as Antman raises and lowers a job's GPU
// memory between steps), and while the regions hold more than a lowered limit, every region that is
// wholly free goes back to the sub-allocator.
//
// Chunks are named by handles (indices into a vector) and know their region, and each region maps
// every 256-byte unit to the handle of the chunk that starts there, as TensorFlow's AllocationRegion
// does (4 bytes of host memory per 256 bytes of region). A deallocate of an address this pool did
// not hand out, or with a size other than the one requested, is ignored (for unknown addresses) and
// remembered: check_invariants reports it. Every member is thread-safe: one lock, as TensorFlow's
// one mutex, but a detail::pool_mutex, which takes and gives back without a call into the C library.
//
// Cost: TensorFlow keeps each bin in a std::set, which takes a node from the heap on every insert,
// so a pool built that way is slower than malloc. Here a bin is a vector of (size, address, handle)
// sorted by size and address, largest first, and a bit mask says which bins hold a chunk: the best
// fit is a binary search in the request's bin or the last entry of the next non-empty bin (one bit
// scan), and no operation takes memory from the heap once the vectors have grown to the number of
// free chunks (benchmarks/bench_memory.cpp, MLP and CNN step traces: about 24 ns per allocate or
// free, 0.54-0.65x the time of glibc malloc/free; with std::set bins and std::mutex it was 40-46 ns,
// 0.96-1.27x). A bin with n chunks costs O(n) moves per insert or removal in the worst case; the
// step traces keep at most 5 free chunks in all, the random trace of bench_memory about 35.
template <class SubAllocator>
class bfc_allocator {
  static_assert(typeflow::sub_allocator<SubAllocator>,
                "bfc_allocator<SubAllocator> requires SubAllocator to satisfy typeflow::sub_allocator: "
                "alloc(bytes, alignment) -> void* and free(void*, bytes)");

 public:
  static constexpr std::string_view name = "bfc";
  static constexpr std::size_t min_allocation_size = 256;
  static constexpr std::size_t num_bins = 21;  // bin b holds free chunks of [256 << b, 256 << (b + 1)); the last, all larger
  static constexpr std::size_t max_internal_fragmentation = std::size_t{128} << 20;

  explicit bfc_allocator(bfc_options options = {}) : bfc_allocator(options, std::in_place) {}
  template <class... Args>
  bfc_allocator(bfc_options options, std::in_place_t, Args&&... sub_allocator_args)
      : sub_(std::forward<Args>(sub_allocator_args)...),
        limit_(options.memory_limit / min_allocation_size * min_allocation_size) {
    region_bytes_ = options.allow_growth ? rounded_bytes(std::min(limit_, options.initial_region_bytes)) : limit_;
    region_bytes_ = std::max(region_bytes_, min_allocation_size);
  }
  bfc_allocator(const bfc_allocator&) = delete;
  bfc_allocator& operator=(const bfc_allocator&) = delete;

  // Gives every region back to the sub-allocator; blocks still in use are lost with them.
  ~bfc_allocator() {
    for (std::uint32_t id : by_address_) sub_.free(regions_[id].base, regions_[id].bytes);
  }

  result<void*> allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (auto st = check_alignment(name, alignment); !st.ok()) return st;
    std::lock_guard lock(mu_);
    // Also keeps the rounding below from overflowing.
    if (bytes > limit_ || alignment > limit_) return out_of_memory(bytes, alignment);
    const std::size_t rounded = rounded_bytes(bytes);
    const std::size_t align = std::max(alignment, min_allocation_size);
    if (void* p = find_chunk(rounded, align, bytes)) return p;
    if (extend(rounded, align)) {
      if (void* p = find_chunk(rounded, align, bytes)) return p;
    }
    return out_of_memory(bytes, alignment);
  }

  // Sets the limit on the regions' bytes (rounded down to a multiple of 256) while the pool is in use.
  // Raising it lets the pool grow again. Lowering it below what the regions hold gives back every
  // region that is wholly free; blocks in use are never moved, so the regions may stay above the
  // limit until enough is freed: meanwhile nothing grows, and each deallocation that empties a region
  // gives it back. Returns the bytes the regions hold afterwards (compare with the limit).
  std::size_t set_memory_limit(std::size_t bytes) {
    std::lock_guard lock(mu_);
    limit_ = bytes / min_allocation_size * min_allocation_size;
    if (reserved_ > limit_) release_free_regions();
    return reserved_;
  }
  std::size_t memory_limit() const {
    std::lock_guard lock(mu_);
    return limit_;
  }

  // `bytes` must be what was requested; nullptr is ignored.
  void deallocate(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    std::lock_guard lock(mu_);
    const chunk_handle h = find_handle(p);
    if (h == no_chunk || !chunks_[h].in_use()) {
      record_misuse(detail::cat("deallocate(", detail::address{p}, ", ", bytes,
                                "): the address is not a block in use from this allocator"));
      return;
    }
    chunk& c = chunks_[h];
    if (c.requested_size != bytes)
      record_misuse(detail::cat("deallocate(", detail::address{p}, ", ", bytes, "): the block was allocated with ",
                                c.requested_size, " bytes"));
    in_use_ -= c.size;
    c.allocation_id = -1;
    c.requested_size = 0;
    free_and_coalesce(h);
    if (reserved_ > limit_) release_free_regions();
  }

  allocator_stats stats() const {
    std::lock_guard lock(mu_);
    return stats_locked();
  }

  // The chunk size behind a block (TensorFlow's AllocatedSize) and the size that was requested.
  result<std::size_t> allocated_size(const void* p) const {
    std::lock_guard lock(mu_);
    const chunk_handle h = find_handle(p);
    if (h == no_chunk || !chunks_[h].in_use())
      return errors::not_found(name, ": ", detail::address{p}, " is not a block in use");
    return chunks_[h].size;
  }
  result<std::size_t> requested_size(const void* p) const {
    std::lock_guard lock(mu_);
    const chunk_handle h = find_handle(p);
    if (h == no_chunk || !chunks_[h].in_use())
      return errors::not_found(name, ": ", detail::address{p}, " is not a block in use");
    return chunks_[h].requested_size;
  }

  // The regions in address order.
  std::vector<bfc_region_summary> regions() const {
    std::lock_guard lock(mu_);
    std::vector<bfc_region_summary> out;
    for (std::uint32_t id : by_address_) {
      const region& r = regions_[id];
      bfc_region_summary s{r.base, r.bytes, 0, 0, 0};
      for (chunk_handle h = r.handles.front(); h != no_chunk; h = chunks_[h].next) {
        ++s.num_chunks;
        if (!chunks_[h].in_use()) {
          ++s.num_free_chunks;
          s.largest_free_chunk = std::max(s.largest_free_chunk, chunks_[h].size);
        }
      }
      out.push_back(s);
    }
    return out;
  }

  // For tests and debugging; costs a walk over every chunk and every 256-byte unit of every region.
  // Checks: regions sorted and disjoint; each region's chunks tile it exactly in address order with
  // consistent prev/next links, region ids and handle map; sizes are multiples of 256; no two
  // neighbours are both free; each free chunk is in the bin of its size and each bin entry is such a
  // chunk, in order, with the bin's bit set exactly when it is not empty; the counters match the
  // chunks; and nothing was refused (a bad deallocate, a misaligned region).
  status check_invariants() const {
    std::lock_guard lock(mu_);
    std::size_t live_chunks = 0, free_chunks = 0, in_use = 0, reserved = 0;
    for (std::size_t i = 0; i < by_address_.size(); ++i) {
      const std::uint32_t id = by_address_[i];
      const region& r = regions_[id];
      const auto where = [&](const auto&... parts) {
        return errors::internal(name, ": region ", i, " at ", detail::address{r.base}, " (", r.bytes, " bytes): ",
                                parts...);
      };
      if (i > 0 && regions_[by_address_[i - 1]].end() > r.base) return where("overlaps or precedes region ", i - 1);
      if (r.bytes == 0 || r.bytes % min_allocation_size != 0 || r.handles.size() != r.bytes / min_allocation_size)
        return where("size is not a positive multiple of 256 or its handle map has ", r.handles.size(), " entries");
      std::size_t count = 0, sum = 0;
      chunk_handle prev = no_chunk;
      bool prev_free = false;
      const char* expected = r.base;
      for (chunk_handle h = r.handles.front(); h != no_chunk; h = chunks_[h].next) {
        if (h >= chunks_.size() || ++count > chunks_.size()) return where("chunk list is broken at handle ", h);
        const chunk& c = chunks_[h];
        if (c.ptr != expected) return where("chunk ", h, " starts at ", detail::address{c.ptr}, ", not right after its predecessor");
        if (c.prev != prev) return where("chunk ", h, " has prev ", c.prev, ", expected ", prev);
        if (c.region != id) return where("chunk ", h, " names region ", c.region, ", not ", id);
        if (c.size == 0 || c.size % min_allocation_size != 0 || c.size > static_cast<std::size_t>(r.end() - c.ptr))
          return where("chunk ", h, " has size ", c.size);
        if (r.handles[unit_of(r, c.ptr)] != h) return where("the handle map does not name chunk ", h, " at its start");
        if (c.in_use()) {
          if (c.bin != no_bin) return where("chunk ", h, " is in use and in bin ", int{c.bin});
          if (c.requested_size > c.size) return where("chunk ", h, " of ", c.size, " bytes holds a request of ", c.requested_size);
          in_use += c.size;
        } else {
          if (prev_free) return where("chunks ", prev, " and ", h, " are neighbours and both free");
          const std::size_t b = bin_for(c.size);
          if (c.bin != b || bin_position(h) == bins_[b].end())
            return where("free chunk ", h, " of ", c.size, " bytes is not in bin ", b);
          ++free_chunks;
        }
        prev_free = !c.in_use();
        sum += c.size;
        expected = c.ptr + c.size;
        prev = h;
      }
      if (sum != r.bytes) return where("chunk sizes sum to ", sum);
      const auto marked = static_cast<std::size_t>(
          std::count_if(r.handles.begin(), r.handles.end(), [](chunk_handle h) { return h != no_chunk; }));
      if (marked != count) return where("the handle map names ", marked, " chunks, the chunk list ", count);
      live_chunks += count;
      reserved += r.bytes;
    }
    std::size_t binned = 0;
    for (std::size_t b = 0; b < num_bins; ++b) {
      const free_list& bin = bins_[b];
      if (bin.empty() == ((nonempty_bins_ >> b & 1u) != 0))
        return errors::internal(name, ": bin ", b, " holds ", bin.size(), " chunks but its bit says otherwise");
      for (std::size_t k = 0; k < bin.size(); ++k) {
        const free_entry& e = bin[k];
        if (e.handle >= chunks_.size() || chunks_[e.handle].in_use() || chunks_[e.handle].ptr != e.ptr ||
            chunks_[e.handle].size != e.size || chunks_[e.handle].bin != b)
          return errors::internal(name, ": entry ", k, " of bin ", b, " (handle ", e.handle, ") is not a free chunk of its size");
        if (k > 0 && !comes_before(bin[k - 1], e))
          return errors::internal(name, ": bin ", b, " is out of order at entry ", k);
      }
      binned += bin.size();
    }
    if (binned != free_chunks) return errors::internal(name, ": bins hold ", binned, " chunks, regions ", free_chunks, " free chunks");
    if (live_chunks != chunks_.size() - free_handles_.size())
      return errors::internal(name, ": ", chunks_.size() - free_handles_.size(), " chunk handles are taken, regions hold ", live_chunks);
    if (in_use != in_use_) return errors::internal(name, ": chunks in use hold ", in_use, " bytes, stats say ", in_use_);
    if (reserved != reserved_)
      return errors::internal(name, ": regions hold ", reserved, " bytes, stats say ", reserved_, ", limit ", limit_);
    // Above a lowered limit, no region may be wholly free (it would have gone back).
    if (reserved_ > limit_)
      for (std::uint32_t id : by_address_)
        if (const chunk& c = chunks_[regions_[id].handles.front()]; !c.in_use() && c.size == regions_[id].bytes)
          return errors::internal(name, ": regions hold ", reserved_, " bytes over the limit of ", limit_,
                                  " and the region at ", detail::address{regions_[id].base}, " is wholly free");
    if (misuses_ != 0)
      return errors::failed_precondition(name, ": ", misuses_, " misuse(s) (refused deallocations, bad regions); the first: ", first_misuse_);
    return ok_status();
  }

  SubAllocator& sub() noexcept { return sub_; }
  const SubAllocator& sub() const noexcept { return sub_; }

  static constexpr std::size_t rounded_bytes(std::size_t bytes) noexcept {
    return std::max(min_allocation_size, detail::align_up(bytes, min_allocation_size));
  }
  static constexpr std::size_t bin_for(std::size_t bytes) noexcept {
    return std::min<std::size_t>(num_bins - 1, static_cast<std::size_t>(std::bit_width(bytes / min_allocation_size)) - 1);
  }

 private:
  using chunk_handle = std::uint32_t;
  static constexpr chunk_handle no_chunk = std::numeric_limits<chunk_handle>::max();
  static constexpr std::uint8_t no_bin = std::numeric_limits<std::uint8_t>::max();
  static_assert(num_bins <= 32, "bfc_allocator: the non-empty bins are bits of one 32-bit mask");

  struct chunk {
    char* ptr = nullptr;
    std::size_t size = 0;             // a multiple of 256
    std::size_t requested_size = 0;   // what the user asked for; 0 while free
    std::int64_t allocation_id = -1;  // -1 while free
    chunk_handle prev = no_chunk;     // the neighbour at lower addresses in the same region
    chunk_handle next = no_chunk;
    std::uint32_t region = 0;         // index into regions_
    std::uint8_t bin = no_bin;        // the bin holding it while free
    bool in_use() const noexcept { return allocation_id != -1; }
  };

  struct region {
    char* base = nullptr;
    std::size_t bytes = 0;
    std::vector<chunk_handle> handles;  // per 256-byte unit: the chunk starting there, or no_chunk
    const char* end() const noexcept { return base + bytes; }
  };

  // A free chunk in its bin. The size and address are copies of the chunk's, so that searching a bin
  // reads one contiguous array.
  struct free_entry {
    std::size_t size;
    const char* ptr;
    chunk_handle handle;
  };
  // A bin is sorted by (size, address), largest first: the best fit in a bin is the last entry of
  // the run of those that are large enough, and the smallest chunk of a bin (what a request from a
  // lower bin takes) is its last entry, removed without moving the others.
  using free_list = std::vector<free_entry>;
  static bool comes_before(const free_entry& e, std::size_t size, const char* ptr) noexcept {
    return e.size != size ? e.size > size : e.ptr > ptr;
  }
  static bool comes_before(const free_entry& a, const free_entry& b) noexcept { return comes_before(a, b.size, b.ptr); }

  static std::size_t unit_of(const region& r, const void* p) noexcept {
    return static_cast<std::size_t>(static_cast<const char*>(p) - r.base) / min_allocation_size;
  }

  // The region holding p, or nullptr: a binary search over the few regions, in address order.
  const region* region_of(const void* p) const noexcept {
    const char* c = static_cast<const char*>(p);
    auto it = std::upper_bound(by_address_.begin(), by_address_.end(), c,
                               [this](const char* q, std::uint32_t id) { return q < regions_[id].end(); });
    if (it == by_address_.end() || c < regions_[*it].base) return nullptr;
    return &regions_[*it];
  }

  // The chunk that starts at p, or no_chunk.
  chunk_handle find_handle(const void* p) const noexcept {
    const region* r = region_of(p);
    if (r == nullptr || !detail::is_aligned(p, min_allocation_size)) return no_chunk;
    return r->handles[unit_of(*r, p)];
  }

  chunk_handle& handle_at(const chunk& c) noexcept {
    region& r = regions_[c.region];
    return r.handles[unit_of(r, c.ptr)];
  }

  chunk_handle new_chunk() {
    if (!free_handles_.empty()) {
      const chunk_handle h = free_handles_.back();
      free_handles_.pop_back();
      return h;
    }
    // 2^32 - 1 chunks would need at least a terabyte of regions.
    chunks_.emplace_back();
    return static_cast<chunk_handle>(chunks_.size() - 1);
  }
  void delete_chunk(chunk_handle h) {
    handle_at(chunks_[h]) = no_chunk;
    chunks_[h] = chunk{};
    free_handles_.push_back(h);
  }

  // Where free chunk h sits in its bin, or the bin's end.
  typename free_list::const_iterator bin_position(chunk_handle h) const noexcept {
    const chunk& c = chunks_[h];
    const free_list& bin = bins_[bin_for(c.size)];
    auto it = std::lower_bound(bin.begin(), bin.end(), c,
                               [](const free_entry& e, const chunk& x) { return comes_before(e, x.size, x.ptr); });
    return it != bin.end() && it->handle == h ? it : bin.end();
  }

  void insert_free(chunk_handle h) {
    chunk& c = chunks_[h];
    const std::size_t b = bin_for(c.size);
    c.bin = static_cast<std::uint8_t>(b);
    free_list& bin = bins_[b];
    auto it = std::lower_bound(bin.begin(), bin.end(), c,
                               [](const free_entry& e, const chunk& x) { return comes_before(e, x.size, x.ptr); });
    bin.insert(it, free_entry{c.size, c.ptr, h});
    nonempty_bins_ |= std::uint32_t{1} << b;
  }
  void take_from_bin(std::size_t b, typename free_list::const_iterator at) {
    free_list& bin = bins_[b];
    chunks_[at->handle].bin = no_bin;
    bin.erase(at);
    if (bin.empty()) nonempty_bins_ &= ~(std::uint32_t{1} << b);
  }
  void remove_free(chunk_handle h) { take_from_bin(chunks_[h].bin, bin_position(h)); }

  // The lowest non-empty bin at or above b, or num_bins.
  std::size_t next_bin(std::size_t b) const noexcept {
    if (b >= num_bins) return num_bins;
    const std::uint32_t above = nonempty_bins_ >> b;
    return above == 0 ? num_bins : b + static_cast<std::size_t>(std::countr_zero(above));
  }

  // Cuts the first `bytes` off chunk h; returns the handle of the rest, which is free and in no bin.
  chunk_handle split(chunk_handle h, std::size_t bytes) {
    const chunk_handle rest = new_chunk();  // may move chunks_: take references after it
    chunk& c = chunks_[h];
    chunk& r = chunks_[rest];
    r.ptr = c.ptr + bytes;
    r.size = c.size - bytes;
    r.prev = h;
    r.next = c.next;
    r.region = c.region;
    if (c.next != no_chunk) chunks_[c.next].prev = rest;
    c.next = rest;
    c.size = bytes;
    handle_at(r) = rest;
    return rest;
  }

  // Folds chunk b into its lower neighbour a. Neither may be in a bin.
  void merge(chunk_handle a, chunk_handle b) {
    chunk& x = chunks_[a];
    const chunk& y = chunks_[b];
    x.next = y.next;
    if (y.next != no_chunk) chunks_[y.next].prev = a;
    x.size += y.size;
    delete_chunk(b);
  }

  void free_and_coalesce(chunk_handle h) {
    if (const chunk_handle n = chunks_[h].next; n != no_chunk && !chunks_[n].in_use()) {
      remove_free(n);
      merge(h, n);
    }
    if (const chunk_handle p = chunks_[h].prev; p != no_chunk && !chunks_[p].in_use()) {
      remove_free(p);
      merge(p, h);
      h = p;
    }
    insert_free(h);
  }

  // Best fit: the smallest free chunk (the lowest address among equals), from the request's bin
  // upwards, in which an address aligned to `align` leaves `rounded` bytes.
  void* find_chunk(std::size_t rounded, std::size_t align, std::size_t requested) {
    const std::size_t first = bin_for(rounded);
    if (align <= min_allocation_size) {
      // Every chunk of at least `rounded` bytes fits: the smallest such in the request's bin, else
      // the smallest chunk of the next non-empty bin (all of whose chunks are larger).
      const free_list& bin = bins_[first];
      auto end = std::partition_point(bin.begin(), bin.end(), [&](const free_entry& e) { return e.size >= rounded; });
      if (end != bin.begin()) return take(first, std::prev(end), 0, rounded, requested);
      const std::size_t b = next_bin(first + 1);
      if (b == num_bins) return nullptr;
      return take(b, std::prev(bins_[b].end()), 0, rounded, requested);
    }
    for (std::size_t b = next_bin(first); b < num_bins; b = next_bin(b + 1)) {
      const free_list& bin = bins_[b];
      for (auto it = bin.end(); it != bin.begin();) {  // smallest first
        --it;
        if (it->size < rounded) continue;
        const auto addr = reinterpret_cast<std::uintptr_t>(it->ptr);
        const std::size_t pad = detail::align_up(addr, align) - addr;  // a multiple of 256
        if (pad + rounded <= it->size) return take(b, it, pad, rounded, requested);
      }
    }
    return nullptr;
  }

  // Hands out `rounded` bytes at offset `pad` of the free chunk at `at` in bin b.
  void* take(std::size_t b, typename free_list::const_iterator at, std::size_t pad, std::size_t rounded,
             std::size_t requested) {
    chunk_handle h = at->handle;
    take_from_bin(b, at);
    if (pad != 0) {
      const chunk_handle rest = split(h, pad);
      insert_free(h);  // the front stays free; its lower neighbour is in use, as h's was
      h = rest;
    }
    const std::size_t size = chunks_[h].size;
    if (size >= rounded * 2 || size - rounded >= max_internal_fragmentation) insert_free(split(h, rounded));
    chunk& c = chunks_[h];
    c.allocation_id = next_allocation_id_++;
    c.requested_size = requested;
    in_use_ += c.size;
    peak_ = std::max(peak_, in_use_);
    largest_alloc_ = std::max(largest_alloc_, c.size);
    ++num_allocs_;
    return c.ptr;
  }

  // Adds a region big enough for `rounded` bytes at `align`, as TensorFlow's Extend: the region size
  // doubles until the request fits, is capped by what the limit leaves, and if the sub-allocator
  // refuses, smaller sizes (90% each step) are tried once in the allocator's life.
  bool extend(std::size_t rounded, std::size_t align) {
    const std::size_t available = reserved_ >= limit_ ? 0 : (limit_ - reserved_) / min_allocation_size * min_allocation_size;
    if (rounded > available) return false;
    bool increased = false;
    while (rounded > region_bytes_) {
      region_bytes_ *= 2;
      increased = true;
    }
    std::size_t bytes = std::min(region_bytes_, available);
    void* mem = sub_.alloc(bytes, align);
    if (mem == nullptr && !backpedalled_) {
      backpedalled_ = true;
      while (mem == nullptr) {
        const std::size_t smaller = rounded_bytes(bytes / 10 * 9);
        if (smaller < rounded || smaller >= bytes) break;
        bytes = smaller;
        mem = sub_.alloc(bytes, align);
      }
    }
    if (mem == nullptr) return false;
    if (!detail::is_aligned(mem, align)) {
      sub_.free(mem, bytes);
      record_misuse(detail::cat("the sub-allocator returned ", detail::address{mem}, " for alignment ", align));
      return false;
    }
    if (!increased && region_bytes_ < limit_) region_bytes_ *= 2;

    const auto id = static_cast<std::uint32_t>(regions_.size());
    region& r = regions_.emplace_back();
    r.base = static_cast<char*>(mem);
    r.bytes = bytes;
    r.handles.assign(bytes / min_allocation_size, no_chunk);
    const chunk_handle h = new_chunk();
    chunks_[h].ptr = r.base;
    chunks_[h].size = bytes;
    chunks_[h].region = id;
    r.handles.front() = h;
    auto at = std::upper_bound(by_address_.begin(), by_address_.end(), r.base,
                               [this](const char* p, std::uint32_t x) { return p < regions_[x].base; });
    by_address_.insert(at, id);
    insert_free(h);
    reserved_ += bytes;
    return true;
  }

  // Gives every wholly free region back to the sub-allocator (the regions hold more than the limit).
  // A region's id stays taken (its chunks name regions by index), as an empty entry.
  void release_free_regions() {
    for (std::size_t i = by_address_.size(); i-- > 0;) {
      region& r = regions_[by_address_[i]];
      const chunk_handle h = r.handles.front();
      if (chunks_[h].in_use() || chunks_[h].size != r.bytes) continue;
      remove_free(h);
      delete_chunk(h);
      sub_.free(r.base, r.bytes);
      reserved_ -= r.bytes;
      r = region{};
      by_address_.erase(by_address_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  allocator_stats stats_locked() const {
    allocator_stats s;
    s.bytes_in_use = in_use_;
    s.peak_bytes_in_use = peak_;
    s.num_allocs = num_allocs_;
    s.bytes_limit = limit_;
    s.largest_alloc_size = largest_alloc_;
    if (nonempty_bins_ != 0) s.largest_free_block = bins_[std::bit_width(nonempty_bins_) - 1].front().size;
    s.bytes_reserved = reserved_;
    return s;
  }

  status out_of_memory(std::size_t bytes, std::size_t alignment) const {
    if (bytes > limit_ || alignment > limit_)
      return errors::resource_exhausted(name, ": cannot allocate ", bytes, " bytes with alignment ", alignment,
                                        ": larger than the memory limit of ", limit_, " bytes; ", stats_locked());
    return errors::resource_exhausted(name, ": out of memory allocating ", bytes, " bytes (", rounded_bytes(bytes),
                                      " rounded) with alignment ", alignment, " in ", by_address_.size(),
                                      " region(s) under a limit of ", limit_, " bytes; ", stats_locked());
  }

  void record_misuse(detail::text what) {
    if (misuses_++ == 0) first_misuse_ = std::move(what);
  }

  SubAllocator sub_;
  std::size_t limit_;
  std::size_t region_bytes_ = 0;  // the size of the next region
  bool backpedalled_ = false;

  mutable detail::pool_mutex mu_;
  std::vector<chunk> chunks_;
  std::vector<chunk_handle> free_handles_;  // recycled entries of chunks_
  std::array<free_list, num_bins> bins_;
  std::uint32_t nonempty_bins_ = 0;         // bit b: bins_[b] is not empty
  std::vector<region> regions_;             // in the order they were added: a chunk's region id (a
                                            // region given back stays as an empty entry)
  std::vector<std::uint32_t> by_address_;   // region ids sorted by base address
  std::int64_t next_allocation_id_ = 1;

  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
  std::size_t num_allocs_ = 0;
  std::size_t largest_alloc_ = 0;
  std::size_t reserved_ = 0;

  std::size_t misuses_ = 0;
  detail::text first_misuse_;
};

static_assert(allocator<bfc_allocator<host_sub_allocator>>, "bfc_allocator must satisfy typeflow::allocator");

} // namespace typeflow
