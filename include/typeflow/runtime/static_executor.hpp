// SPDX-License-Identifier: Apache-2.0
// static_executor<Plan, Devices, Registry>: runs a static plan's steps in their compile-time order.
// Each step is data (a static_step_info in a constexpr array) and a function chosen at compile
// time (runtime/static_steps.hpp: one per op value, kernel, device and arity, not per node), called
// through a constexpr table: one indirect call per step, no virtual kernel, no std::function and no
// per-node heap allocation once a state's buffers are sized. The compiler names no function per
// node after the graph, so a graph of a thousand nodes compiles in time linear in its size.
// Intermediates with static shapes live in the state's arena at the offsets of the plan's
// static_memory_plan (allocated once per state); with run-time dimensions the plan is made once
// per distinct set of input shapes and cached (run_time_plans). Other outputs keep a buffer of
// their own, reused while its dtype and shape are unchanged and no fetched tensor still shares it.
// A state holds one tensor per graph node, and one per further output of an op with several
// (static_graph::output_slot); a session keeps a pool of states, so runs on several threads never
// share one. An output node takes a share of the tensor its op wrote, for its readers and fetches,
// and lets it go when the run ends, so the next run's op writes into the same buffer again.
// Devices is one device policy or a device_group: each step runs on its node's device (the kernel
// of that policy type, chosen at compile time), the arena is the first device's, and a transfer
// step gives its reader the value on the reader's device: the same tensor when both devices read
// host memory, else a copy through the policies into a buffer of its own, reused from run to run.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/copy.hpp>
#include <typeflow/device/device_group.hpp>
#include <typeflow/graph/memory_plan.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/graph/plan.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/runtime/launch.hpp>
#include <typeflow/runtime/run_time_plans.hpp>
#include <typeflow/runtime/static_steps.hpp>
#include <typeflow/runtime/variable_store.hpp>

namespace typeflow {

// One tensor per slot of a graph (static_graph::num_slots) with Inputs input nodes, and the arena
// the planned ones live in. `bound` names the memory plan whose offsets the slots hold (plans differ by their
// fetches) and `fed` the input shapes it was made for, when it was made at run time.
template <std::size_t Size, std::size_t Inputs>
struct static_state {
  std::array<tensor, Size> slots;
  tensor arena;
  const void* bound = nullptr;
  std::array<shape, Inputs> fed{};
};


// PlanMemory = false gives every output a buffer of its own (no arena, no forwarding): the
// reference the memory plan is tested against. BareData = true runs a small elementwise step's
// kernel on its slots' data (static_step_info::elementwise_elements), in the arena or in the
// output's own buffer; without a plan it is false unless asked (the parallel executor, whose steps
// keep their own buffers), so that the reference goes through tensors.
template <class Plan, static_devices Devices, class Registry, bool PlanMemory = true, bool BareData = PlanMemory>
class static_executor {
  using graph = typename Plan::graph_type;
  using nodes = typename graph::nodes;
  using group = device_group_t<Devices>;
  static constexpr std::size_t num_steps = Plan::num_steps;

 public:
  using state = static_state<graph::num_slots, graph::num_input_nodes>;
  using memory = static_memory_plan<Plan>;
  using steps = static_steps<group>;

  // The position in the group of the device that runs each node, and its policy type.
  static constexpr const auto& node_device = node_device_indices<group, nodes>::value;
  template <std::size_t P>
  using device_t = typename group::template type<node_device[P]>;

  // The first node the plan runs on a device type the group lacks, or graph::size.
  static constexpr std::size_t first_unknown_device = [] {
    for (std::size_t k = 0; k < num_steps; ++k)
      if (node_device_indices<group, nodes>::in_group[Plan::steps[k]] == group::size) return Plan::steps[k];
    return graph::size;
  }();

