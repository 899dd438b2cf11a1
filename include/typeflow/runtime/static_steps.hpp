// SPDX-License-Identifier: Apache-2.0
// The steps of a static plan as data, and the functions that run them.
//
// A static executor describes each step with a static_step_info (its node, the slots it reads, its
// static spec, its input or variable number) in a constexpr array, and runs it through a function
// chosen at compile time: static_steps<Group>::op_step<Op, Kernel, Device, K, N> for an op (one per
// op value, kernel, device and arity, however many nodes run it: the twelve layers of a transformer
// share one matmul step; and whatever the graph's size or the executor, so that every graph of a
// program on the same devices shares it, sequential, parallel or without a memory plan), and one
// function per kind and device for inputs, variables, constants, assigns, output nodes and
// transfers. None of these functions is named after the graph: a compiler names every function it
// instantiates, and a name that spelled a graph of k nodes made every one of k per-node functions
// cost O(k) (docs/design.md, "Compile time").
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/device/copy.hpp>
#include <typeflow/device/host_copies.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/packed_operand.hpp>
#include <typeflow/ops/static_infer.hpp>
#include <typeflow/runtime/detail/parallel_step.hpp>
#include <typeflow/runtime/launch.hpp>
#include <typeflow/runtime/variable_store.hpp>

