// SPDX-License-Identifier: Apache-2.0
// Allocators: the concept; cpu_allocator; bfc_allocator under long random sequences (alignment, no
// overlap, stats, invariants, limit, growth) and from several threads; the tracking, guard and
// fallback wrappers; tensors allocated through them.
#include "support.hpp"

#include <typeflow/memory/allocator.hpp>
#include <typeflow/memory/bfc_allocator.hpp>
#include <typeflow/memory/cpu_allocator.hpp>
#include <typeflow/memory/fallback_allocator.hpp>
#include <typeflow/memory/guard_allocator.hpp>
#include <typeflow/memory/sub_allocator.hpp>
#include <typeflow/memory/tracking_allocator.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace tf = typeflow;

namespace {

using host_bfc = tf::bfc_allocator<tf::host_sub_allocator>;
constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The byte a block tagged `tag` holds at offset i: blocks written with different tags differ almost
// everywhere, so a block that another one overlaps fails its check.
unsigned char pattern_byte(std::uint64_t tag, std::size_t i) {
  std::uint64_t x = tag * 0x9E3779B97F4A7C15ull + i;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<unsigned char>(x);
}

// The offsets written and checked: every byte of blocks up to 64 KiB; of larger ones, the first and
// last 4 KiB and one byte in every 64 KiB (writing all of a 64 MiB block 20000 times would take minutes).
template <class F>
void for_each_probe(std::size_t bytes, F&& f) {
  if (bytes <= 64 * KiB) {
    for (std::size_t i = 0; i < bytes; ++i) f(i);
    return;
  }
  for (std::size_t i = 0; i < 4 * KiB; ++i) f(i);
  for (std::size_t i = 4 * KiB; i < bytes - 4 * KiB; i += 64 * KiB) f(i);
  for (std::size_t i = bytes - 4 * KiB; i < bytes; ++i) f(i);
}

void write_pattern(void* p, std::size_t bytes, std::uint64_t tag) {
  auto* b = static_cast<unsigned char*>(p);
  for_each_probe(bytes, [&](std::size_t i) { b[i] = pattern_byte(tag, i); });
}

// The number of probed bytes that differ from the pattern.
std::size_t pattern_errors(const void* p, std::size_t bytes, std::uint64_t tag) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::size_t bad = 0;
  for_each_probe(bytes, [&](std::size_t i) { bad += b[i] != pattern_byte(tag, i); });
  return bad;
}

// Sizes from 1 byte to `max_bytes`, log-uniform, and now and then a zero-byte request.
std::size_t random_size(std::mt19937_64& rng, std::size_t max_bytes) {
  if (rng() % 100 == 0) return 0;
  const double e = std::uniform_real_distribution<double>(0.0, std::log(static_cast<double>(max_bytes)))(rng);
  return std::min(max_bytes, static_cast<std::size_t>(std::exp(e)));
}

std::size_t random_alignment(std::mt19937_64& rng) {
  constexpr std::array<std::size_t, 7> alignments{64, 128, 256, 512, 1024, 2048, 4096};
  return alignments[rng() % alignments.size()];
}

void require_ok(const tf::status& s) {
  INFO("status: " << s.to_string());
  REQUIRE(s.ok());
}

// `who` is the allocator the message names: the one that checks (a tracking allocator passes the
// request and the answer through).
template <class Allocator>
void require_bad_alignments_rejected(Allocator& a, const std::string& who) {
  for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{48}, std::size_t{100}, std::size_t{4097}}) {
    auto r = a.allocate(16, alignment);
    tf::test::require_error(r, tf::status_code::invalid_argument, "alignment " + std::to_string(alignment));
    tf::test::require_error(r, tf::status_code::invalid_argument, who + ": alignment");
  }
}

// Regions that hold exactly one free chunk each: what a BFC pool looks like once everything is freed.
void require_all_regions_free(const host_bfc& bfc) {
  for (const auto& r : bfc.regions()) {
    CHECK(r.num_chunks == 1);
    CHECK(r.num_free_chunks == 1);
    CHECK(r.largest_free_chunk == r.bytes);
  }
}

struct no_stats_allocator {
  static constexpr std::string_view name = "no_stats";
  tf::result<void*> allocate(std::size_t, std::size_t);
  void deallocate(void*, std::size_t);
};
struct run_time_name_allocator {
  inline static std::string_view name = "run_time_name";  // not a constant
  tf::result<void*> allocate(std::size_t, std::size_t);
  void deallocate(void*, std::size_t);
  tf::allocator_stats stats() const;
};

// A sub-allocator that refuses once `capacity` region bytes are out, as a nearly full GPU would.
struct capped_sub_allocator {
  explicit capped_sub_allocator(std::size_t cap) : capacity(cap) {}
  void* alloc(std::size_t bytes, std::size_t alignment) {
    if (used + bytes > capacity) {
      ++refusals;
      return nullptr;
    }
    void* p = host.alloc(bytes, alignment);
    if (p != nullptr) used += bytes;
    return p;
  }
  void free(void* p, std::size_t bytes) {
    used -= bytes;
    host.free(p, bytes);
  }
  std::size_t capacity;
  std::size_t used = 0;
  std::size_t refusals = 0;
  tf::host_sub_allocator host;
};

} // namespace