  // A compile error naming that node, its device type and the group's devices; what both static
  // executors check before they run.
  static constexpr void check_devices() {
    static_assert(first_unknown_device == graph::size || compile_error<detail::text_constant<[] {
                    constexpr std::size_t u = first_unknown_device;
                    if constexpr (u == graph::size) return detail::text();
                    else
                      return detail::cat("static graph: node ", u, " (", graph::names[u], ") is placed on ",
                                         graph::device_types[u], " (",
                                         detail::type_name<device_of_node<node_at_t<u, nodes>>>(),
                                         "), which is not among the session's devices: ", group::describe().view(),
                                         "; give the session a tf::device_group with a device of that type");
                  }>::value>::value,
                  "typeflow: every device type a run's nodes are placed on must be among the session's devices");
  }

  // ---- The steps as data ----------------------------------------------------------------------

  static constexpr static_step_kind kind_of_step(std::size_t k) {
    const std::size_t p = Plan::steps[k];
    switch (graph::kinds[p]) {
      case node_kind::input: return static_step_kind::input;
      case node_kind::variable: return static_step_kind::variable;
      case node_kind::constant: return static_step_kind::constant;
      case node_kind::assign: return static_step_kind::assign;
      case node_kind::output: return static_step_kind::output;
      case node_kind::transfer: return static_step_kind::transfer;
      default: return Plan::is_fused_root(p) ? static_step_kind::fused : static_step_kind::op;
    }
  }
  static constexpr std::array<static_step_kind, num_steps> step_kinds = [] {
    std::array<static_step_kind, num_steps> a{};
    for (std::size_t k = 0; k < num_steps; ++k) a[k] = kind_of_step(k);
    return a;
  }();

  // The node whose inputs step k's function reads: its own, or an output node's op's.
  static constexpr std::size_t reader_of(std::size_t k) {
    const std::size_t p = Plan::steps[k];
    return step_kinds[k] == static_step_kind::output ? graph::input(p, 0) : p;
  }
  // The slots step k reads, written to out (when given); their number.
  static constexpr std::size_t reads_of_step(std::size_t k, std::size_t* out) {
    const std::size_t p = reader_of(k);
    if (step_kinds[k] == static_step_kind::fused) {
      const auto l = Plan::leaves_of(p);
      for (std::size_t j = 0; out != nullptr && j < l.count; ++j) out[j] = l.positions[j];
      return l.count;
    }
    for (std::size_t j = 0; out != nullptr && j < graph::num_inputs[p]; ++j) out[j] = graph::input(p, j);
    return graph::num_inputs[p];
  }
  static constexpr std::array<std::size_t, num_steps + 1> read_begin = [] {
    std::array<std::size_t, num_steps + 1> b{};
    for (std::size_t k = 0; k < num_steps; ++k) b[k + 1] = b[k] + reads_of_step(k, nullptr);
    return b;
  }();
  static constexpr std::array<std::size_t, read_begin[num_steps] + 1> read_slots = [] {  // + 1: never empty
    std::array<std::size_t, read_begin[num_steps] + 1> a{};
    for (std::size_t k = 0; k < num_steps; ++k) reads_of_step(k, a.data() + read_begin[k]);
    return a;
  }();
  static constexpr std::array<tensor_spec, read_begin[num_steps] + 1> read_specs = [] {
    std::array<tensor_spec, read_begin[num_steps] + 1> a{};
    for (std::size_t j = 0; j < read_begin[num_steps]; ++j) a[j] = graph::specs[read_slots[j]];
    return a;
  }();

  // The variable number of each slot read, for an op's step (packed operands: kernels/packed_operand.hpp).
  static constexpr std::array<std::size_t, read_begin[num_steps] + 1> read_variables = [] {
    std::array<std::size_t, read_begin[num_steps] + 1> a{};
    a.fill(no_variable);
    for (std::size_t k = 0; k < num_steps; ++k)
      if (step_kinds[k] == static_step_kind::op)
        for (std::size_t j = read_begin[k]; j < read_begin[k + 1]; ++j)
          if (graph::kinds[read_slots[j]] == node_kind::variable) a[j] = graph::variable_index[read_slots[j]];
    return a;
  }();

