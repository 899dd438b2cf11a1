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
// policy's Eigen device.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>

namespace typeflow {

template <class Policy, class OutMap, class Expr>
void parallel_assign(const Policy& policy, OutMap&& out, const Expr& expr) {
  using out_type = std::remove_cvref_t<OutMap>;
  using assign_type = const Eigen::TensorAssignOp<out_type, const Expr>;
  using evaluator_type = Eigen::TensorEvaluator<assign_type, Eigen::DefaultDevice>;
  constexpr bool vectorized = Eigen::internal::IsVectorizable<Eigen::DefaultDevice, assign_type>::value;
  using range = Eigen::internal::EvalRange<evaluator_type, Eigen::Index, vectorized>;
  // Indices a unit of the split covers: four packets (EvalRange's unrolled step), or one.
  constexpr Eigen::Index unit = [] {
    if constexpr (vectorized)
      return Eigen::Index{4 * evaluator_type::PacketSize};
    else return Eigen::Index{1};
  }();

  out_type target = out;
  const assign_type assign(target, expr);
  const Eigen::DefaultDevice device;
  evaluator_type evaluator(assign, device);
  if (evaluator.evalSubExprsIfNeeded(nullptr)) {
    const Eigen::Index size = Eigen::internal::array_prod(evaluator.dimensions());
    // Cycles a unit, with Eigen's cost model's prices of a load, a store and an operation.
    constexpr double memory_cycles = 11.0 / 64;
    const double cycles = evaluator.costPerCoeff(vectorized).total_cost(memory_cycles, memory_cycles, 1.0) *
                          static_cast<double>(unit);
    policy.parallel_for((size + unit - 1) / unit, cycles, [&](std::int64_t first, std::int64_t last) {
      range::run(&evaluator, static_cast<Eigen::Index>(first) * unit,
                 std::min(static_cast<Eigen::Index>(last) * unit, size));
    });
  }
  evaluator.cleanup();
}

}  // namespace typeflow
