// SPDX-License-Identifier: Apache-2.0
// parallel_assign(policy, out, expr): out = expr, for an elementwise Eigen expression (maps,
// coefficient-wise ops, broadcasts, constants, reshapes), evaluated by Eigen's evaluator for
// DefaultDevice over the blocks that policy.parallel_for hands out: all of it on the calling thread
// on cpu, split over the pool on thread_pool.
//   parallel_assign(ctx.device, y, x.unaryExpr(f));
//
// Why not `out.device(policy.eigen()) = expr`: that instantiates Eigen's whole executor once for
// DefaultDevice and again for ThreadPoolDevice (tiled block evaluation included), and the second
// allocates its task closures from the heap on every call. Here the evaluator, the loop over a range
// (Eigen's EvalRange, the loop its executors run) and their code are the same for every host
// policy; a thread_pool kernel adds only the split. A block starts at a multiple of four packets, as
// Eigen's thread-pool executor aligns them.
//
// Not for contractions, reductions or shuffles: their evaluators do work of their own before the
// loop (allocating the result of a full reduction, preferring blocks to coefficients); those use the
// policy's Eigen device. Nor for a plain copy, which Eigen's evaluator does as one memcpy before the
// loop, on the calling thread: parallel_copy(policy, from, to, bytes) splits it.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>

namespace typeflow {

namespace detail {

// out = expr as Eigen evaluates it on DefaultDevice: the evaluator and the loop over a range.
template <class OutMap, class Expr>
struct assignment {
  using out_type = std::remove_cvref_t<OutMap>;
  using assign_type = const Eigen::TensorAssignOp<out_type, const Expr>;
  using evaluator_type = Eigen::TensorEvaluator<assign_type, Eigen::DefaultDevice>;
  static constexpr bool vectorized = Eigen::internal::IsVectorizable<Eigen::DefaultDevice, assign_type>::value;
  using range = Eigen::internal::EvalRange<evaluator_type, Eigen::Index, vectorized>;
  // Indices a unit of a split covers: four packets (EvalRange's unrolled step), or one.
  static constexpr Eigen::Index unit = [] {
    if constexpr (vectorized)
      return Eigen::Index{4 * evaluator_type::PacketSize};
    else return Eigen::Index{1};
  }();

  out_type target;
  assign_type assign;
  // Stateless, and shared: a member of its own would be an object without a value whose address the
  // evaluator keeps (GCC's -Wmaybe-uninitialized says so at -Og, once per kernel).
  static constexpr Eigen::DefaultDevice device{};
  evaluator_type evaluator;

  assignment(const OutMap& out, const Expr& expr) : target(out), assign(target, expr), evaluator(assign, device) {}
  assignment(const assignment&) = delete;
  assignment& operator=(const assignment&) = delete;

  // Runs f(evaluator, size) between Eigen's set-up and clean-up of the expression's operands.
  template <class F>
  void run(F&& f) {
    if (evaluator.evalSubExprsIfNeeded(nullptr)) f(evaluator, Eigen::internal::array_prod(evaluator.dimensions()));
    evaluator.cleanup();
  }
  // Cycles a unit, with Eigen's cost model's prices of a load, a store and an operation.
  double unit_cycles() const {
    constexpr double memory_cycles = 11.0 / 64;
    return evaluator.costPerCoeff(vectorized).total_cost(memory_cycles, memory_cycles, 1.0) * static_cast<double>(unit);
  }
};

}  // namespace detail

template <class Policy, class OutMap, class Expr>
void parallel_assign(const Policy& policy, OutMap&& out, const Expr& expr) {
  using assignment = detail::assignment<OutMap, Expr>;
  assignment a(out, expr);
  a.run([&](typename assignment::evaluator_type& evaluator, Eigen::Index size) {
    constexpr Eigen::Index unit = assignment::unit;
    policy.parallel_for((size + unit - 1) / unit, a.unit_cycles(), [&](std::int64_t first, std::int64_t last) {
      assignment::range::run(&evaluator, static_cast<Eigen::Index>(first) * unit,
                             std::min(static_cast<Eigen::Index>(last) * unit, size));
    });
  });
}

// out[first, last) = expr[first, last), on the calling thread: the loop parallel_assign splits, for a
// caller that splits the work its own way (the fused kernel's rows). Not for a plain copy (expr a
// map), which Eigen's evaluator does whole, whatever the range.
template <class OutMap, class Expr>
void assign_range(OutMap&& out, const Expr& expr, Eigen::Index first, Eigen::Index last) {
  using assignment = detail::assignment<OutMap, Expr>;
  assignment a(out, expr);
  a.run([&](typename assignment::evaluator_type& evaluator, Eigen::Index) { assignment::range::run(&evaluator, first, last); });
}

// Cycles a coefficient of out = expr costs, by Eigen's cost model (parallel_for's unit of work).
template <class OutMap, class Expr>
double assign_cycles(OutMap&& out, const Expr& expr) {
  using assignment = detail::assignment<OutMap, Expr>;
  const assignment a(out, expr);
  return a.unit_cycles() / static_cast<double>(assignment::unit);
}

// Cycles per byte copied, for parallel_for's cost model: memcpy moves several bytes per cycle.
// Eigen's model then splits a copy over threads from about half a megabyte.
inline constexpr double copy_cycles_per_byte = 0.25;

// Copies `bytes` bytes from `from` to `to` (not overlapping), split over the policy's threads.
template <class Policy>
void parallel_copy(const Policy& policy, const void* from, void* to, std::int64_t bytes) {
  if (bytes <= 0) return;
  // Blocks of 4 KiB: the unit parallel_for hands out, small against any copy worth splitting.
  constexpr std::int64_t block = 4096;
  const auto* src = static_cast<const unsigned char*>(from);
  auto* dst = static_cast<unsigned char*>(to);
  policy.parallel_for((bytes + block - 1) / block, copy_cycles_per_byte * block, [&](std::int64_t first, std::int64_t last) {
    const std::int64_t begin = first * block, end = std::min(bytes, last * block);
    std::memcpy(dst + begin, src + begin, static_cast<std::size_t>(end - begin));
  });
}

}  // namespace typeflow