  static constexpr std::array<static_step_info, num_steps> infos = [] {
    std::array<static_step_info, num_steps> a{};
    for (std::size_t k = 0; k < num_steps; ++k) {
      const std::size_t p = Plan::steps[k];
      static_step_info& i = a[k];
      i.node = p;
      i.name = graph::names[p];
      i.spec = graph::specs[p];
      const std::size_t n = read_begin[k + 1] - read_begin[k];
      i.inputs = std::span<const std::size_t>(read_slots.data() + read_begin[k], n);
      i.input_specs = std::span<const tensor_spec>(read_specs.data() + read_begin[k], n);
      i.input_variables = std::span<const std::size_t>(read_variables.data() + read_begin[k], n);
      i.inputs_known = true;
      for (std::size_t j = 0; j < n; ++j) i.inputs_known = i.inputs_known && i.input_specs[j].dims.is_fully_defined();
      i.error_node = reader_of(k);
      i.error_name = graph::names[i.error_node];
      i.output_slot = step_kinds[k] == static_step_kind::output ? graph::output_slot(graph::input(p, 0), graph::ports[p])
                                                                : graph::output_slot(p, 0);
      i.port = step_kinds[k] == static_step_kind::output ? graph::ports[p] : 0;
      if (graph::kinds[p] == node_kind::input) i.index = graph::input_node_index[p];
      else if (graph::kinds[p] == node_kind::variable) i.index = graph::variable_index[p];
      else if (graph::kinds[p] == node_kind::assign) i.index = graph::variable_index[graph::position_of_id(graph::assigned[p])];
      i.value = graph::constant_values[p];
      i.plannable = PlanMemory && memory::plannable[p];
      // An op or fused step with one output, in the arena or not (an output the plan leaves out,
      // fetched, kept by an assign or a transfer, or placed, keeps a buffer of its own).
      const bool one_output = (step_kinds[k] == static_step_kind::op || step_kinds[k] == static_step_kind::fused) &&
                              !graph::multi_output[p];
      if (BareData && one_output && i.inputs_known && i.spec.dims.is_fully_defined()) {
        const std::int64_t e = i.spec.dims.num_elements();
        // An input of as many elements as the output broadcasts to it element for element ([] or
        // [1, 1] to [1]; [4] to [1, 4]): a dimension of 1 where the output's is larger would leave it fewer.
        bool same = n > 0 && e > 0 && e <= small_elementwise_elements;
        for (std::size_t j = 0; j < n; ++j) same = same && i.input_specs[j].dims.num_elements() == e;
        if (same) i.elementwise_elements = e;
      }
    }
    return a;
  }();

  // The slots step k writes, from infos[k].output_slot: an op's outputs (an output node's and the
  // other kinds': 1).
  static constexpr std::array<std::size_t, num_steps> output_counts = [] {
    std::array<std::size_t, num_steps> a{};
    for (std::size_t k = 0; k < num_steps; ++k) {
      const std::size_t p = Plan::steps[k];
      const bool op = step_kinds[k] == static_step_kind::op || step_kinds[k] == static_step_kind::fused;
      a[k] = op && graph::multi_output[p] ? graph::num_outputs[p] : 1;
    }
    return a;
  }();

  // ---- The function of each step ----------------------------------------------------------------

  // The kernel of op type Op for step K: chosen by the registry for the step's device and dtype.
  template <std::size_t K, class Op>
  using step_kernel = typename Registry::template kernel<Op, device_t<Plan::steps[K]>,
                                                         element_t<kernel_dtype<Op>(infos[K].input_specs, infos[K].spec)>>;
  template <std::size_t K, auto Op>
  using op_runner = typename steps::template op_step<Op, step_kernel<K, std::remove_cvref_t<decltype(Op)>>,
                                                     node_device[Plan::steps[K]], read_begin[K + 1] - read_begin[K],
                                                     graph::multi_output[Plan::steps[K]] ? graph::num_outputs[Plan::steps[K]] : 1>;