namespace typeflow {

// The position in Group of the device that runs each node of List (`value`), and of its device type
// (`in_group`: Group::size when the group lacks it). Arrays, not a constant per node (a constant per
// node would be named after the graph); functions that take a position in them rather than a node
// are one per device.
template <class Group, class List>
struct node_device_indices;
template <class Group, class... Nodes>
struct node_device_indices<Group, node_list<Nodes...>> {
  static constexpr std::array<std::size_t, sizeof...(Nodes)> in_group{Group::template index_of<device_of_node<Nodes>>...};
  static constexpr std::array<std::size_t, sizeof...(Nodes)> value{Group::template runs<device_of_node<Nodes>>...};
};
template <class Group, auto Build>
struct node_device_indices<Group, built_nodes<Build>> {  // every node on the session's first device
  static constexpr std::size_t size = built_nodes<Build>::size;
  static constexpr std::array<std::size_t, size> in_group = [] {
    std::array<std::size_t, size> a{};
    a.fill(Group::template index_of<default_device>);
    return a;
  }();
  static constexpr std::array<std::size_t, size> value = [] {
    std::array<std::size_t, size> a{};
    a.fill(Group::template runs<default_device>);
    return a;
  }();
};

// What a run reads besides its state: the fed tensors by input number, and the variables.
struct static_environment {
  std::span<const tensor* const> feeds;
  variable_store* variables;
};

// An input that is not a variable (static_step_info::input_variables).
inline constexpr std::size_t no_variable = static_cast<std::size_t>(-1);

// One step of a static plan, as its run function reads it.
struct static_step_info {
  std::size_t node = 0;                       // the node's position: its slot
  std::string_view name;                      // the node's name (errors say "node 4 (add): ...")
  tensor_spec spec;                           // the node's static spec (an op's first output's)
  std::span<const std::size_t> inputs;        // slots read: an op's inputs or a fused group's leaves;
                                              // an output node's: its op's inputs
  std::span<const tensor_spec> input_specs;   // their static specs
  std::span<const std::size_t> input_variables;  // an op's: each input's variable number, or no_variable
  std::size_t output_slot = 0;                // an op's first output's slot; an output node's source slot
  std::size_t index = 0;                      // an input's input number; a variable's or assign's variable number
  std::size_t port = 0;                       // an output node's output of its op
  std::size_t error_node = 0;                 // the node a failed shape inference names (an output node's op)
  std::string_view error_name;
  double value = 0;                           // a constant's value
  bool inputs_known = false;                  // every input's static shape is fully defined
  bool plannable = false;                     // the memory plan may place its output in the arena
                                              // (never without a memory plan: op_step::run relies on it)
  // An op or fused step of an executor that runs such steps on bare data (static_executor's
  // BareData: with a memory plan, and the parallel executor's) whose one output has a fully defined
  // static shape of at most small_elementwise_elements elements, as many as each of its inputs'
  // static shapes: that number (its kernel may then run on bare data: elementwise_data_kernel, in
  // the arena or in the output's own buffer); 0 otherwise.
  std::int64_t elementwise_elements = 0;
};

// Kinds of step, as the executors choose their functions.
enum class static_step_kind : std::uint8_t { op, fused, input, variable, constant, assign, output, transfer };

namespace detail {
inline status with_step_node(std::size_t node, std::string_view name, const status& st) {
  return st.with_context(cat("node ", node, " (", name, ")").view());
}

// A tensor fed to the input named `input`, of spec `want`: its dtype, storage and a shape that
// want's matches. What session::run checks of each feed before it runs, and the input step again
// (static_executor::run may be called without a session): the kernels read the static shapes.
inline status check_fed(std::string_view input, const tensor_spec& want, const tensor& t) {
  if (t.dtype() != want.type)
    return errors::invalid_argument("input '", input, "': fed a tensor of dtype ", t.dtype(), ", the input is ", want.type);
  if (!t.valid()) return errors::invalid_argument("input '", input, "': fed a tensor with no storage");
  if (!matches(want.dims, t.shape()))
    return errors::invalid_argument("input '", input, "': fed shape ", t.shape(), " does not match the input's shape ",
                                    want.dims);
  return ok_status();
}
}  // namespace detail

// The step functions of a plan run on a device_group type Group. They read and write a state's
// slots through a pointer to the first (static_state<Size, Inputs>::slots), not through the state,
// whose type is a graph's size: a function of the state's type was instantiated again for every
// size of graph in a program (test_fusion, graphs of 14 sizes on two devices: 1,244 instantiations
// of op_step::run, against 434 now).
// run: bool(info, group, slots, environment, status&, done): true when the step has finished (its
// status in st); false when its kernel is asynchronous and took `done`, which it calls when it
// ends. done == nullptr waits for an asynchronous kernel.
// infer: status(info, environment, shapes): the node's shape for this run's feeds, from its inputs'.
// Whether a step's output may be in the arena (static_step_info::plannable) and whether it runs on
// bare data (elementwise_elements) are the executor's, in the records: not parameters here, so the
// executors with and without a memory plan share these functions.
template <class Group>
struct static_steps {
  using run_fn = bool (*)(const static_step_info&, const Group&, tensor* slots, const static_environment&, status&,
                          const detail::step_completion*);
  using infer_fn = status (*)(const static_step_info&, const static_environment&, std::span<shape>);

  static status with_node(const static_step_info& i, const status& st) { return detail::with_step_node(i.node, i.name, st); }

  // Reuses the node's buffer when nothing else holds it and it fits; allocates otherwise.
  template <class Device>
  static status prepare_output(Device& device, tensor& y, const tensor_spec& spec) {
    if (y.owns_buffer() && y.use_count() == 1 && y.dtype() == spec.type && y.shape() == spec.dims) return ok_status();
    auto t = device.allocate(spec.type, spec.dims);
    if (!t.ok()) return std::move(t).take_status();
    y = std::move(*t);
    return ok_status();
  }

  // A host tensor (a feed, a constant) as node i's value on device D: the same tensor when the
  // device reads host memory (or it is on that device already), else a copy into i's buffer there.
  template <std::size_t D>
  static status to_device(const static_step_info& i, const Group& g, const tensor& x, tensor& y) {
    auto& device = g.template get<D>();
    if (reads_in_place(x, device)) {
      y = x;
      return ok_status();
    }
    if (!x.space().host_accessible()) return with_node(i, unreadable(x, device));
    if (auto st = prepare_output(device, y, x.spec()); !st.ok()) return with_node(i, st);
    status st = copy_into(x, device, y, device);
    if (st.ok()) return st;
    y = tensor();  // not a constant's value, nor a feed's
    return with_node(i, st);
  }

