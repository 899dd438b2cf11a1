// SPDX-License-Identifier: Apache-2.0
// plan_branches: which of a few streams each step of a sequential plan runs on, and which earlier
// steps on other streams it waits for, so that steps that do not depend on each other run at once
// and every two steps that touch the same memory stay in their order.
//
// Two steps conflict when one writes bytes the other reads or writes. The order is the plan's; the
// memory is what each step reads and writes in this run, not only its inputs: a memory plan reuses
// an intermediate's bytes for a later one, so a step that writes reused bytes must also wait for the
// last readers of what was there (a write-after-read conflict no data edge shows). A step continues
// the branch of a dependency that is still that branch's last step; otherwise it starts on the branch
// used longest ago. A wait is left out when the waiting branch already knows the step has finished
// (each branch keeps, per branch, the last step it has waited for, directly or through others).
// What a CUDA graph capture forks its streams by (runtime/cuda_graph.hpp); no CUDA is needed here.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace typeflow {

// Bytes [begin, end) of one memory space; an empty range conflicts with nothing.
struct memory_range {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;

  constexpr bool overlaps(const memory_range& o) const noexcept {
    return begin < end && o.begin < o.end && begin < o.end && o.begin < end;
  }
};

// What one step reads and writes.
struct step_access {
  std::vector<memory_range> reads;
  std::vector<memory_range> writes;
};

struct branch_plan {
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  std::vector<int> branch;                       // per step: its branch, 0 to branches - 1
  std::vector<std::vector<std::size_t>> waits;   // per step: earlier steps on other branches to wait for
  std::vector<bool> recorded;                    // per step: someone waits for it (an event follows it)
  std::vector<std::size_t> tails;                // per branch: its last step, or none when unused
  int branches = 0;                              // branches used

  // Whether step a finishes before step b starts (a < b), by the order of a branch and the waits.
  bool ordered(std::size_t a, std::size_t b) const {
    if (a >= b) return false;
    std::vector<bool> seen(b + 1, false);
    std::vector<std::size_t> frontier{b};  // steps to walk back from
    while (!frontier.empty()) {
      const std::size_t k = frontier.back();
      frontier.pop_back();
      if (k == a) return true;
      if (k < a || seen[k]) continue;
      seen[k] = true;
      for (std::size_t j : waits[k]) frontier.push_back(j);
      for (std::size_t j = k; j-- > a;)
        if (branch[j] == branch[k]) {
          frontier.push_back(j);
          break;
        }
    }
    return false;
  }
};

namespace detail {
inline bool conflicts(const step_access& earlier, const step_access& later) {
  const auto any = [](const std::vector<memory_range>& x, const std::vector<memory_range>& y) {
    for (const memory_range& a : x)
      for (const memory_range& b : y)
        if (a.overlaps(b)) return true;
    return false;
  };
  return any(earlier.writes, later.reads) || any(earlier.writes, later.writes) || any(earlier.reads, later.writes);
}
}  // namespace detail

// The branches of `steps` (in their sequential order) over at most max_branches streams (at least 1).
inline branch_plan plan_branches(std::span<const step_access> steps, int max_branches) {
  const std::size_t n = steps.size();
  const auto b_max = static_cast<std::size_t>(std::max(max_branches, 1));
  branch_plan plan;
  plan.branch.assign(n, 0);
  plan.waits.assign(n, {});
  plan.recorded.assign(n, false);
  plan.tails.assign(b_max, branch_plan::none);
  // known[b][c]: one past the last step of branch c that branch b has seen finish (0: none).
  std::vector<std::vector<std::size_t>> known(b_max, std::vector<std::size_t>(b_max, 0));
  // What each step's branch knew when it finished: the waits of later steps merge it.
  std::vector<std::vector<std::size_t>> known_after(n);
  std::vector<std::size_t> last_use(b_max, 0);  // when a branch last took a step (for least recently used)
  std::vector<std::size_t> deps;
  for (std::size_t k = 0; k < n; ++k) {
    deps.clear();
    for (std::size_t j = 0; j < k; ++j)
      if (detail::conflicts(steps[j], steps[k])) deps.push_back(j);
    // A dependency that is still its branch's tail: continue that branch (the latest such).
    std::size_t b = b_max;
    for (std::size_t d = deps.size(); d-- > 0;) {
      const auto db = static_cast<std::size_t>(plan.branch[deps[d]]);
      if (plan.tails[db] == deps[d]) {
        b = db;
        break;
      }
    }
    if (b == b_max) {
      // An unused branch first, else the one used longest ago.
      b = 0;
      for (std::size_t c = 0; c < b_max; ++c) {
        if (plan.tails[c] == branch_plan::none) {
          b = c;
          break;
        }
        if (last_use[c] < last_use[b]) b = c;
      }
    }
    // The latest dependencies first: what they knew covers earlier ones, whose waits are then left out.
    std::vector<std::size_t>& kb = known[b];
    for (std::size_t d = deps.size(); d-- > 0;) {
      const std::size_t j = deps[d];
      const auto jb = static_cast<std::size_t>(plan.branch[j]);
      if (jb == b || kb[jb] > j) continue;  // the branch's own order, or known through an earlier wait
      plan.waits[k].push_back(j);
      plan.recorded[j] = true;
      for (std::size_t c = 0; c < b_max; ++c) kb[c] = std::max(kb[c], known_after[j][c]);
    }
    plan.branch[k] = static_cast<int>(b);
    kb[b] = k + 1;
    known_after[k] = kb;
    plan.tails[b] = k;
    last_use[b] = k + 1;
  }
  for (std::size_t c = 0; c < b_max; ++c)
    if (plan.tails[c] != branch_plan::none) plan.branches = static_cast<int>(c) + 1;
  return plan;
}

}  // namespace typeflow