TEST_CASE("the allocator concept accepts the allocators and refuses what is not one", "[memory][concept]") {
  STATIC_REQUIRE(tf::allocator<tf::cpu_allocator>);
  STATIC_REQUIRE(tf::allocator<host_bfc>);
  STATIC_REQUIRE(tf::allocator<tf::tracking_allocator<tf::cpu_allocator>>);
  STATIC_REQUIRE(tf::allocator<tf::tracking_allocator<host_bfc&>>);
  STATIC_REQUIRE(tf::allocator<tf::guard_allocator<tf::cpu_allocator&>>);
  STATIC_REQUIRE(tf::allocator<tf::fallback_allocator<host_bfc&, tf::cpu_allocator>>);
  STATIC_REQUIRE(tf::allocator<tf::guard_allocator<tf::fallback_allocator<host_bfc&, tf::cpu_allocator&>>>);
  STATIC_REQUIRE_FALSE(tf::allocator<std::allocator<char>>);
  STATIC_REQUIRE_FALSE(tf::allocator<tf::host_sub_allocator>);
  STATIC_REQUIRE_FALSE(tf::allocator<no_stats_allocator>);
  STATIC_REQUIRE_FALSE(tf::allocator<run_time_name_allocator>);
  STATIC_REQUIRE(tf::sub_allocator<tf::host_sub_allocator>);
  STATIC_REQUIRE(tf::sub_allocator<capped_sub_allocator>);
  STATIC_REQUIRE_FALSE(tf::sub_allocator<tf::cpu_allocator>);

  STATIC_REQUIRE(host_bfc::rounded_bytes(0) == 256);
  STATIC_REQUIRE(host_bfc::rounded_bytes(1) == 256);
  STATIC_REQUIRE(host_bfc::rounded_bytes(256) == 256);
  STATIC_REQUIRE(host_bfc::rounded_bytes(257) == 512);
  STATIC_REQUIRE(host_bfc::bin_for(256) == 0);
  STATIC_REQUIRE(host_bfc::bin_for(511) == 0);
  STATIC_REQUIRE(host_bfc::bin_for(512) == 1);
  STATIC_REQUIRE(host_bfc::bin_for(3 * MiB) == 13);
  STATIC_REQUIRE(host_bfc::bin_for(256 * MiB - 256) == 19);
  STATIC_REQUIRE(host_bfc::bin_for(256 * MiB) == 20);
  STATIC_REQUIRE(host_bfc::bin_for(std::size_t{1} << 40) == 20);

  tf::allocator_stats s;
  s.bytes_in_use = 512;
  CHECK(s.to_string() == "bytes_in_use=512, peak_bytes_in_use=0, num_allocs=0, bytes_limit=none, "
                         "largest_alloc_size=0, largest_free_block=0, bytes_reserved=0");
}

TEST_CASE("every allocator rejects an alignment that is not a power of two", "[memory][alignment]") {
  tf::cpu_allocator cpu;
  host_bfc bfc({.memory_limit = 4 * MiB});
  tf::tracking_allocator tracking(cpu);
  tf::guard_allocator guard(bfc);
  tf::fallback_allocator fallback(bfc, cpu);
  require_bad_alignments_rejected(cpu, "cpu");
  require_bad_alignments_rejected(bfc, "bfc");
  require_bad_alignments_rejected(tracking, "cpu");
  require_bad_alignments_rejected(guard, "guard");
  require_bad_alignments_rejected(fallback, "fallback");
  CHECK(cpu.stats().num_allocs == 0);
  CHECK(bfc.stats().num_allocs == 0);
  CHECK(fallback.spills().num_spilled_allocs == 0);
  CHECK(tracking.step_record().num_failed_allocs == 5);
  require_ok(bfc.check_invariants());
}

TEST_CASE("cpu_allocator: alignment, zero bytes, stats and the limit", "[memory][cpu]") {
  tf::cpu_allocator cpu;
  std::vector<std::pair<void*, std::size_t>> blocks;
  std::size_t total = 0;
  for (std::size_t alignment = 1; alignment <= 8192; alignment *= 2) {
    const std::size_t bytes = 3 * alignment + 5;
    auto p = cpu.allocate(bytes, alignment);
    REQUIRE(p.ok());
    CHECK(addr(*p) % std::max<std::size_t>(alignment, tf::cpu_allocator::min_alignment) == 0);
    write_pattern(*p, bytes, bytes);
    blocks.emplace_back(*p, bytes);
    total += bytes;
  }
  const auto s = cpu.stats();
  CHECK(s.bytes_in_use == total);
  CHECK(s.peak_bytes_in_use == total);
  CHECK(s.num_allocs == blocks.size());
  CHECK(s.largest_alloc_size == 3 * 8192 + 5);
  CHECK(s.bytes_limit == 0);
  for (auto [p, bytes] : blocks) {
    CHECK(pattern_errors(p, bytes, bytes) == 0);
    cpu.deallocate(p, bytes);
  }
  CHECK(cpu.stats().bytes_in_use == 0);
  CHECK(cpu.stats().peak_bytes_in_use == total);

  // Zero-byte requests give distinct, non-null addresses that are given back like any other.
  auto z1 = cpu.allocate(0, 64);
  auto z2 = cpu.allocate(0, 64);
  REQUIRE(z1.ok());
  REQUIRE(z2.ok());
  CHECK(*z1 != nullptr);
  CHECK(*z1 != *z2);
  cpu.deallocate(*z1, 0);
  cpu.deallocate(*z2, 0);
  cpu.deallocate(nullptr, 0);

  tf::cpu_allocator limited(1000);
  auto a = limited.allocate(600, 64);
  REQUIRE(a.ok());
  auto b = limited.allocate(500, 64);
  tf::test::require_error(b, tf::status_code::resource_exhausted, "allocating 500 bytes would exceed the limit of 1000");
  tf::test::require_error(b, tf::status_code::resource_exhausted, "bytes_in_use=600");
  CHECK(limited.stats().bytes_in_use == 600);
  CHECK(limited.stats().num_allocs == 1);
  limited.deallocate(*a, 600);
  auto c = limited.allocate(1000, 4096);  // exactly the limit
  REQUIRE(c.ok());
  CHECK(limited.stats().bytes_in_use == 1000);
  limited.deallocate(*c, 1000);
}

