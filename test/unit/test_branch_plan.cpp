// SPDX-License-Identifier: Apache-2.0
// plan_branches (runtime/branch_plan.hpp), the streams a CUDA-graph capture spreads a plan's steps
// over: on random plans whose steps read and write random, overlapping byte ranges (as a memory
// plan's reused arena makes them), every two steps that conflict stay ordered (by their branch or by
// waits), no wait is redundant with its branch's order, and independent work spreads out.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include <typeflow/runtime/branch_plan.hpp>

namespace tf = typeflow;

namespace {

tf::memory_range bytes(std::uintptr_t begin, std::uintptr_t end) { return {begin, end}; }

bool conflict(const tf::step_access& a, const tf::step_access& b) {
  const auto any = [](const auto& x, const auto& y) {
    for (const auto& r : x)
      for (const auto& s : y)
        if (r.overlaps(s)) return true;
    return false;
  };
  return any(a.writes, b.reads) || any(a.writes, b.writes) || any(a.reads, b.writes);
}

} // namespace

TEST_CASE("independent chains take a branch each, and a join waits for the others") {
  // Three chains of two steps, each in its own memory, then a step that reads all three.
  std::vector<tf::step_access> steps;
  for (std::uintptr_t c = 0; c < 3; ++c) {
    const std::uintptr_t base = 1000 * (c + 1);
    steps.push_back({{bytes(0, 100)}, {bytes(base, base + 100)}});                // reads x
    steps.push_back({{bytes(base, base + 100)}, {bytes(base + 200, base + 300)}});
  }
  steps.push_back({{bytes(1200, 1300), bytes(2200, 2300), bytes(3200, 3300)}, {bytes(5000, 5100)}});
  const tf::branch_plan p = tf::plan_branches(steps, 4);
  CHECK(p.branches == 3);
  for (std::size_t c = 0; c < 3; ++c) CHECK(p.branch[2 * c] == p.branch[2 * c + 1]);
  CHECK(p.branch[0] != p.branch[2]);
  CHECK(p.branch[2] != p.branch[4]);
  CHECK(p.waits[6].size() == 2);  // the join continues one chain and waits for the two others
  for (std::size_t k = 0; k < 6; ++k) CHECK(p.ordered(k, 6));
  CHECK_FALSE(p.ordered(0, 2));
}

TEST_CASE("a write into reused bytes waits for the last readers of what was there") {
  // Step 0 writes A; steps 1 and 2 read A on two branches; step 3 (independent of both by data)
  // writes into A's bytes, as a memory plan that reuses them would have it.
  std::vector<tf::step_access> steps{
      {{bytes(0, 10)}, {bytes(100, 200)}},
      {{bytes(100, 200)}, {bytes(300, 400)}},
      {{bytes(100, 200)}, {bytes(500, 600)}},
      {{bytes(0, 10)}, {bytes(150, 250)}},
  };
  const tf::branch_plan p = tf::plan_branches(steps, 4);
  CHECK(p.ordered(1, 3));
  CHECK(p.ordered(2, 3));
  CHECK(p.ordered(0, 3));
}

TEST_CASE("one branch is the plan's order; empty ranges conflict with nothing") {
  std::vector<tf::step_access> steps{{{}, {bytes(0, 8)}}, {{}, {bytes(8, 16)}}, {{bytes(5, 5)}, {bytes(16, 24)}}};
  const tf::branch_plan one = tf::plan_branches(steps, 1);
  CHECK(one.branches == 1);
  for (std::size_t k = 0; k < steps.size(); ++k) CHECK(one.waits[k].empty());
  CHECK(one.ordered(0, 2));
  const tf::branch_plan three = tf::plan_branches(steps, 3);
  CHECK(three.branches == 3);
  CHECK_FALSE(three.ordered(0, 1));
  CHECK(tf::plan_branches({}, 4).branches == 0);
  CHECK(tf::plan_branches(steps, 0).branches == 1);  // at least one branch
}

TEST_CASE("on random plans every conflicting pair is ordered, and waits are neither on the own branch nor redundant") {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40);
    const int max_branches = 1 + static_cast<int>(rng() % 6);
    std::vector<tf::step_access> steps(static_cast<std::size_t>(n));
    for (auto& s : steps) {
      const auto range = [&] {
        const std::uintptr_t b = rng() % 400;
        return bytes(b, b + 1 + rng() % 60);
      };
      for (std::uint64_t r = rng() % 3; r > 0; --r) s.reads.push_back(range());
      for (std::uint64_t w = 1 + rng() % 2; w > 0; --w) s.writes.push_back(range());
    }
    const tf::branch_plan p = tf::plan_branches(steps, max_branches);
    INFO("trial " << trial << ", " << n << " steps, " << max_branches << " branches");
    REQUIRE(p.branches <= max_branches);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      REQUIRE(p.branch[k] >= 0);
      REQUIRE(p.branch[k] < p.branches);
      for (std::size_t j = 0; j < k; ++j)
        if (conflict(steps[j], steps[k])) REQUIRE(p.ordered(j, k));
      for (std::size_t j : p.waits[k]) {
        REQUIRE(j < k);
        CHECK(p.branch[j] != p.branch[k]);
        CHECK(p.recorded[j]);
      }
      // No wait is implied by the others and the branch's order.
      for (std::size_t w = 0; w < p.waits[k].size(); ++w) {
        tf::branch_plan without = p;
        without.waits[k].erase(without.waits[k].begin() + static_cast<std::ptrdiff_t>(w));
        CHECK_FALSE(without.ordered(p.waits[k][w], k));
      }
    }
  }
}
