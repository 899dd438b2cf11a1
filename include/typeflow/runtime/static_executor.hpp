// SPDX-License-Identifier: Apache-2.0
// static_executor<Plan, Devices, Registry>: runs a static plan's steps in their compile-time order
// as straight-line code: one kernel call per step, chosen at compile time, with no virtual call,
// no std::function and no per-node heap allocation once a state's buffers are sized.
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

// What a run reads besides its state: the fed tensors by input number, and the variables.
struct static_environment {
  std::span<const tensor* const> feeds;
  variable_store* variables;
};

// PlanMemory = false gives every output a buffer of its own (no arena, no forwarding): the
// reference the memory plan is tested against.
template <class Plan, static_devices Devices, class Registry, bool PlanMemory = true>
class static_executor {
  using graph = typename Plan::graph_type;
  using nodes = typename graph::nodes;
  using group = device_group_t<Devices>;

 public:
  using state = static_state<graph::num_slots, graph::num_input_nodes>;
  using memory = static_memory_plan<Plan>;

  // The device of node P: its position in the group, and its policy type.
  template <std::size_t P>
  static constexpr std::size_t device_index = group::template runs<device_of_node<node_at_t<P, nodes>>>;
  template <std::size_t P>
  using device_t = typename group::template type<device_index<P>>;

  // The first node the plan runs on a device type the group lacks, or graph::size.
  static constexpr std::size_t first_unknown_device = []<std::size_t... Ks>(std::index_sequence<Ks...>) {
    std::size_t first = graph::size;
    ((first = first == graph::size &&
                      group::template index_of<device_of_node<node_at_t<Plan::steps[Ks], nodes>>> == group::size
                  ? Plan::steps[Ks]
                  : first),
     ...);
    return first;
  }(std::make_index_sequence<Plan::num_steps>{});

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

  static status run(Devices& devices, state& s, const static_environment& env) {
    check_devices();
    const group g = as_device_group(devices);
    if constexpr (PlanMemory && memory::is_static && memory::static_layout.num_planned != 0) {
      if (s.bound != &memory::tag)
        if (auto st = bind_arena(g, s, memory::static_layout, memory::static_shapes); !st.ok()) return st;
    } else if constexpr (PlanMemory && !memory::is_static) {
      if (s.bound != &memory::tag || !same_feeds(s, env))
        if (auto st = plan_at_run_time(g, s, env); !st.ok()) return st;
    }
    return [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
      status st;
      (void)((st = step<Plan::steps[Ks]>(g, s, env), st.ok()) && ...);
      return st;
    }(std::make_index_sequence<Plan::num_steps>{});
  }

  // The shape of every node the plan runs, for these feeds (what a run's memory plan is made from).
  static status infer_shapes(const static_environment& env, std::array<shape, graph::size>& sh) {
    return [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
      status r;
      (void)((r = infer_shape<Plan::steps[Ks]>(env, sh), r.ok()) && ...);
      return r;
    }(std::make_index_sequence<Plan::num_steps>{});
  }

  // Starts step K (node Plan::steps[K]): true when it has finished, with its status in st; false
  // when its kernel is asynchronous and took `done` (a detail::step_completion), which is called
  // when it ends. done == nullptr waits for an asynchronous kernel. What a parallel executor runs.
  template <std::size_t K, class Done>
  static bool start(const group& g, state& s, const static_environment& env, status& st, Done done) {
    constexpr std::size_t P = Plan::steps[K];
    if constexpr (node_at_t<P, nodes>::kind == node_kind::op) {
      return run_op<P, step_op<P>(), step_inputs<P>()>(g, s, st, done);
    } else if constexpr (node_at_t<P, nodes>::kind == node_kind::transfer) {
      return run_transfer<P>(g, s, st, done);
    } else {
      st = step<P>(g, s, env);
      return true;
    }
  }