  template <std::size_t D>
  struct input_step {
    static constexpr bool expensive = false;
    static bool run(const static_step_info& i, const Group& g, tensor* slots, const static_environment& env, status& st,
                    const detail::step_completion*) {
      const tensor& fed = *env.feeds[i.index];
      st = detail::check_fed(i.name, i.spec, fed);
      if (st.ok()) st = to_device<D>(i, g, fed, slots[i.node]);
      return true;
    }
    static status infer(const static_step_info& i, const static_environment& env, std::span<shape> sh) {
      sh[i.node] = env.feeds[i.index]->shape();
      return ok_status();
    }
  };

  // Steps whose shape is the static one (variables, constants) or their input's (assigns, transfers).
  static status infer_static(const static_step_info& i, const static_environment&, std::span<shape> sh) {
    sh[i.node] = i.spec.dims;
    return ok_status();
  }
  static status infer_same(const static_step_info& i, const static_environment&, std::span<shape> sh) {
    sh[i.node] = sh[i.inputs[0]];
    return ok_status();
  }

  struct variable_step {
    static constexpr bool expensive = false;
    static constexpr infer_fn infer = &infer_static;
    static bool run(const static_step_info& i, const Group&, tensor* slots, const static_environment& env, status& st,
                    const detail::step_completion*) {
      st = env.variables->read(i.index, i.name, slots[i.node]);
      return true;
    }
  };

  template <std::size_t D, class T>
  struct constant_step {
    static constexpr bool expensive = false;
    static constexpr infer_fn infer = &infer_static;
    static bool run(const static_step_info& i, const Group& g, tensor* slots, const static_environment&, status& st,
                    const detail::step_completion*) {
      tensor& y = slots[i.node];
      st = ok_status();
      if (y.owns_buffer()) return true;
      auto t = tensor::scalar<T>(static_cast<T>(i.value));
      if (!t.ok()) st = std::move(t).take_status();
      else st = to_device<D>(i, g, *t, y);
      return true;
    }
  };

  struct assign_step {
    static constexpr bool expensive = false;
    static constexpr infer_fn infer = &infer_same;
    static bool run(const static_step_info& i, const Group&, tensor* slots, const static_environment& env, status& st,
                    const detail::step_completion*) {
      slots[i.node] = slots[i.inputs[0]];
      env.variables->write(i.index, slots[i.node]);
      st = ok_status();
      return true;
    }
  };

  // An output node of an op with several: a share of the tensor its op wrote. Its shape is its
  // op's output `port`, inferred from the op's inputs.
  template <auto Op, std::size_t K>
  struct output_step {
    static constexpr bool expensive = false;
    static bool run(const static_step_info& i, const Group&, tensor* slots, const static_environment&, status& st,
                    const detail::step_completion*) {
      slots[i.node] = slots[i.output_slot];
      st = ok_status();
      return true;
    }
    static status infer(const static_step_info& i, const static_environment&, std::span<shape> sh) {
      return infer_op_shape<Op, K>(i, sh);
    }
  };

  // A transfer from device From to device To: its input's value on To; the same tensor when both
  // read host memory, else a copy through the policies into its own buffer.
  template <std::size_t From, std::size_t To>
  struct transfer_step {
    static constexpr bool expensive = false;
    static constexpr infer_fn infer = &infer_same;
    static bool run(const static_step_info& i, const Group& g, tensor* slots, const static_environment&, status& st,
                    const detail::step_completion* done) {
      st = ok_status();
      const tensor& x = slots[i.inputs[0]];
      tensor& y = slots[i.node];
      if constexpr (From == To) {
        y = x;
        return true;
      } else {
        auto& source = g.template get<From>();
        auto& target = g.template get<To>();
        if (reads_in_place(x, target)) {
          y = x;
          return true;
        }
        if (st = prepare_output(target, y, x.spec()); !st.ok()) return st = with_node(i, st), true;
        if (done == nullptr) {
          st = copy_into(x, source, y, target);
          if (!st.ok()) st = with_node(i, st);
          return true;
        }
        copy_into_async(x, source, y, target, [done = *done, node = i.node, name = i.name](status r) {
          done(r.ok() ? std::move(r) : detail::with_step_node(node, name, r));
        });
        return false;
      }
    }
  };

