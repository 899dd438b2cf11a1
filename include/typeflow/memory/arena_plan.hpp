// SPDX-License-Identifier: Apache-2.0
// Offsets in one arena for buffers with known sizes and lifetimes: the memory plan's algorithm.
// Everything is constexpr, so a static graph's plan is computed by the compiler; the same code
// runs at run time for shapes known only then.
//
// Greedy by size (as in TensorFlow Lite's arena planner and Pisarchyk & Lee, "Efficient Memory
// Management for Deep Neural Net Inference", 2020): buffers are placed largest first; each goes
// into the smallest gap, among the buffers already placed whose lifetimes overlap its own, that
// fits it, or above the highest of them. The result is reported with the max-live lower bound
// (the largest total of buffers live at one step), which no placement can beat.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace typeflow {

// A buffer that is written at step `first` and last read at step `last` (first <= last), so it
// is live during [first, last]. bytes == 0 marks an unused entry.
struct buffer_lifetime {
  std::size_t bytes = 0;
  std::size_t first = 0;
  std::size_t last = 0;
};

template <std::size_t N>
struct arena_layout {
  std::array<std::size_t, N> offset{};  // of each buffer, a multiple of the alignment
  std::size_t arena_bytes = 0;          // the arena's size
  std::size_t lower_bound = 0;          // the most (aligned) bytes live at one step
  std::size_t total_bytes = 0;          // all (aligned) buffers side by side: the arena without reuse
};

namespace detail {

constexpr std::size_t round_up(std::size_t n, std::size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

constexpr bool lifetimes_overlap(const buffer_lifetime& a, const buffer_lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Sorts the first `count` elements of `a`. Arrays of up to 16 elements take an insertion sort:
// std::sort inlined on them makes GCC 12 warn -Warray-bounds about its insertion-sort threshold
// (16), a false positive that would reach every build of a user's small static graph.
template <class T, std::size_t N, class Less>
constexpr void sort_prefix(std::array<T, N>& a, std::size_t count, Less less) {
  if constexpr (N <= 16) {
    for (std::size_t i = 1; i < count; ++i)
      for (std::size_t j = i; j > 0 && less(a[j], a[j - 1]); --j) std::swap(a[j], a[j - 1]);
  } else {
    std::sort(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(count), less);
  }
}

template <class T, class Less>
void sort_prefix(std::vector<T>& a, std::size_t count, Less less) {
  std::sort(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(count), less);
}

}  // namespace detail

// The most (aligned) bytes live at one step: a sweep over the lifetimes' ends. O(N log N).
template <std::size_t N>
constexpr std::size_t max_live_bytes(const std::array<buffer_lifetime, N>& buffers, std::size_t alignment) {
  struct event {
    std::size_t step;
    bool end;  // the step after the buffer's last, where it is no longer live
    std::size_t bytes;
  };
  std::array<event, 2 * N> events{};
  std::size_t n = 0;
  for (const buffer_lifetime& b : buffers)
    if (b.bytes != 0) {
      events[n++] = event{b.first, false, detail::round_up(b.bytes, alignment)};
      events[n++] = event{b.last + 1, true, detail::round_up(b.bytes, alignment)};
    }
  detail::sort_prefix(events, n, [](const event& a, const event& b) {
    return a.step != b.step ? a.step < b.step : a.end && !b.end;  // ends first at a step
  });
  std::size_t live = 0, most = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (events[i].end) live -= events[i].bytes;
    else live += events[i].bytes;
    if (live > most) most = live;
  }
  return most;
}

namespace detail {

// The placement, on any indexable storage: std::array in a constant expression, std::vector at run
// time. Writes offset[i] for the n buffers (size, order and placed are scratch of n entries) and
// returns the arena's size. Largest first, each buffer goes into the smallest gap that the placed
// buffers live with it leave (or above them all). The placed buffers are kept sorted by offset, so
// placing one is a walk over them: O(M^2) for M non-empty buffers and no sort per buffer (a
// constant expression that sorted per buffer ran out of the compiler's operations for a graph of a
// thousand intermediates with long lifetimes).
template <class Buffers, class Indices>
constexpr std::size_t place_buffers(const Buffers& buffers, std::size_t n, std::size_t alignment, Indices& offset,
                                    Indices& size, Indices& order, Indices& placed) {
  std::size_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    size[i] = round_up(buffers[i].bytes, alignment);
    if (size[i] != 0) order[m++] = i;
  }
  const auto larger = [&](std::size_t a, std::size_t b) { return size[a] != size[b] ? size[a] > size[b] : a < b; };
  sort_prefix(order, m, larger);
  std::size_t arena_bytes = 0;
  for (std::size_t k = 0; k < m; ++k) {  // largest first, then by index
    const std::size_t b = order[k];
    // The smallest gap between (or below) the placed buffers live with b that fits; above the
    // highest when none does.
    std::size_t best = 0;
    std::size_t best_gap = 0;
    bool found = false;
    std::size_t end = 0;  // where the region below the next placed buffer starts
    for (std::size_t i = 0; i < k; ++i) {
      const std::size_t q = placed[i];
      if (!lifetimes_overlap(buffers[q], buffers[b])) continue;
      const std::size_t o = offset[q];
      if (o >= end && o - end >= size[b] && (!found || o - end < best_gap)) {
        best = end;
        best_gap = o - end;
        found = true;
      }
      if (o + size[q] > end) end = o + size[q];
    }
    offset[b] = found ? best : end;
    if (offset[b] + size[b] > arena_bytes) arena_bytes = offset[b] + size[b];
    std::size_t at = k;  // insert b after the placed buffers at or below its offset
    while (at > 0 && offset[placed[at - 1]] > offset[b]) {
      placed[at] = placed[at - 1];
      --at;
    }
    placed[at] = b;
  }
  return arena_bytes;
}

}  // namespace detail

