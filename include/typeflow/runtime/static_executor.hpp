// SPDX-License-Identifier: Apache-2.0
// static_executor<Plan, Device, Registry>: runs a static plan's steps in their compile-time order
// as straight-line code: one kernel call per step, chosen at compile time, with no virtual call,
// no std::function and no per-node heap allocation once a state's buffers are sized (an output
// buffer is reused while its dtype and shape are unchanged and no fetched tensor still shares it).
// A state holds one tensor per graph node; a session keeps a pool of states, so runs on several
// threads never share one.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/graph/plan.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/runtime/variable_store.hpp>

namespace typeflow {

// One tensor per node of a graph of Size nodes.
template <std::size_t Size>
struct static_state {
  std::array<tensor, Size> slots;
};

// What a run reads besides its state: the fed tensors by input number, and the variables.
struct static_environment {
  std::span<const tensor* const> feeds;
  variable_store* variables;
};

template <class Plan, class Device, class Registry>
class static_executor {
  using graph = typename Plan::graph_type;
  using nodes = typename graph::nodes;

 public:
  using state = static_state<graph::size>;

  static status run(Device& device, state& s, const static_environment& env) {
    return [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
      status st;
      (void)((st = step<Plan::steps[Ks]>(device, s, env), st.ok()) && ...);
      return st;
    }(std::make_index_sequence<Plan::num_steps>{});
  }

  // Drops what a finished run must not keep: fed tensors and variable values.
  static void release_leaves(state& s) {
    for (std::size_t i : graph::leaf_positions) s.slots[i] = tensor();
  }

 private:
  template <std::size_t P>
  static status step(Device& device, state& s, const static_environment& env) {
    using node = node_at_t<P, nodes>;
    if constexpr (node::kind == node_kind::input) {
      s.slots[P] = *env.feeds[graph::input_node_index[P]];
      return ok_status();
    } else if constexpr (node::kind == node_kind::variable) {
      return env.variables->read(graph::variable_index[P], node::name, s.slots[P]);
    } else if constexpr (node::kind == node_kind::constant) {
      tensor& y = s.slots[P];
      if (!y.owns_buffer()) {
        using T = element_t<node::spec.type>;
        auto t = tensor::scalar<T>(static_cast<T>(node::value));
        if (!t.ok()) return std::move(t).take_status();
        y = std::move(*t);
      }
      return ok_status();
    } else if constexpr (node::kind == node_kind::assign) {
      constexpr std::size_t variable = position_of<nodes, node::variable>;
      s.slots[P] = s.slots[graph::input(P, 0)];
      env.variables->write(graph::variable_index[variable], s.slots[P]);
      return ok_status();
    } else if constexpr (Plan::is_fused_root(P)) {
      return run_op<P, fused_op_of<Plan, P>{}, Plan::template leaf_positions<P>>(device, s);
    } else {
      constexpr auto inputs = [] {
        std::array<std::size_t, node::num_inputs> a{};
        for (std::size_t k = 0; k < node::num_inputs; ++k) a[k] = graph::input(P, k);
        return a;
      }();
      return run_op<P, node::op, inputs>(device, s);
    }
  }

  template <std::size_t P, auto Op, auto Inputs>
  static status run_op(Device& device, state& s) {
    using op_type = std::remove_cvref_t<decltype(Op)>;
    constexpr std::size_t k = Inputs.size();
    constexpr tensor_spec spec = graph::specs[P];
    constexpr std::array<tensor_spec, k> input_specs = [] {
      std::array<tensor_spec, k> a{};
      for (std::size_t i = 0; i < k; ++i) a[i] = graph::specs[Inputs[i]];
      return a;
    }();
    constexpr dtype kernel_type = kernel_dtype<op_type>(std::span<const tensor_spec>(input_specs), spec);
    using kernel = typename Registry::template kernel<op_type, Device, element_t<kernel_type>>;

    std::array<tensor, k> in;
    for (std::size_t i = 0; i < k; ++i) in[i] = s.slots[Inputs[i]].view();

    tensor& y = s.slots[P];
    if constexpr (spec.dims.is_fully_defined()) {
      if (auto st = prepare_output(device, y, spec); !st.ok()) return with_node<P>(st);
    } else {
      std::array<tensor_spec, k> specs;
      for (std::size_t i = 0; i < k; ++i) specs[i] = in[i].spec();
      auto out = infer(Op, std::span<const tensor_spec>(specs));
      if (!out.ok()) return with_node<P>(out.status());
      if (auto st = prepare_output(device, y, *out); !st.ok()) return with_node<P>(st);
    }
    kernel_context<Device> ctx{device, std::span<const tensor>(in), std::span<tensor>(&y, 1)};
    if (auto st = kernel::compute(Op, ctx); !st.ok()) return with_node<P>(st);
    return ok_status();
  }

  // Reuses the node's buffer when nothing else holds it and it fits; allocates otherwise.
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