  // Output `port` of Op from the K inputs' shapes in sh, into sh[i.node]; a static shape as it is.
  template <auto Op, std::size_t K>
  static status infer_op_shape(const static_step_info& i, std::span<shape> sh) {
    if (i.spec.dims.is_fully_defined()) {
      sh[i.node] = i.spec.dims;
      return ok_status();
    }
    std::array<tensor_spec, K> specs;
    for (std::size_t k = 0; k < K; ++k) specs[k] = tensor_spec{i.input_specs[k].type, sh[i.inputs[k]]};
    auto spec = typeflow::infer(Op, std::span<const tensor_spec>(specs), i.port);
    if (!spec.ok()) return detail::with_step_node(i.error_node, i.error_name, spec.status());
    sh[i.node] = spec->dims;
    return ok_status();
  }

  // An op (or a fused group) with K inputs and N outputs run by Kernel on device D, through the
  // launch path (runtime/launch.hpp), or, for a small elementwise node (elementwise_elements), by
  // the kernel's compute_elements on bare data (run_elements, which the executors call in place of
  // run for such a step). Its outputs are the slots output_slot..
  // output_slot + N: an intermediate of the memory plan already points into the arena (a run-time
  // shape was inferred when the plan was made); any other keeps its own buffer from run to run
  // (prepare_output). A spec is inferred from this run's inputs unless it is static and so are the
  // inputs' shapes, so a static output of an input with a run-time dimension (reshape to [6],
  // top_k) is checked every run.
  template <auto Op, class Kernel, std::size_t D, std::size_t K, std::size_t N>
  struct op_step {
    static constexpr bool expensive = is_expensive<Kernel>;
    // Whether a small elementwise node (elementwise_elements) may run on bare data: a host policy
    // (host_copies: its kernels read the slots' memory where it is) and a kernel with compute_elements.
    static constexpr bool runs_on_elements = N == 1 && elementwise_data_kernel<Kernel, K> &&
                                             std::is_base_of_v<host_copies, typename Kernel::device_type>;

    static bool run(const static_step_info& i, const Group& g, tensor* slots, const static_environment& env, status& st,
                    const detail::step_completion* done) {
      const std::span<tensor> ys(&slots[i.output_slot], N);
      const bool in_arena = i.plannable && !ys[0].owns_buffer() && ys[0].data() != nullptr;
      void* const planned_at = ys[0].data();
      auto& device = g.template get<D>();
      std::array<tensor, K> in = [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
        return std::array<tensor, K>{slots[i.inputs[Ks]].view()...};
      }(std::make_index_sequence<K>{});
      const bool known = i.inputs_known && i.spec.dims.is_fully_defined();
      // In the arena, the plan was made for this run's shapes; only a static output of an input
      // with a run-time dimension still needs its inference, as a check.
      const bool check_in_arena = !i.inputs_known && i.spec.dims.is_fully_defined();
      if (!in_arena || check_in_arena) {
        std::array<tensor_spec, K> in_specs{};
        if (!known || N > 1)
          for (std::size_t k = 0; k < K; ++k) in_specs[k] = in[k].spec();
        const bool prepared = prepare_outputs(
            N, st,
            [&](std::size_t o, tensor_spec& scratch, status& error) -> const tensor_spec* {
              if (o == 0 && known) return &i.spec;
              return inferred_spec(typeflow::infer(Op, std::span<const tensor_spec>(in_specs), o), scratch, error);
            },
            [&](std::size_t o, const tensor_spec& spec, status& error) {
              if (in_arena) return true;
              error = prepare_output(device, ys[o], spec);
              return error.ok();
            });
        if (!prepared) return st = with_node(i, st), true;
      }
      // The plan gave this output its place in the arena; a kernel that put a view of another
      // buffer there instead would outlive that buffer's planned lifetime.
      auto finish = [&i, ys, in_arena, planned_at](status& result) {
        if (!result.ok()) result = with_node(i, result);
        else if (in_arena && ys[0].data() != planned_at)
          result = with_node(i, errors::internal("the kernel replaced an output that the memory plan placed in the arena"));
      };
      if constexpr (packs_operand<Kernel>) {
        if (const std::shared_ptr<const void> form = packed_form(i, env, slots, in))  // held until it has run
          return launch(device, packed_kernel<Kernel>{Op, form.get()}, in, ys, st, finish);
      }
      if (done != nullptr) return launch(device, compiled_kernel<Kernel>{Op}, in, ys, st, finish, *done);
      return launch(device, compiled_kernel<Kernel>{Op}, in, ys, st, finish);
    }