// Places the buffers; alignment must be a power of two. O(M^2) for M non-empty buffers, with one
// M log M sort (a graph of a thousand intermediates stays inside the compiler's limits on constant
// evaluation).
template <std::size_t N>
constexpr arena_layout<N> plan_arena(const std::array<buffer_lifetime, N>& buffers, std::size_t alignment) {
  arena_layout<N> layout{};
  std::array<std::size_t, N> size{}, order{}, placed{};
  layout.arena_bytes = detail::place_buffers(buffers, N, alignment, layout.offset, size, order, placed);
  for (std::size_t i = 0; i < N; ++i) layout.total_bytes += size[i];
  layout.lower_bound = max_live_bytes(buffers, alignment);
  return layout;
}

// The same placement at run time, for buffers whose sizes are known only then (the runtime
// executor's plans per fed shapes): the offset of each buffer, and the arena's size.
struct run_time_arena_layout {
  std::vector<std::size_t> offset;
  std::size_t arena_bytes = 0;
};

inline run_time_arena_layout plan_arena(std::span<const buffer_lifetime> buffers, std::size_t alignment) {
  run_time_arena_layout layout;
  layout.offset.assign(buffers.size(), 0);
  std::vector<std::size_t> size(buffers.size()), order(buffers.size()), placed(buffers.size());
  layout.arena_bytes = detail::place_buffers(buffers, buffers.size(), alignment, layout.offset, size, order, placed);
  return layout;
}

// True when no two buffers that are live at the same step overlap in the arena, every buffer
// lies inside it and every offset is aligned. The plan's own check, also made at compile time.
template <std::size_t N>
constexpr bool is_valid_layout(const std::array<buffer_lifetime, N>& buffers, const arena_layout<N>& layout,
                               std::size_t alignment) {
  std::array<std::size_t, N> used{};
  std::size_t m = 0;
  for (std::size_t i = 0; i < N; ++i)
    if (buffers[i].bytes != 0) used[m++] = i;
  for (std::size_t a = 0; a < m; ++a) {
    const std::size_t i = used[a];
    if (layout.offset[i] % alignment != 0 || layout.offset[i] + buffers[i].bytes > layout.arena_bytes) return false;
    for (std::size_t c = a + 1; c < m; ++c) {
      const std::size_t j = used[c];
      if (!detail::lifetimes_overlap(buffers[i], buffers[j])) continue;
      const bool apart = layout.offset[i] + buffers[i].bytes <= layout.offset[j] ||
                         layout.offset[j] + buffers[j].bytes <= layout.offset[i];
      if (!apart) return false;
    }
  }
  return true;
}

}  // namespace typeflow