  // The function of step K: no constant or function of its own is instantiated per step (the op
  // value is the node's, or a fused group's made in place), so nothing per node is named after the graph.
  template <std::size_t K, static_step_kind Kind = step_kinds[K]>
  struct runner_of {
    using type = op_runner<K, node_at_t<Plan::steps[K], nodes>::op>;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::fused> {
    using type = op_runner<K, fused_op_of<Plan, Plan::steps[K]>{}>;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::input> {
    using type = typename steps::template input_step<node_device[Plan::steps[K]]>;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::variable> {
    using type = typename steps::variable_step;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::constant> {
    using type = typename steps::template constant_step<node_device[Plan::steps[K]], element_t<graph::specs[Plan::steps[K]].type>>;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::assign> {
    using type = typename steps::assign_step;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::output> {
    using type = typename steps::template output_step<node_at_t<reader_of(K), nodes>::op, read_begin[K + 1] - read_begin[K]>;
  };
  template <std::size_t K>
  struct runner_of<K, static_step_kind::transfer> {
    using type = typename steps::template transfer_step<node_device[graph::input(Plan::steps[K], 0)],
                                                        node_device[Plan::steps[K]]>;
  };
  template <std::size_t K>
  using runner = typename runner_of<K>::type;

  using run_fn = typename steps::run_fn;
  using infer_fn = typename steps::infer_fn;
  // Step K's run function: an op's on bare data when the step is small and elementwise (known here,
  // at compile time: no branch on it when it runs), else its runner's. Without BareData no step has
  // elementwise_elements, and this table names no run_elements.
  template <std::size_t K>
  static constexpr run_fn run_of() {
    if constexpr (BareData)
      if constexpr (requires { requires runner<K>::runs_on_elements; })
        if (infos[K].elementwise_elements != 0) return &runner<K>::run_elements;
    return &runner<K>::run;
  }
  static constexpr std::array<run_fn, num_steps> run_table = []<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return std::array<run_fn, num_steps>{run_of<Ks>()...};
  }(std::make_index_sequence<num_steps>{});
  static constexpr std::array<infer_fn, num_steps> infer_table = []<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return std::array<infer_fn, num_steps>{runner<Ks>::infer...};
  }(std::make_index_sequence<num_steps>{});
  // Whether a parallel executor hands a step to the pool: its kernel's is_expensive; steps that
  // only move a tensor (inputs, variables, constants, assigns, transfers) are cheap.
  static constexpr std::array<bool, num_steps> expensive = []<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return std::array<bool, num_steps>{runner<Ks>::expensive...};
  }(std::make_index_sequence<num_steps>{});

  // ---- Running ------------------------------------------------------------------------------------

  // Points the state's planned slots into its arena for these feeds (the plan made at compile time,
  // or the one for the fed shapes), unless they point there already. What run() does first; a
  // caller that runs the steps itself (a CUDA-graph session) calls it before them.
  static status bind(const group& g, state& s, const static_environment& env) {
    if constexpr (PlanMemory && memory::is_static && memory::static_layout.num_planned != 0) {
      if (s.bound != &memory::tag) return bind_arena(g, s, memory::static_layout, memory::static_shapes);
    } else if constexpr (PlanMemory && !memory::is_static) {
      if (s.bound != &memory::tag || !same_feeds(s, env)) return plan_at_run_time(g, s, env);
    }
    return ok_status();
  }

  static status run(Devices& devices, state& s, const static_environment& env) {
    check_devices();
    const group g = as_device_group(devices);
    if (auto st = bind(g, s, env); !st.ok()) return st;
    status st;
    for (std::size_t k = 0; k < num_steps; ++k) {
      run_step(k, g, s, env, st);
      if (!st.ok()) return st;
    }
    return st;
  }

  // Runs step k to its end (an asynchronous kernel waited for), its status in st: what run() does
  // for each step, and a CUDA-graph session for the steps it runs itself.
  static void run_step(std::size_t k, const group& g, state& s, const static_environment& env, status& st) {
    run_table[k](infos[k], g, s.slots.data(), env, st, nullptr);
  }

  // The shape of every node the plan runs, for these feeds (what a run's memory plan is made from).
  static status infer_shapes(const static_environment& env, std::array<shape, graph::size>& sh) {
    for (std::size_t k = 0; k < num_steps; ++k)
      if (auto st = infer_table[k](infos[k], env, std::span<shape>(sh)); !st.ok()) return st;
    return ok_status();
  }

  // Starts step k: true when it has finished, with its status in st; false when its kernel is
  // asynchronous and took `done` (called when it ends). What a parallel executor runs.
  static bool start(std::size_t k, const group& g, state& s, const static_environment& env, status& st,
                    const detail::step_completion& done) {
    return run_table[k](infos[k], g, s.slots.data(), env, st, &done);
  }

  // Drops what a finished run must not keep: transfers that share their source (or whose copy was
  // fetched), fed tensors and variable values (an input's own copy on a device is kept, for the
  // next run's copy; a variable's value never is, since an assign may have replaced it), and the
  // output nodes' shares of their ops' outputs.
  static void release_leaves(state& s) {
    for (std::size_t i : graph::transfer_positions)
      if (s.slots[i].use_count() != 1) s.slots[i] = tensor();
    for (std::size_t i : graph::leaf_positions)
      if (graph::kinds[i] != node_kind::input || s.slots[i].use_count() != 1 || s.slots[i].space().host_accessible())
        s.slots[i] = tensor();
    for (std::size_t i : graph::output_positions) s.slots[i] = tensor();
  }

 private:
  using layout = typename memory::layout_t;
  using shapes = std::array<shape, graph::size>;

  // Points the planned slots at their offsets in the arena, which grows to the plan's size; the
  // other plannable slots are emptied (they may point into an arena of another plan).
  static status bind_arena(const group& g, state& s, const layout& l, const shapes& sh) {
    s.bound = nullptr;
    for (std::size_t p = 0; p < graph::size; ++p)
      if (!s.slots[p].owns_buffer()) s.slots[p] = tensor();
    if (s.arena.bytes() < l.arena.arena_bytes) {
      s.arena = tensor();
      auto a = g.template get<0>().allocate(dtype::u8, shape{static_cast<std::int64_t>(l.arena.arena_bytes)});
      if (!a.ok()) return std::move(a).take_status().with_context("allocating the memory plan's arena");
      s.arena = std::move(*a);
    }
    auto* base = static_cast<std::byte*>(s.arena.data());
    for (std::size_t p = 0; p < graph::size; ++p) {
      if (!l.planned[p]) continue;
      auto t = tensor::borrow(base + l.offset(p), graph::specs[p].type, sh[p], s.arena.space());
      if (!t.ok()) return std::move(t).take_status();
      s.slots[p] = std::move(*t);
    }
    s.bound = &memory::tag;
    return ok_status();
  }

  static const shape& fed_shape(const static_environment& env, std::size_t input) {
    static constexpr shape none{};
    return env.feeds[input] ? env.feeds[input]->shape() : none;
  }
  static bool same_feeds(const state& s, const static_environment& env) {
    for (std::size_t i = 0; i < graph::num_input_nodes; ++i)
      if (s.fed[i] != fed_shape(env, i)) return false;
    return true;
  }

  // Binds the plan for the fed shapes: the one made before for them (run_time_plans), or one
  // made now from every node's inferred shape. An error is the one the failing step would report.
  static status plan_at_run_time(const group& g, state& s, const static_environment& env) {
    using plans = run_time_plans<memory>;
    typename plans::key_type fed;
    for (std::size_t i = 0; i < graph::num_input_nodes; ++i) fed[i] = fed_shape(env, i);
    std::shared_ptr<const typename plans::entry> plan = plans::find(fed);
    if (!plan) {
      auto made = std::make_shared<typename plans::entry>();
      made->fed = fed;
      if (auto st = infer_shapes(env, made->shapes); !st.ok()) return st;
      made->layout = memory::plan_for(made->shapes);
      plan = plans::add(std::move(made));
    }
    if (auto st = bind_arena(g, s, plan->layout, plan->shapes); !st.ok()) return st;
    for (std::size_t i = 0; i < graph::num_input_nodes; ++i) s.fed[i] = fed[i];
    return ok_status();
  }
};

} // namespace typeflow