    // A small elementwise node (elementwise_elements != 0): the kernel on its inputs' and output's
    // data, whose shapes are the static ones (the input steps check the feeds); an output outside
    // the arena (fetched, read by an assign or a transfer, or on a device the node was placed on)
    // in its own buffer, kept from run to run while nothing else holds it. A function of its own,
    // which the executors call directly for such a step (static_executor::run_table), so that a
    // one-element add does not pay for the general path's frame: its locals and saved registers
    // cost more than the add (a third of a fused group's time on one element).
    static bool run_elements(const static_step_info& i, const Group& g, tensor* slots, const static_environment&, status& st,
                             const detail::step_completion*)
      requires runs_on_elements
    {
      tensor& y = slots[i.output_slot];
      if (!i.plannable || y.owns_buffer() || y.data() == nullptr)  // not in the arena
        if (status prepared = prepare_output(g.template get<D>(), y, i.spec); !prepared.ok()) [[unlikely]]
          return st = with_node(i, prepared), true;
      std::array<const void*, K> data;
      for (std::size_t k = 0; k < K; ++k) data[k] = slots[i.inputs[k]].data();
      if (status result = Kernel::compute_elements(Op, data, y.data(), i.elementwise_elements); !result.ok()) [[unlikely]]
        st = with_node(i, result);
      else if (!st.ok())
        st = ok_status();
      return true;
    }

    static status infer(const static_step_info& i, const static_environment&, std::span<shape> sh) {
      return infer_op_shape<Op, K>(i, sh);
    }

   private:
    // The form the kernel keeps of its packed input when that is a variable: the one kept with the
    // value this run read, or one packed now, the second time this step sees the value (and kept);
    // null when the input is not a variable, the kernel does not pack these inputs, or there is no
    // memory for the form. The run holds the form: a write of the variable meanwhile drops the store's.
    static std::shared_ptr<const void> packed_form(const static_step_info& i, const static_environment& env, tensor* slots,
                                                   const std::array<tensor, K>& in)
      requires packs_operand<Kernel>
    {
      constexpr std::size_t j = Kernel::packed_input;
      static_assert(j < K, "packs_operand: packed_input is not one of the op's inputs");
      const std::size_t v = i.input_variables[j];
      const std::span<const tensor> inputs(in);
      if (v == no_variable || env.variables == nullptr || !Kernel::packable(Op, inputs)) return nullptr;
      const tensor& value = slots[i.inputs[j]];
      try {
        bool seen = false;
        std::uint64_t generation = 0;
        if (auto kept = env.variables->derived(v, i.node, value, seen, generation); kept || !seen) return kept;
        std::shared_ptr<const void> form = Kernel::pack(Op, inputs);
        if (form != nullptr) env.variables->keep_derived(v, i.node, value, generation, form);
        return form;
      } catch (const std::bad_alloc&) {  // the store's bookkeeping; the kernel runs as it is
        return nullptr;
      }
    }
  };
};

}  // namespace typeflow
