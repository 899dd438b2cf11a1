// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda's top_k (ops/nn.hpp): the k largest entries of each row of x viewed as [rows, n],
// their values and their positions. Each entry's rank in its row under the CPU kernel's strict order
// (NaN above every number, larger first, the lower position first among equals) decides where it
// goes, so the result is the CPU's whatever the thread order: sorted, rank r goes to output r; not
// sorted, a selected entry goes after the selected entries before it in the row. A thread per entry
// counts the entries ranked before it: O(n) per entry, O(n^2) per row spread over n threads, which
// suits the rows of classifiers and small vocabularies (thousands); a row of millions wants a radix
// select, which this is not.
#pragma once

#include <cstdint>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

struct top_k_params {
  elem type = elem::f32;  // of x and values: f16, bf16, f32, f64, i32, i64
  std::int64_t rows = 0, n = 0, k = 0;
  bool sorted = true;
  const void* x = nullptr;         // [rows, n]
  void* values = nullptr;          // [rows, k]
  std::int64_t* indices = nullptr; // [rows, k]
  std::int64_t* ranks = nullptr;   // [rows, n] of scratch, not sorted only
};

// Whether entry a (value va) ranks before entry b (value vb) of one row.
template <class A>
TYPEFLOW_HOST_DEVICE constexpr bool ranks_before(A va, std::int64_t a, A vb, std::int64_t b) {
  const bool na = va != va, nb = vb != vb;  // NaN: integers never are
  if (na || nb) return na && nb ? a < b : na;
  return va > vb || (!(vb > va) && a < b);
}

// The rank of entry p of `row` (n entries): how many entries rank before it.
template <class A, class T>
TYPEFLOW_HOST_DEVICE std::int64_t top_k_rank(const T* row, std::int64_t n, std::int64_t p) {
  const A v = static_cast<A>(row[p]);
  std::int64_t rank = 0;
  for (std::int64_t q = 0; q < n; ++q) rank += ranks_before(static_cast<A>(row[q]), q, v, p) ? 1 : 0;
  return rank;
}

// Where a selected entry p (rank < k) goes among a row's k outputs when they are not sorted: after
// the selected entries before it in the row.
TYPEFLOW_HOST_DEVICE constexpr std::int64_t unsorted_slot(const std::int64_t* ranks, std::int64_t p, std::int64_t k) {
  std::int64_t slot = 0;
  for (std::int64_t q = 0; q < p; ++q) slot += ranks[q] < k ? 1 : 0;
  return slot;
}

// Checks the parameters without a device: dtype, 0 <= k <= n, element counts that fit, non-null
// pointers (the ranks when not sorted) for a non-empty output.
TYPEFLOW_CUDA_API status validate(const top_k_params& p);
// Enqueues top_k on `s` (two kernels when not sorted: the ranks, then the slots).
TYPEFLOW_CUDA_API status top_k(const stream& s, const top_k_params& p);

} // namespace typeflow::gpu