TEST_CASE("cpu_allocator: counters stay exact under concurrent use", "[memory][cpu][threads]") {
  tf::cpu_allocator cpu(64 * MiB);
  std::atomic<std::size_t> successes{0}, corrupt{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<std::tuple<void*, std::size_t, std::uint64_t>> live;
      for (int i = 0; i < (tf::test::under_thread_sanitizer ? 500 : 2000); ++i) {
        if (live.empty() || rng() % 2 == 0) {
          const std::size_t bytes = random_size(rng, 64 * KiB);
          auto p = cpu.allocate(bytes, random_alignment(rng));
          if (!p.ok()) continue;
          ++successes;
          const std::uint64_t tag = (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint64_t>(i);
          write_pattern(*p, bytes, tag);
          live.emplace_back(*p, bytes, tag);
        } else {
          const std::size_t k = rng() % live.size();
          auto [p, bytes, tag] = live[k];
          corrupt += pattern_errors(p, bytes, tag);
          cpu.deallocate(p, bytes);
          live[k] = live.back();
          live.pop_back();
        }
      }
      for (auto [p, bytes, tag] : live) {
        corrupt += pattern_errors(p, bytes, tag);
        cpu.deallocate(p, bytes);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(corrupt == 0);
  CHECK(cpu.stats().bytes_in_use == 0);
  CHECK(cpu.stats().num_allocs == successes);
  CHECK(cpu.stats().peak_bytes_in_use <= 64 * MiB);
}

TEST_CASE("bfc_allocator: splitting, best fit and coalescing of neighbours", "[memory][bfc]") {
  host_bfc bfc({.memory_limit = 1 * MiB, .allow_growth = false});
  CHECK(bfc.regions().empty());
  auto a = bfc.allocate(1000, 64);
  auto b = bfc.allocate(1000, 64);
  auto c = bfc.allocate(1000, 64);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  // Without growth the first allocation takes the whole limit as one region, and the chunks are cut
  // from its start in order.
  REQUIRE(bfc.regions().size() == 1);
  CHECK(bfc.regions()[0].bytes == 1 * MiB);
  CHECK(*a == bfc.regions()[0].base);
  CHECK(addr(*b) == addr(*a) + 1024);
  CHECK(addr(*c) == addr(*b) + 1024);
  CHECK(*bfc.allocated_size(*a) == 1024);
  CHECK(*bfc.requested_size(*a) == 1000);
  CHECK(bfc.regions()[0].num_chunks == 4);
  CHECK(bfc.stats().bytes_in_use == 3 * 1024);
  require_ok(bfc.check_invariants());

  bfc.deallocate(*b, 1000);  // between two chunks in use: stays alone
  CHECK(bfc.regions()[0].num_chunks == 4);
  CHECK(bfc.regions()[0].num_free_chunks == 2);
  require_ok(bfc.check_invariants());
  bfc.deallocate(*a, 1000);  // merges with b
  CHECK(bfc.regions()[0].num_chunks == 3);
  CHECK(bfc.regions()[0].num_free_chunks == 2);
  require_ok(bfc.check_invariants());

  // Best fit: the merged 2048-byte chunk, not the large rest of the region.
  auto d = bfc.allocate(2000, 64);
  REQUIRE(d.ok());
  CHECK(*d == *a);
  CHECK(*bfc.allocated_size(*d) == 2048);
  CHECK(bfc.regions()[0].num_free_chunks == 1);
  bfc.deallocate(*c, 1000);  // merges with the rest of the region
  CHECK(bfc.regions()[0].num_chunks == 2);
  bfc.deallocate(*d, 2000);  // merges with both: one chunk again
  require_all_regions_free(bfc);
  CHECK(bfc.stats().bytes_in_use == 0);
  CHECK(bfc.stats().largest_free_block == 1 * MiB);
  require_ok(bfc.check_invariants());

  // A chunk is split only when the rest is as large as the request: 700 KiB takes all of 1 MiB.
  auto big = bfc.allocate(700 * KiB, 64);
  REQUIRE(big.ok());
  CHECK(*bfc.allocated_size(*big) == 1 * MiB);
  CHECK(bfc.stats().bytes_in_use == 1 * MiB);
  CHECK(bfc.stats().largest_free_block == 0);
  tf::test::require_error(bfc.allocate(1, 64), tf::status_code::resource_exhausted, "out of memory allocating 1 bytes");
  bfc.deallocate(*big, 700 * KiB);
  require_ok(bfc.check_invariants());
}

TEST_CASE("bfc_allocator: zero bytes, alignments above 256 and misuse", "[memory][bfc][alignment]") {
  host_bfc bfc({.memory_limit = 1 * MiB, .allow_growth = false});
  auto z1 = bfc.allocate(0, 64);
  auto z2 = bfc.allocate(0, 1);
  REQUIRE(z1.ok());
  REQUIRE(z2.ok());
  CHECK(*z1 != nullptr);
  CHECK(*z1 != *z2);
  CHECK(*bfc.allocated_size(*z1) == 256);
  CHECK(*bfc.requested_size(*z2) == 0);

  // 4096-byte alignment inside a region whose free part starts 512 bytes in: the bytes up to the next
  // multiple of 4096 stay a free chunk of their own.
  const auto base = addr(bfc.regions()[0].base);
  const std::size_t free_start = base + 512;
  const std::size_t pad = (4096 - free_start % 4096) % 4096;
  auto a = bfc.allocate(100, 4096);
  REQUIRE(a.ok());
  CHECK(addr(*a) % 4096 == 0);
  CHECK(addr(*a) == free_start + pad);
  CHECK(bfc.regions()[0].num_chunks == (pad != 0 ? 5u : 4u));
  require_ok(bfc.check_invariants());
  auto b = bfc.allocate(3000, 2048);
  REQUIRE(b.ok());
  CHECK(addr(*b) % 2048 == 0);
  require_ok(bfc.check_invariants());
  bfc.deallocate(*a, 100);
  bfc.deallocate(*b, 3000);
  bfc.deallocate(*z1, 0);
  bfc.deallocate(*z2, 0);
  require_all_regions_free(bfc);
  require_ok(bfc.check_invariants());

  // An alignment beyond the limit cannot be met in any region this pool may hold.
  tf::test::require_error(bfc.allocate(16, 2 * MiB), tf::status_code::resource_exhausted, "larger than the memory limit");
  tf::test::require_error(bfc.allocate(2 * MiB, 64), tf::status_code::resource_exhausted, "cannot allocate 2097152 bytes");

  // A deallocate of a foreign address, a double free and a wrong size are refused or noted, never fatal.
  auto c = bfc.allocate(10, 64);
  REQUIRE(c.ok());
  bfc.deallocate(*c, 10);
  bfc.deallocate(*c, 10);
  auto st = bfc.check_invariants();
  CHECK(st.code() == tf::status_code::failed_precondition);
  CHECK(std::string(st.message()).find("not a block in use") != std::string::npos);
  int local = 0;
  bfc.deallocate(&local, sizeof local);
  CHECK(std::string(bfc.check_invariants().message()).find("2 misuse(s)") != std::string::npos);
  CHECK(bfc.stats().bytes_in_use == 0);
}

TEST_CASE("bfc_allocator: regions double with growth, up to the hard limit", "[memory][bfc][limit]") {
  host_bfc bfc({.memory_limit = 64 * MiB, .allow_growth = true, .initial_region_bytes = 1 * MiB});
  const auto region_sizes = [&] {
    std::vector<std::size_t> sizes;
    for (const auto& r : bfc.regions()) sizes.push_back(r.bytes);
    std::sort(sizes.begin(), sizes.end());
    return sizes;
  };
  auto a = bfc.allocate(512 * KiB, 64);
  REQUIRE(a.ok());
  CHECK(region_sizes() == std::vector<std::size_t>{1 * MiB});
  auto b = bfc.allocate(900 * KiB, 64);  // does not fit in the 512 KiB left: a second region, twice the first
  REQUIRE(b.ok());
  CHECK(region_sizes() == std::vector<std::size_t>{1 * MiB, 2 * MiB});
  auto c = bfc.allocate(20 * MiB, 64);  // the region size doubles until the request fits: 4 -> 8 -> 16 -> 32
  REQUIRE(c.ok());
  CHECK(region_sizes() == std::vector<std::size_t>{1 * MiB, 2 * MiB, 32 * MiB});
  CHECK(bfc.stats().bytes_reserved == 35 * MiB);

  // 29 MiB are left under the limit: 40 MiB cannot be had, and the message says why.
  auto d = bfc.allocate(40 * MiB, 64);
  tf::test::require_error(d, tf::status_code::resource_exhausted, "out of memory allocating 41943040 bytes");
  tf::test::require_error(d, tf::status_code::resource_exhausted, "bytes_limit=67108864");
  tf::test::require_error(d, tf::status_code::resource_exhausted, "bytes_reserved=36700160");
  tf::test::require_error(d, tf::status_code::resource_exhausted, "bytes_in_use=" + std::to_string(*bfc.allocated_size(*a) + *bfc.allocated_size(*b) + *bfc.allocated_size(*c)));
  // 29 MiB can: the next region is cut down to what the limit leaves.
  auto e = bfc.allocate(29 * MiB, 64);
  REQUIRE(e.ok());
  CHECK(region_sizes() == std::vector<std::size_t>{1 * MiB, 2 * MiB, 29 * MiB, 32 * MiB});
  CHECK(bfc.stats().bytes_reserved == 64 * MiB);
  tf::test::require_error(bfc.allocate(13 * MiB, 64), tf::status_code::resource_exhausted, "13631488 bytes");
  require_ok(bfc.check_invariants());

  const std::array<std::pair<void*, std::size_t>, 4> blocks{{{*a, 512 * KiB}, {*b, 900 * KiB}, {*c, 20 * MiB}, {*e, 29 * MiB}}};
  std::size_t chunk_bytes = 0;
  for (auto [p, n] : blocks) chunk_bytes += *bfc.allocated_size(p);
  CHECK(chunk_bytes == 512 * KiB + 900 * KiB + 32 * MiB + 29 * MiB);  // c took its whole region: no split
  for (auto [p, n] : blocks) bfc.deallocate(p, n);
  require_all_regions_free(bfc);
  require_ok(bfc.check_invariants());
  CHECK(bfc.stats().bytes_in_use == 0);
  CHECK(bfc.stats().largest_free_block == 32 * MiB);
  CHECK(bfc.stats().peak_bytes_in_use == chunk_bytes);
}

TEST_CASE("bfc_allocator: the limit raised and lowered while in use gives free regions back, never a block in use",
          "[memory][bfc][limit]") {
  tf::bfc_allocator<capped_sub_allocator> bfc({.memory_limit = 8 * MiB, .allow_growth = true, .initial_region_bytes = 1 * MiB},
                                              std::in_place, 64 * MiB);
  CHECK(bfc.memory_limit() == 8 * MiB);
  auto a = bfc.allocate(1 * MiB, 64);   // region 1: 1 MiB
  auto b = bfc.allocate(2 * MiB, 64);   // region 2: 2 MiB
  auto c = bfc.allocate(4 * MiB, 64);   // region 3: 4 MiB
  REQUIRE((a.ok() && b.ok() && c.ok()));
  CHECK(bfc.stats().bytes_reserved == 7 * MiB);
  tf::test::require_error(bfc.allocate(2 * MiB, 64), tf::status_code::resource_exhausted, "bytes_limit=8388608");

  // Raised: the pool grows again.
  bfc.set_memory_limit(16 * MiB);
  auto d = bfc.allocate(2 * MiB, 64);
  REQUIRE(d.ok());
  CHECK(bfc.stats().bytes_reserved == 15 * MiB);   // region 4: 8 MiB (the doubling goes on)
  bfc.deallocate(*d, 2 * MiB);
  require_ok(bfc.check_invariants());

  // Lowered to 4 MiB: the free 8 MiB region goes back at once; the others hold blocks and stay.
  CHECK(bfc.set_memory_limit(4 * MiB + 100) == 7 * MiB);
  CHECK(bfc.memory_limit() == 4 * MiB);           // rounded down to 256 bytes
  CHECK(bfc.sub().used == 7 * MiB);
  require_ok(bfc.check_invariants());
  // Over the limit nothing grows, even for a request that would fit under the old one.
  tf::test::require_error(bfc.allocate(1 * MiB, 64), tf::status_code::resource_exhausted, "bytes_limit=4194304");
  // Freeing a region's last block while over the limit gives the region back.
  bfc.deallocate(*b, 2 * MiB);
  CHECK(bfc.stats().bytes_reserved == 5 * MiB);
  bfc.deallocate(*a, 1 * MiB);
  CHECK(bfc.stats().bytes_reserved == 4 * MiB);   // at the limit: the 4 MiB region stays
  CHECK(bfc.sub().used == 4 * MiB);
  require_ok(bfc.check_invariants());
  // Under the limit again, freed regions stay in the pool.
  bfc.deallocate(*c, 4 * MiB);
  CHECK(bfc.stats().bytes_reserved == 4 * MiB);
  auto e = bfc.allocate(3 * MiB, 64);
  REQUIRE(e.ok());
  CHECK(bfc.regions().size() == 1);
  bfc.deallocate(*e, 3 * MiB);
  // Lowered to zero: every free region goes back, and nothing can be allocated.
  CHECK(bfc.set_memory_limit(0) == 0);
  CHECK(bfc.sub().used == 0);
  CHECK(bfc.regions().empty());
  tf::test::require_error(bfc.allocate(256, 64), tf::status_code::resource_exhausted, "larger than the memory limit of 0");
  require_ok(bfc.check_invariants());
  bfc.set_memory_limit(8 * MiB);
  auto f = bfc.allocate(1 * MiB, 64);
  REQUIRE(f.ok());
  bfc.deallocate(*f, 1 * MiB);
  require_ok(bfc.check_invariants());
}

TEST_CASE("bfc_allocator: without growth the limit is one region from the start", "[memory][bfc][limit]") {
  host_bfc bfc({.memory_limit = 8 * MiB, .allow_growth = false});
  auto a = bfc.allocate(1 * KiB, 64);
  REQUIRE(a.ok());
  REQUIRE(bfc.regions().size() == 1);
  CHECK(bfc.regions()[0].bytes == 8 * MiB);
  auto b = bfc.allocate(6 * MiB, 64);
  REQUIRE(b.ok());
  auto c = bfc.allocate(4 * MiB, 64);
  tf::test::require_error(c, tf::status_code::resource_exhausted, "4194304 bytes");
  tf::test::require_error(c, tf::status_code::resource_exhausted, "bytes_limit=8388608");
  CHECK(bfc.regions().size() == 1);
  bfc.deallocate(*b, 6 * MiB);
  auto d = bfc.allocate(4 * MiB, 64);
  REQUIRE(d.ok());
  CHECK(bfc.regions().size() == 1);
  bfc.deallocate(*a, 1 * KiB);
  bfc.deallocate(*d, 4 * MiB);
  require_all_regions_free(bfc);
  require_ok(bfc.check_invariants());
}

TEST_CASE("bfc_allocator: a refusing sub-allocator yields smaller regions, then resource_exhausted",
          "[memory][bfc][limit]") {
  tf::bfc_allocator<capped_sub_allocator> bfc({.memory_limit = 64 * MiB, .initial_region_bytes = 2 * MiB},
                                             std::in_place, 4 * MiB);
  auto a = bfc.allocate(1 * MiB, 64);
  REQUIRE(a.ok());
  CHECK(bfc.sub().used == 2 * MiB);
  // The next region would be 4 MiB, more than the 2 MiB the sub-allocator has left: sizes shrink by
  // 10% until one is granted that still holds the request.
  auto b = bfc.allocate(1536 * KiB, 64);
  REQUIRE(b.ok());
  CHECK(bfc.sub().refusals > 0);
  REQUIRE(bfc.regions().size() == 2);
  CHECK(bfc.sub().used <= 4 * MiB);
  // Shrinking is tried once in the pool's life (as TensorFlow's backpedal): now the request fails.
  auto c = bfc.allocate(1536 * KiB, 64);
  tf::test::require_error(c, tf::status_code::resource_exhausted, "out of memory allocating 1572864 bytes");
  CHECK(bfc.regions().size() == 2);
  require_ok(bfc.check_invariants());
  bfc.deallocate(*a, 1 * MiB);
  bfc.deallocate(*b, 1536 * KiB);
  require_ok(bfc.check_invariants());
}

namespace {

struct bfc_run {
  std::uint64_t seed;
  bool allow_growth;
  std::size_t limit;
  int ops;
};

struct bfc_run_result {
  std::size_t successes = 0;
  std::size_t failures = 0;
};

// Random allocate/free: sizes log-uniform in [1 B, 64 MiB], alignments 64..4096, at most 48 blocks
// live. Every block is aligned, overlaps no other live chunk and keeps its pattern until it is freed;
// a failure must be resource_exhausted and justified (no free chunk fits, the limit leaves no room
// for a region); the counters match the live blocks; and once everything is freed, each region is
// a single free chunk.
bfc_run_result run_bfc(const bfc_run& run) {
  INFO("seed " << run.seed << ", allow_growth " << run.allow_growth);
  host_bfc bfc({.memory_limit = run.limit, .allow_growth = run.allow_growth});
  std::mt19937_64 rng(run.seed);
  struct block {
    void* p;
    std::size_t bytes;
    std::size_t chunk;
    std::uint64_t tag;
  };
  std::vector<block> live;
  std::map<std::uintptr_t, std::uintptr_t> spans;  // chunk start -> end, of live blocks
  bfc_run_result out;
  std::size_t live_chunk_bytes = 0, largest_chunk = 0, last_peak = 0;

  const auto free_one = [&](std::size_t k) {
    const block b = live[k];
    INFO("freeing " << b.bytes << " bytes at " << b.p);
    REQUIRE(pattern_errors(b.p, b.bytes, b.tag) == 0);
    bfc.deallocate(b.p, b.bytes);
    spans.erase(addr(b.p));
    live_chunk_bytes -= b.chunk;
    live[k] = live.back();
    live.pop_back();
  };

  for (int op = 0; op < run.ops; ++op) {
    if (live.empty() || (live.size() < 48 && rng() % 100 < 55)) {
      const std::size_t bytes = random_size(rng, 64 * MiB);
      const std::size_t alignment = random_alignment(rng);
      INFO("op " << op << ": allocate " << bytes << " bytes aligned to " << alignment);
      auto p = bfc.allocate(bytes, alignment);
      if (!p.ok()) {
        ++out.failures;
        tf::test::require_error(p, tf::status_code::resource_exhausted, "allocating " + std::to_string(bytes) + " bytes");
        tf::test::require_error(p, tf::status_code::resource_exhausted, "bytes_in_use=" + std::to_string(live_chunk_bytes));
        const auto s = bfc.stats();
        const std::size_t rounded = host_bfc::rounded_bytes(bytes);
        CHECK(s.largest_free_block < rounded + (alignment > 256 ? alignment - 256 : 0));
        CHECK(rounded > run.limit - s.bytes_reserved);
        continue;
      }
      ++out.successes;
      REQUIRE(*p != nullptr);
      REQUIRE(addr(*p) % alignment == 0);
      const std::size_t chunk = *bfc.allocated_size(*p);
      REQUIRE(chunk >= host_bfc::rounded_bytes(bytes));
      REQUIRE(chunk % 256 == 0);
      REQUIRE(*bfc.requested_size(*p) == bytes);
      const std::uintptr_t start = addr(*p), end = start + chunk;
      auto next = spans.lower_bound(start);
      if (next != spans.end()) REQUIRE(end <= next->first);
      if (next != spans.begin()) REQUIRE(std::prev(next)->second <= start);
      spans.emplace(start, end);
      const std::uint64_t tag = run.seed * 1000003 + static_cast<std::uint64_t>(op);
      write_pattern(*p, bytes, tag);
      live.push_back({*p, bytes, chunk, tag});
      live_chunk_bytes += chunk;
      largest_chunk = std::max(largest_chunk, chunk);
    } else {
      free_one(rng() % live.size());
    }

    if (op % 250 == 0) {
      const auto s = bfc.stats();
      CHECK(s.bytes_in_use == live_chunk_bytes);
      CHECK(s.num_allocs == out.successes);
      CHECK(s.peak_bytes_in_use >= s.bytes_in_use);
      CHECK(s.peak_bytes_in_use >= last_peak);
      CHECK(s.largest_alloc_size == largest_chunk);
      CHECK(s.bytes_reserved <= run.limit);
      CHECK(s.largest_free_block <= s.bytes_reserved - s.bytes_in_use);
      last_peak = s.peak_bytes_in_use;
    }
    if (op % 2000 == 0) require_ok(bfc.check_invariants());
  }

  require_ok(bfc.check_invariants());
  while (!live.empty()) free_one(rng() % live.size());
  require_ok(bfc.check_invariants());
  require_all_regions_free(bfc);
  const auto s = bfc.stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.num_allocs == out.successes);
  std::size_t reserved = 0, largest_region = 0;
  for (const auto& r : bfc.regions()) {
    reserved += r.bytes;
    largest_region = std::max(largest_region, r.bytes);
  }
  CHECK(s.bytes_reserved == reserved);
  CHECK(s.largest_free_block == largest_region);
  if (!run.allow_growth) CHECK(bfc.regions().size() == 1);
  return out;
}

} // namespace

TEST_CASE("bfc_allocator: 20000 random operations keep every block and invariant intact", "[memory][bfc][random]") {
  const std::uint64_t seed = GENERATE(1u, 2u, 3u);
  const bool growth = GENERATE(true, false);
  const auto result = run_bfc({seed, growth, 320 * MiB, 20000});
  INFO("successes " << result.successes << ", failures " << result.failures);
  CHECK(result.successes > 9000);
  // The limit is small enough for large requests to hit it now and then (about 1% of them).
  CHECK(result.failures > 0);
}

TEST_CASE("bfc_allocator: four threads share one pool", "[memory][bfc][threads]") {
  host_bfc bfc({.memory_limit = 256 * MiB, .allow_growth = true, .initial_region_bytes = 1 * MiB});
  std::atomic<std::size_t> successes{0}, failures{0}, corrupt{0}, misaligned{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(7 + t);
      std::vector<std::tuple<void*, std::size_t, std::uint64_t>> live;
      for (int i = 0; i < (tf::test::under_thread_sanitizer ? 500 : 4000); ++i) {
        if (live.empty() || (live.size() < 32 && rng() % 2 == 0)) {
          const std::size_t bytes = random_size(rng, 256 * KiB);
          const std::size_t alignment = random_alignment(rng);
          auto p = bfc.allocate(bytes, alignment);
          if (!p.ok()) {
            ++failures;
            continue;
          }
          ++successes;
          misaligned += addr(*p) % alignment != 0;
          const std::uint64_t tag = (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint64_t>(i);
          write_pattern(*p, bytes, tag);
          live.emplace_back(*p, bytes, tag);
        } else {
          const std::size_t k = rng() % live.size();
          auto [p, bytes, tag] = live[k];
          corrupt += pattern_errors(p, bytes, tag);
          bfc.deallocate(p, bytes);
          live[k] = live.back();
          live.pop_back();
        }
      }
      for (auto [p, bytes, tag] : live) {
        corrupt += pattern_errors(p, bytes, tag);
        bfc.deallocate(p, bytes);
      }
    });
  }
  // The structure stays consistent while the workers run (each check takes the pool's lock).
  std::size_t checks = 0;
  std::thread checker([&] {
    while (!done.load()) {
      if (!bfc.check_invariants().ok()) ++corrupt;
      ++checks;
      // Under ThreadSanitizer a checker that takes the lock back at once starves the workers.
      if constexpr (tf::test::under_thread_sanitizer) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      else std::this_thread::yield();
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  checker.join();
  CHECK(checks > 0);
  CHECK(corrupt == 0);
  CHECK(misaligned == 0);
  CHECK(failures == 0);
  const auto s = bfc.stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.num_allocs == successes);
  require_ok(bfc.check_invariants());
  require_all_regions_free(bfc);
}

TEST_CASE("tracking_allocator records each step's bytes, peak and counts", "[memory][tracking]") {
  tf::tracking_allocator<tf::cpu_allocator> t(std::in_place);
  auto a = t.allocate(100, 64);
  auto b = t.allocate(200, 64);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  t.deallocate(*a, 100);
  tf::test::require_error(t.allocate(1, 3), tf::status_code::invalid_argument, "alignment 3");
  auto r = t.step_record();
  CHECK(r.bytes_allocated == 300);
  CHECK(r.bytes_deallocated == 100);
  CHECK(r.num_allocs == 2);
  CHECK(r.num_deallocs == 1);
  CHECK(r.num_failed_allocs == 1);
  CHECK(r.peak_bytes_in_use == 300);
  CHECK(r.bytes_in_use == 200);
  CHECK(t.stats().bytes_in_use == 200);  // the wrapped allocator's stats

  CHECK(t.reset_step() == r);
  // b, live from the last step, counts towards this step's peak even once it is freed.
  t.deallocate(*b, 200);
  auto c = t.allocate(50, 64);
  REQUIRE(c.ok());
  r = t.step_record();
  CHECK(r.bytes_allocated == 50);
  CHECK(r.bytes_deallocated == 200);
  CHECK(r.num_allocs == 1);
  CHECK(r.num_failed_allocs == 0);
  CHECK(r.peak_bytes_in_use == 200);
  CHECK(r.bytes_in_use == 50);
  t.deallocate(*c, 50);
  CHECK(t.step_record().bytes_in_use == 0);
  CHECK(t.inner().stats().bytes_in_use == 0);

  // By reference, around a pool that others use too, and under a tensor.
  host_bfc bfc({.memory_limit = 4 * MiB});
  tf::tracking_allocator tracked(bfc);
  {
    auto x = tf::tensor::allocate(tracked, tf::dtype::f32, tf::shape{16, 16});
    REQUIRE(x.ok());
    CHECK(tracked.step_record().bytes_allocated == 16 * 16 * 4);
    CHECK(bfc.stats().bytes_in_use == 1024);
  }
  CHECK(tracked.step_record().num_deallocs == 1);
  CHECK(tracked.step_record().bytes_in_use == 0);
  CHECK(bfc.stats().bytes_in_use == 0);
}

TEST_CASE("guard_allocator catches overruns and underruns without aborting", "[memory][guard]") {
  tf::cpu_allocator cpu;
  tf::guard_allocator guard(cpu);

  auto clean = guard.allocate(100, 64);
  REQUIRE(clean.ok());
  CHECK(addr(*clean) % 64 == 0);
  std::memset(*clean, 0, 100);  // every byte of the block, none past it
  guard.deallocate(*clean, 100);
  CHECK(guard.violations().empty());
  require_ok(guard.check());

  auto over = guard.allocate(100, 64);
  REQUIRE(over.ok());
  auto* o = static_cast<unsigned char*>(*over);
  o[100] = 0;  // one past the end
  o[102] = 0;
  guard.deallocate(*over, 100);
  auto v = guard.violations();
  REQUIRE(v.size() == 1);
  CHECK(v[0].what == tf::guard_violation::kind::overrun);
  CHECK(v[0].block == *over);
  CHECK(v[0].bytes == 100);
  CHECK(v[0].first_offset == 100);
  CHECK(v[0].last_offset == 102);
  CHECK(v[0].corrupted_bytes == 2);

  auto under = guard.allocate(40, 4096);
  REQUIRE(under.ok());
  CHECK(addr(*under) % 4096 == 0);
  static_cast<unsigned char*>(*under)[-1] = 0;  // one before the start
  // A live block's damage shows in check() before the block is given back.
  auto live = guard.check();
  CHECK(live.code() == tf::status_code::internal);
  CHECK(std::string(live.message()).find("1 in blocks still live") != std::string::npos);
  CHECK(guard.violations().size() == 1);
  guard.deallocate(*under, 40);
  v = guard.violations();
  REQUIRE(v.size() == 2);
  CHECK(v[1].what == tf::guard_violation::kind::underrun);
  CHECK(v[1].first_offset == -1);
  CHECK(v[1].last_offset == -1);
  CHECK(v[1].bytes == 40);

  // Addresses it did not hand out, and wrong sizes, are recorded; the foreign address is not passed on.
  int local = 0;
  guard.deallocate(&local, sizeof local);
  auto odd = guard.allocate(10, 64);
  REQUIRE(odd.ok());
  guard.deallocate(*odd, 11);
  v = guard.violations();
  REQUIRE(v.size() == 4);
  CHECK(v[2].what == tf::guard_violation::kind::unknown_block);
  CHECK(v[3].what == tf::guard_violation::kind::size_mismatch);

  const auto st = guard.check();
  CHECK(st.code() == tf::status_code::internal);
  const std::string msg(st.message());
  CHECK(msg.find("4 violation(s)") != std::string::npos);
  CHECK(msg.find("overrun of block") != std::string::npos);
  CHECK(msg.find("offsets 100..102") != std::string::npos);
  CHECK(msg.find("underrun of block") != std::string::npos);
  CHECK(msg.find("offsets -1..-1") != std::string::npos);
  CHECK(guard.live_blocks() == 0);
  CHECK(cpu.stats().bytes_in_use == 0);  // every block went back with its true size

  // Zero bytes, and a guard over a pool: the canaries sit inside the pool's chunks.
  host_bfc bfc({.memory_limit = 4 * MiB});
  tf::guard_allocator pooled(bfc);
  auto z = pooled.allocate(0, 64);
  REQUIRE(z.ok());
  static_cast<unsigned char*>(*z)[0] = 1;  // the first byte past a zero-byte block
  pooled.deallocate(*z, 0);
  REQUIRE(pooled.violations().size() == 1);
  CHECK(pooled.violations()[0].what == tf::guard_violation::kind::overrun);
  CHECK(pooled.violations()[0].first_offset == 0);
  require_ok(bfc.check_invariants());
  CHECK(bfc.stats().bytes_in_use == 0);
}

TEST_CASE("fallback_allocator spills to the secondary when the primary is full", "[memory][fallback]") {
  host_bfc device({.memory_limit = 1 * MiB, .allow_growth = false});
  tf::cpu_allocator host;
  tf::fallback_allocator both(device, host);

  // 64 KiB blocks: the primary holds 16 of them, the rest spill.
  std::vector<void*> blocks;
  for (int i = 0; i < 24; ++i) {
    auto p = both.allocate(64 * KiB, 256);
    REQUIRE(p.ok());
    CHECK(addr(*p) % 256 == 0);
    write_pattern(*p, 64 * KiB, static_cast<std::uint64_t>(i));
    blocks.push_back(*p);
  }
  std::size_t from_device = 0;
  for (void* p : blocks) from_device += device.allocated_size(p).ok();
  CHECK(from_device == 16);
  auto sp = both.spills();
  CHECK(sp.num_spilled_allocs == 8);
  CHECK(sp.bytes_spilled == 8 * 64 * KiB);
  CHECK(sp.spilled_bytes_in_use == 8 * 64 * KiB);
  CHECK(host.stats().bytes_in_use == 8 * 64 * KiB);
  CHECK(device.stats().bytes_in_use == 1 * MiB);
  auto s = both.stats();
  CHECK(s.bytes_in_use == 24 * 64 * KiB);
  CHECK(s.num_allocs == 24);
  CHECK(s.bytes_limit == 0);  // the host side has none

  // An error other than resource_exhausted is not a reason to spill.
  tf::test::require_error(both.allocate(16, 24), tf::status_code::invalid_argument, "alignment 24");
  CHECK(both.spills().num_spilled_allocs == 8);

  // Free in a shuffled order: each block must reach the allocator that served it.
  std::vector<std::size_t> order(blocks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  for (std::size_t i : order) {
    CHECK(pattern_errors(blocks[i], 64 * KiB, i) == 0);
    both.deallocate(blocks[i], 64 * KiB);
  }
  CHECK(host.stats().bytes_in_use == 0);
  CHECK(device.stats().bytes_in_use == 0);
  CHECK(both.stats().bytes_in_use == 0);
  CHECK(both.stats().peak_bytes_in_use == 24 * 64 * KiB);
  CHECK(both.spills().spilled_bytes_in_use == 0);
  CHECK(both.spills().peak_spilled_bytes_in_use == 8 * 64 * KiB);
  require_ok(device.check_invariants());  // no block from the host side was given to the pool
  require_all_regions_free(device);

  // Both sides exhausted: the status says what each one said.
  tf::fallback_allocator<host_bfc&, tf::cpu_allocator> small(std::piecewise_construct, std::forward_as_tuple(device),
                                                             std::forward_as_tuple(1000));
  auto r = small.allocate(2 * MiB, 64);
  tf::test::require_error(r, tf::status_code::resource_exhausted, "bfc: cannot allocate 2097152 bytes");
  tf::test::require_error(r, tf::status_code::resource_exhausted, "cpu: allocating 2097152 bytes would exceed the limit of 1000");
  CHECK(small.stats().bytes_limit == 1 * MiB + 1000);
  CHECK(small.spills().num_spilled_allocs == 0);
}

TEST_CASE("tensors allocate from a pool and give their memory back when destroyed", "[memory][tensor]") {
  host_bfc bfc({.memory_limit = 16 * MiB});
  {
    tf::tensor copy;
    {
      auto t = tf::tensor::allocate(bfc, tf::dtype::f32, tf::shape{256, 256});
      REQUIRE(t.ok());
      CHECK(t->owns_buffer());
      CHECK(addr(t->data()) % tf::default_alignment == 0);
      CHECK(bfc.stats().bytes_in_use == 256 * 256 * 4);
      auto v = t->unchecked_values<float>();
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
      copy = *t;  // shares the buffer
    }
    CHECK(copy.use_count() == 1);
    CHECK(bfc.stats().bytes_in_use == 256 * 256 * 4);
    CHECK(*copy.at<float>(65535) == 65535.0f);

    auto empty = tf::tensor::allocate(bfc, tf::dtype::f64, tf::shape{0, 4});
    REQUIRE(empty.ok());
    CHECK(empty->valid());
    CHECK(bfc.stats().num_allocs == 2);
  }
  CHECK(bfc.stats().bytes_in_use == 0);
  require_ok(bfc.check_invariants());
  require_all_regions_free(bfc);

  // Too large for the pool: the pool's status comes back.
  tf::test::require_error(tf::tensor::allocate(bfc, tf::dtype::f32, tf::shape{1 << 30}),
                          tf::status_code::resource_exhausted, "bfc: cannot allocate 4294967296 bytes");

  // Through a guard over a fallback: every element written, nothing out of bounds.
  tf::cpu_allocator host;
  tf::fallback_allocator both(bfc, host);
  tf::guard_allocator guard(both);
  {
    auto big = tf::tensor::allocate(guard, tf::dtype::f64, tf::shape{1024, 1024});  // 8 MiB
    auto bigger = tf::tensor::allocate(guard, tf::dtype::f64, tf::shape{1024, 1024});  // does not fit beside it
    REQUIRE(big.ok());
    REQUIRE(bigger.ok());
    for (auto* t : {&*big, &*bigger}) std::fill_n(t->unchecked_data<double>(), t->num_elements(), 1.0);
    CHECK(both.spills().num_spilled_allocs == 1);
  }
  require_ok(guard.check());
  CHECK(bfc.stats().bytes_in_use == 0);
  CHECK(host.stats().bytes_in_use == 0);
  require_ok(bfc.check_invariants());
}
