// SPDX-License-Identifier: Apache-2.0
// Offsets in one arena for buffers with known sizes and lifetimes: the memory plan's algorithm.
// Everything is constexpr, so a static graph's plan is computed by the compiler; the same code
// runs at run time for shapes known only then.
//
// Greedy by size (as in TensorFlow Lite's arena planner and Pisarchyk & Lee, "Efficient Memory
// Management for Deep Neural Net Inference", 2020): buffers are placed largest first; each goes
// into the smallest gap, among the buffers already placed whose lifetimes overlap its own, that
// fits it, or above the highest of them. The result is checked against the max-live lower bound
// (the largest total of buffers live at one step), which no placement can beat.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>

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

}  // namespace detail

// Places the buffers; alignment must be a power of two. O(N^2) time in the number of buffers.
template <std::size_t N>
constexpr arena_layout<N> plan_arena(const std::array<buffer_lifetime, N>& buffers, std::size_t alignment) {
  arena_layout<N> layout{};
  std::array<std::size_t, N> size{};
  std::array<std::size_t, N> order{};  // largest first, then earliest first: a stable order
  std::size_t steps = 0;
  for (std::size_t i = 0; i < N; ++i) {
    size[i] = detail::round_up(buffers[i].bytes, alignment);
    order[i] = i;
    layout.total_bytes += size[i];
    if (buffers[i].bytes != 0 && buffers[i].last + 1 > steps) steps = buffers[i].last + 1;
  }
  for (std::size_t i = 1; i < N; ++i)  // insertion sort: stable and constexpr
    for (std::size_t j = i; j > 0 && size[order[j]] > size[order[j - 1]]; --j) {
      const std::size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }

  std::array<bool, N> placed{};
  std::array<std::size_t, N> near{};  // placed buffers live with the one being placed, by offset
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t b = order[k];
    if (size[b] == 0) continue;
    std::size_t count = 0;
    for (std::size_t j = 0; j < N; ++j)
      if (placed[j] && detail::lifetimes_overlap(buffers[j], buffers[b])) {
        std::size_t at = count++;
        for (; at > 0 && layout.offset[near[at - 1]] > layout.offset[j]; --at) near[at] = near[at - 1];
        near[at] = j;
      }
    // The smallest gap between (or below) those that fits; above the highest when none does.
    std::size_t best = 0;
    std::size_t best_gap = 0;
    bool found = false;
    std::size_t end = 0;  // where the region below the next placed buffer starts
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t o = layout.offset[near[i]];
      if (o >= end && o - end >= size[b] && (!found || o - end < best_gap)) {
        best = end;
        best_gap = o - end;
        found = true;
      }
      if (o + size[near[i]] > end) end = o + size[near[i]];
    }
    layout.offset[b] = found ? best : end;
    placed[b] = true;
    if (layout.offset[b] + size[b] > layout.arena_bytes) layout.arena_bytes = layout.offset[b] + size[b];
  }

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t live = 0;
    for (std::size_t i = 0; i < N; ++i)
      if (buffers[i].bytes != 0 && buffers[i].first <= s && s <= buffers[i].last) live += size[i];
    if (live > layout.lower_bound) layout.lower_bound = live;
  }
  return layout;
}

// True when no two buffers that are live at the same step overlap in the arena, every buffer
// lies inside it and every offset is aligned. The plan's own check, also made at compile time.
template <std::size_t N>
constexpr bool is_valid_layout(const std::array<buffer_lifetime, N>& buffers, const arena_layout<N>& layout,
                               std::size_t alignment) {
  for (std::size_t i = 0; i < N; ++i) {
    if (buffers[i].bytes == 0) continue;
    if (layout.offset[i] % alignment != 0 || layout.offset[i] + buffers[i].bytes > layout.arena_bytes) return false;
    for (std::size_t j = i + 1; j < N; ++j) {
      if (buffers[j].bytes == 0 || !detail::lifetimes_overlap(buffers[i], buffers[j])) continue;
      const bool apart = layout.offset[i] + buffers[i].bytes <= layout.offset[j] ||
                         layout.offset[j] + buffers[j].bytes <= layout.offset[i];
      if (!apart) return false;
    }
  }
  return true;
}

}  // namespace typeflow
