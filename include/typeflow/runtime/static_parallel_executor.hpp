// SPDX-License-Identifier: Apache-2.0
// static_parallel_executor<Plan, Devices, Registry>: runs a static plan's steps with TensorFlow's
// parallel algorithm (runtime/detail/parallel_step.hpp, the runtime executor's), on a DAG that the
// compiler computed: successor lists, initial pending counts, roots and which steps are expensive
// are constexpr arrays, and each step is the static executor's: data and a function chosen at
// compile time (one indirect call per step, no virtual kernel, no std::function).
//  - Edges: a step waits for the steps whose nodes it reads (a fused group reads its leaves), and
//    steps that read or assign one variable keep their order in the plan, so a parallel run
//    computes what the sequential one does. Input and constant steps are a prologue that the
//    calling thread runs first; edges from them are not counted.
//  - Memory: every intermediate keeps a buffer of its own in the state, reused from run to run
//    while its shape holds (no heap allocation per step once sized). The arena of the sequential
//    executor's memory plan assumes the sequential order of steps and is not used here. A small
//    elementwise step runs its kernel on those buffers' data, as the sequential executor does
//    (static_steps' op_step::run_elements): no tensor views, context or status per step.
//  - Asynchronous kernels finish through their callback; the pool thread goes on meanwhile. So do
//    transfers to or from a device whose copies complete through a callback: the steps of
//    several devices run at once wherever the DAG lets them.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/graph/memory_plan.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/runtime/detail/parallel_step.hpp>
#include <typeflow/runtime/static_executor.hpp>

namespace typeflow {

// The static_executor whose steps a parallel executor runs: no memory plan; small elementwise steps
// on bare data, in their outputs' own buffers. A name of its own, so that a session names its
// executor's type without instantiating the parallel executor (its tables and its DAG are compile-time
// work in proportion to the graph: 2.8 of a 12-layer transformer session's 11 s with Clang 19).
template <class Plan, static_devices Devices, class Registry>
using static_parallel_steps = static_executor<Plan, Devices, Registry, /*PlanMemory=*/false, /*BareData=*/true>;

template <class Plan, static_devices Devices, class Registry>
class static_parallel_executor {
  using group = device_group_t<Devices>;
  using graph = typename Plan::graph_type;
  using nodes = typename graph::nodes;
  using reads = static_memory_plan<Plan>;  // step_of and for_each_read (its arena is not used)
  static constexpr std::size_t num_steps = Plan::num_steps;

 public:
  // The steps' data and functions.
  using steps = static_parallel_steps<Plan, Devices, Registry>;
  using state = typename steps::state;

  // Runs one step on `pool` and the calling thread; the first error, or ok.
  static status run(Devices& devices, Eigen::ThreadPoolInterface& pool, state& s, const static_environment& env) {
    steps::check_devices();
    const group g = as_device_group(devices);
    for (std::size_t i = 0; i < arrays.num_prologue; ++i) {
      status st;
      steps::start(arrays.prologue_steps[i], g, s, env, st, detail::step_completion{});  // never asynchronous
      if (!st.ok()) return st;
    }
    std::array<std::atomic<std::uint32_t>, num_steps> pending;
    body b{g, s, env};
    detail::parallel_step<body> step(dag, b, pool, std::span(pending));
    return step.run();
  }

  // The variable each step reads or assigns (graph::size for other steps).
  static constexpr std::array<std::size_t, num_steps> variable_of_step = [] {
    std::array<std::size_t, num_steps> v{};
    for (std::size_t k = 0; k < num_steps; ++k) {
      const std::size_t p = Plan::steps[k];
      v[k] = graph::kinds[p] == node_kind::variable ? p
             : graph::kinds[p] == node_kind::assign ? graph::position_of_id(graph::assigned[p])
                                                     : graph::size;
    }
    return v;
  }();