  // Whether a parallel executor hands step K to the pool: its kernel's is_expensive; steps that
  // only move a tensor (inputs, variables, constants, assigns, transfers) are cheap.
  template <std::size_t K>
  static constexpr bool expensive() {
    constexpr std::size_t P = Plan::steps[K];
    if constexpr (node_at_t<P, nodes>::kind == node_kind::op) return is_expensive<step_kernel<P, step_op<P>(), step_inputs<P>()>>;
    else return false;
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

  template <std::size_t P>
  static status infer_shape(const static_environment& env, shapes& sh) {
    using node = node_at_t<P, nodes>;
    if constexpr (node::kind == node_kind::input) {
      sh[P] = env.feeds[graph::input_node_index[P]]->shape();
    } else if constexpr (node::kind == node_kind::assign || node::kind == node_kind::transfer) {
      sh[P] = sh[graph::input(P, 0)];
    } else if constexpr (graph::specs[P].dims.is_fully_defined() ||
                         (node::kind != node_kind::op && node::kind != node_kind::output)) {
      sh[P] = graph::specs[P].dims;
    } else if constexpr (node::kind == node_kind::output) {
      return shape_from<graph::input(P, 0)>(sh, node::port, sh[P]);
    } else {
      return shape_from<P>(sh, 0, sh[P]);
    }
    return ok_status();
  }

  // The shape of output `output` of op step P from its inputs' shapes in sh.
  template <std::size_t P>
  static status shape_from(const shapes& sh, std::size_t output, shape& out) {
    constexpr auto inputs = step_inputs<P>();
    std::array<tensor_spec, inputs.size()> specs;
    for (std::size_t i = 0; i < inputs.size(); ++i) specs[i] = tensor_spec{graph::specs[inputs[i]].type, sh[inputs[i]]};
    auto spec = infer(step_op<P>(), std::span<const tensor_spec>(specs), output);
    if (!spec.ok()) return with_node<P>(spec.status());
    out = spec->dims;
    return ok_status();
  }

  // The op a step runs and the nodes it reads: a fused group's op and leaves, or the node's own.
  template <std::size_t P>
  static constexpr auto step_op() {
    if constexpr (Plan::is_fused_root(P)) return fused_op_of<Plan, P>{};
    else return node_at_t<P, nodes>::op;
  }
  template <std::size_t P>
  static constexpr auto step_inputs() {
    if constexpr (Plan::is_fused_root(P)) {
      return Plan::template leaf_positions<P>;
    } else {
      std::array<std::size_t, graph::num_inputs[P]> a{};
      for (std::size_t k = 0; k < a.size(); ++k) a[k] = graph::input(P, k);
      return a;
    }
  }

  template <std::size_t P>
  static status step(const group& g, state& s, const static_environment& env) {
    using node = node_at_t<P, nodes>;
    if constexpr (node::kind == node_kind::input) {
      return to_device<P>(g, *env.feeds[graph::input_node_index[P]], s.slots[P]);
    } else if constexpr (node::kind == node_kind::variable) {
      return env.variables->read(graph::variable_index[P], node::name, s.slots[P]);
    } else if constexpr (node::kind == node_kind::constant) {
      tensor& y = s.slots[P];
      if (!y.owns_buffer()) {
        using T = element_t<node::spec.type>;
        auto t = tensor::scalar<T>(static_cast<T>(node::value));
        if (!t.ok()) return std::move(t).take_status();
        return to_device<P>(g, *t, y);
      }
      return ok_status();
    } else if constexpr (node::kind == node_kind::assign) {
      constexpr std::size_t variable = graph::position_of_id(node::variable);
      s.slots[P] = s.slots[graph::input(P, 0)];
      env.variables->write(graph::variable_index[variable], s.slots[P]);
      return ok_status();
    } else if constexpr (node::kind == node_kind::output) {
      s.slots[P] = s.slots[graph::output_slot(graph::input(P, 0), node::port)];
      return ok_status();
    } else if constexpr (node::kind == node_kind::transfer) {
      status st;
      run_transfer<P>(g, s, st);
      return st;
    } else {
      status st;
      run_op<P, step_op<P>(), step_inputs<P>()>(g, s, st);
      return st;
    }
  }

  // A host tensor (a feed, a constant) as node P's value on its device: the same tensor when the
  // device reads host memory (or it is on that device already), else a copy into P's buffer there.
  template <std::size_t P>
  static status to_device(const group& g, const tensor& x, tensor& y) {
    auto& device = g.template get<device_index<P>>();
    if (reads_in_place(x, device)) {
      y = x;
      return ok_status();
    }
    if (!x.space().host_accessible()) return with_node<P>(unreadable(x, device));
    if (auto st = prepare_output(device, y, x.spec()); !st.ok()) return with_node<P>(st);
    status st = wait_for_done([&](kernel_done done) { copy_into_async(x, device, y, device, std::move(done)); });
    if (st.ok()) return st;
    y = tensor();  // not a constant's value, nor a feed's
    return with_node<P>(st);
  }

  // Transfer step P: its input's value on P's device; the same tensor when both devices read host
  // memory, else a copy through the policies into P's own buffer. Returns as run_op does.
  template <std::size_t P, class Done = std::nullptr_t>
  static bool run_transfer(const group& g, state& s, status& st, Done done = nullptr) {
    constexpr std::size_t q = graph::input(P, 0);
    st = ok_status();
    const tensor& x = s.slots[q];
    tensor& y = s.slots[P];
    if constexpr (device_index<q> == device_index<P>) {
      y = x;
      return true;
    } else {
      auto& source = g.template get<device_index<q>>();
      auto& target = g.template get<device_index<P>>();
      if (reads_in_place(x, target)) {
        y = x;
        return true;
      }
      if (st = prepare_output(target, y, x.spec()); !st.ok()) return st = with_node<P>(st), true;
      if constexpr (std::is_same_v<Done, std::nullptr_t>) {
        st = wait_for_done([&](kernel_done d) { copy_into_async(x, source, y, target, std::move(d)); });
        if (!st.ok()) st = with_node<P>(st);
        return true;
      } else {
        copy_into_async(x, source, y, target, [done](status r) { done(r.ok() ? std::move(r) : with_node<P>(r)); });
        return false;
      }
    }
  }

  // The dtype of the kernel that runs Op for node P on these inputs, and that kernel.
  template <std::size_t P, auto Op, auto Inputs>
  static constexpr dtype step_dtype() {
    std::array<tensor_spec, Inputs.size()> in{};
    for (std::size_t i = 0; i < Inputs.size(); ++i) in[i] = graph::specs[Inputs[i]];
    return kernel_dtype<std::remove_cvref_t<decltype(Op)>>(std::span<const tensor_spec>(in), graph::specs[P]);
  }
  template <std::size_t P, auto Op, auto Inputs>
  using step_kernel = typename Registry::template kernel<std::remove_cvref_t<decltype(Op)>, device_t<P>,
                                                         element_t<step_dtype<P, Op, Inputs>()>>;

  // Whether every input of a step has a fully defined static shape: then its output's static
  // spec is what inference gives for any run (fed tensors match their inputs' static shapes).
  template <auto Inputs>
  static constexpr bool inputs_known() {
    for (std::size_t i : Inputs)
      if (!graph::specs[i].dims.is_fully_defined()) return false;
    return true;
  }

  template <std::size_t N>
  static constexpr bool all_defined(const std::array<tensor_spec, N>& specs) {
    for (const tensor_spec& spec : specs)
      if (!spec.dims.is_fully_defined()) return false;
    return true;
  }

  template <std::size_t K>
  static std::array<tensor_spec, K> specs_of(const std::array<tensor, K>& in) {
    std::array<tensor_spec, K> specs;
    for (std::size_t i = 0; i < K; ++i) specs[i] = in[i].spec();
    return specs;
  }

  // The static spec of each output of op step P (one, or an op's several): what inference gives
  // for any run when every input's shape is static.
  template <std::size_t P, auto Op, auto Inputs>
  static constexpr auto static_output_specs = [] {
    constexpr std::size_t n = graph::multi_output[P] ? graph::num_outputs[P] : 1;
    std::array<tensor_spec, Inputs.size()> in{};
    for (std::size_t i = 0; i < Inputs.size(); ++i) in[i] = graph::specs[Inputs[i]];
    std::array<tensor_spec, n> out{};
    if constexpr (graph::multi_output[P])
      for (std::size_t o = 0; o < n; ++o) out[o] = *infer(Op, std::span<const tensor_spec>(in), o);
    else out[0] = graph::specs[P];
    return out;
  }();

  // Op step P through the launch path (runtime/launch.hpp). Its outputs are the slots
  // output_slot(P, 0..n): an intermediate of the memory plan already points into the arena (a
  // run-time shape was inferred when the plan was made); any other keeps its own buffer from run
  // to run (prepare_output). A spec is inferred from this run's inputs unless it is static and so
  // are the inputs' shapes, so a static output of an input with a run-time dimension (reshape to
  // [6], top_k) is checked every run.
  template <std::size_t P, auto Op, auto Inputs, class Done = std::nullptr_t>
  static bool run_op(const group& g, state& s, status& st, Done done = nullptr) {
    using Device = device_t<P>;
    Device& device = g.template get<device_index<P>>();
    constexpr std::size_t k = Inputs.size();
    constexpr const auto& specs = static_output_specs<P, Op, Inputs>;
    using kernel = step_kernel<P, Op, Inputs>;

    std::array<tensor, k> in;
    for (std::size_t i = 0; i < k; ++i) in[i] = s.slots[Inputs[i]].view();
    const std::span<tensor> ys(&s.slots[graph::output_slot(P, 0)], specs.size());
    const bool in_arena = PlanMemory && memory::plannable[P] && !ys[0].owns_buffer() && ys[0].data() != nullptr;
    void* const planned_at = ys[0].data();
    // In the arena, the plan was made for this run's shapes; only a static output of an input with
    // a run-time dimension still needs its inference, as a check.
    constexpr bool check_in_arena = !inputs_known<Inputs>() && specs[0].dims.is_fully_defined();
    if (!in_arena || check_in_arena) {
      std::array<tensor_spec, k> in_specs{};
      if constexpr (!inputs_known<Inputs>() || !all_defined(specs)) in_specs = specs_of(in);
      const bool prepared = prepare_outputs(
          specs.size(), st,
          [&](std::size_t o, tensor_spec& scratch, status& error) -> const tensor_spec* {
            if (inputs_known<Inputs>() && specs[o].dims.is_fully_defined()) return &specs[o];
            return inferred_spec(infer(Op, std::span<const tensor_spec>(in_specs), o), scratch, error);
          },
          [&](std::size_t o, const tensor_spec& spec, status& error) {
            if (in_arena) return true;
            error = prepare_output(device, ys[o], spec);
            return error.ok();
          });
      if (!prepared) return st = with_node<P>(st), true;
    }
    // The plan gave this output its place in the arena; a kernel that put a view of another
    // buffer there instead would outlive that buffer's planned lifetime.
    // in_arena is init-captured: without PlanMemory it is a constant expression, and Clang 19
    // warns that a plain capture of it is not needed (-Wunused-lambda-capture).
    auto finish = [&s, in_arena = in_arena, planned_at](status& result) {
      if (!result.ok()) result = with_node<P>(result);
      else if (in_arena && s.slots[graph::output_slot(P, 0)].data() != planned_at)
        result = with_node<P>(errors::internal("the kernel replaced an output that the memory plan placed in the arena"));
    };
    return launch(device, compiled_kernel<kernel>{Op}, in, ys, st, finish, done);
  }

  // Reuses the node's buffer when nothing else holds it and it fits; allocates otherwise.
  template <class Device>
  static status prepare_output(Device& device, tensor& y, const tensor_spec& spec) {
    if (y.owns_buffer() && y.use_count() == 1 && y.dtype() == spec.type && y.shape() == spec.dims)
      return ok_status();
    auto t = device.allocate(spec.type, spec.dims);
    if (!t.ok()) return std::move(t).take_status();
    y = std::move(*t);
    return ok_status();
  }

  // "node 4 (add): ..."
  template <std::size_t P>
  static status with_node(const status& st) {
    return st.with_context(detail::cat("node ", P, " (", graph::names[P], ")").view());
  }
};

} // namespace typeflow