  // The previous step that reads or assigns the same variable as step k (num_steps for none):
  // one pass, where searching back from every step ran past Clang's constant-evaluation step limit
  // on a model's few hundred variables.
  static constexpr std::array<std::size_t, num_steps> previous_on_variable = [] {
    std::array<std::size_t, num_steps> prev{};
    std::array<std::size_t, graph::size + 1> last{};
    last.fill(num_steps);
    for (std::size_t k = 0; k < num_steps; ++k) {
      prev[k] = variable_of_step[k] == graph::size ? num_steps : last[variable_of_step[k]];
      if (variable_of_step[k] != graph::size) last[variable_of_step[k]] = k;
    }
    return prev;
  }();

  // The prologue: input and constant steps, which the calling thread runs before the others
  // start, so edges from them are not counted (no atomic operation per edge).
  static constexpr std::array<bool, num_steps> prologue = [] {
    std::array<bool, num_steps> p{};
    for (std::size_t k = 0; k < num_steps; ++k)
      p[k] = graph::kinds[Plan::steps[k]] == node_kind::input || graph::kinds[Plan::steps[k]] == node_kind::constant;
    return p;
  }();

  // Calls f(a, b) for every edge from step a to step b that is not from the prologue, b in
  // increasing order.
  template <class F>
  static constexpr void for_each_edge(F&& f) {
    for (std::size_t b = 0; b < num_steps; ++b) {
      reads::for_each_read(Plan::steps[b], [&](std::size_t q) {
        if (!prologue[reads::step_of[q]]) f(reads::step_of[q], b);
      });
      if (previous_on_variable[b] != num_steps) f(previous_on_variable[b], b);
    }
  }

  static constexpr std::size_t num_edges = [] {
    std::size_t n = 0;
    for_each_edge([&](std::size_t, std::size_t) { ++n; });
    return n;
  }();

  struct dag_arrays {
    std::array<std::uint32_t, num_steps + 1> successor_begin{};
    std::array<std::uint32_t, num_edges + 1> successors{};  // + 1: never a zero-sized array
    std::array<std::uint32_t, num_steps> pending{};
    std::array<std::uint32_t, num_steps> roots{};  // without the prologue
    std::size_t num_roots = 0;
    std::array<std::uint32_t, num_steps> prologue_steps{};
    std::size_t num_prologue = 0;
    std::array<bool, num_steps> expensive{};
  };
  static constexpr dag_arrays arrays = [] {
    dag_arrays d{};
    std::array<std::uint32_t, num_steps> out{};
    for_each_edge([&](std::size_t a, std::size_t b) {
      ++out[a];
      ++d.pending[b];
    });
    for (std::size_t a = 0; a < num_steps; ++a) d.successor_begin[a + 1] = d.successor_begin[a] + out[a];
    std::array<std::uint32_t, num_steps> fill{};
    for_each_edge([&](std::size_t a, std::size_t b) {
      d.successors[d.successor_begin[a] + fill[a]++] = static_cast<std::uint32_t>(b);
    });
    for (std::size_t k = 0; k < num_steps; ++k) {
      if (prologue[k]) d.prologue_steps[d.num_prologue++] = static_cast<std::uint32_t>(k);
      else if (d.pending[k] == 0) d.roots[d.num_roots++] = static_cast<std::uint32_t>(k);
    }
    d.expensive = steps::expensive;
    return d;
  }();
  static_assert(arrays.successor_begin[num_steps] == num_edges,
                "typeflow: internal error: a static plan's step edges were counted twice differently");

  static constexpr detail::step_dag dag{
      std::span<const std::uint32_t>(arrays.successor_begin),
      std::span<const std::uint32_t>(arrays.successors.data(), num_edges),
      std::span<const std::uint32_t>(arrays.pending),
      std::span<const std::uint32_t>(arrays.roots.data(), arrays.num_roots),
      std::span<const bool>(arrays.expensive)};

 private:
  struct body {
    const group& g;
    state& s;
    const static_environment& env;
    bool start(std::uint32_t k, status& st, detail::step_completion done) const { return steps::start(k, g, s, env, st, done); }
  };
};

}  // namespace typeflow
