// SPDX-License-Identifier: Apache-2.0
// launch: the one way an op's kernel runs on tensors, for eager calls (call.hpp), the static executor
// and the runtime executor alike (the static executor runs a small elementwise node on bare data
// instead: elementwise_data_kernel, kernels/kernel.hpp). Each front end decides where an
// output's buffer comes from (a fresh allocation, the memory plan's arena, its own buffer from the
// last run, an input it forwards) and whether its spec is known or inferred; prepare_outputs walks
// the outputs with those two answers.
// launch then builds the kernel context and runs the kernel: a synchronous one in place, an
// asynchronous one with its inputs and context in a frame that lives until it calls back (or
// waited for, where the caller cannot continue without it), and hands the kernel's status to the
// caller's `finish`, which names the node in an error and records what the front end records
// (the runtime executor's step stats and reader counts).
// A kernel is what compiled_kernel<K>{op} is (a kernel chosen at compile time: eager calls, static
// graphs) or the runtime executor's table_kernel (a dispatch-table entry): device_type,
// may_be_async, async(), compute(ctx), compute_async(ctx, done).
#pragma once

#include <typeflow/fwd.hpp>

#include <concepts>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/kernels/kernel.hpp>

namespace typeflow {

// A kernel type K and the op value it runs. A kernel with both compute and compute_async runs its
// compute here (the dispatch tables prefer compute_async; no kernel of the tree has both).
template <class K>
struct compiled_kernel {
  using device_type = typename K::device_type;
  static constexpr bool may_be_async = async_kernel<K> && !sync_kernel<K>;
  const typename K::op_type& op;

  static constexpr bool async() noexcept { return may_be_async; }
  status compute(kernel_context<device_type>& ctx) const {
    require_kernel<K>();
    if constexpr (sync_kernel<K>) return K::compute(op, ctx);
    else return errors::internal(K::op_type::name, ": an asynchronous kernel was run synchronously");
  }
  void compute_async(kernel_context<device_type>& ctx, kernel_done done) const {  // only when may_be_async
    K::compute_async(op, ctx, std::move(done));
  }
};

// A kernel that keeps one input packed (kernels/packed_operand.hpp), run on its kept form.
template <class K>
struct packed_kernel {
  using device_type = typename K::device_type;
  static constexpr bool may_be_async = false;
  const typename K::op_type& op;
  const void* form;

  static constexpr bool async() noexcept { return false; }
  status compute(kernel_context<device_type>& ctx) const {
    require_kernel<K>();
    return K::compute_packed(op, ctx, form);
  }
};

// A device policy that has something to do after each kernel it ran synchronously (the GPU's op
// pacing: device/cuda.hpp, set_op_idle_time); its status is the kernel's when the kernel succeeded.
template <class Device>
concept paces_kernels = requires(Device& d) {
  { d.after_kernel() } -> std::same_as<status>;
};

// Gives each of n outputs its spec and then its buffer: spec_of(k, scratch, st) -> const
// tensor_spec* (the static one, or the op's inference written to scratch; null when inference
// fails, with its message in st) and provide(k, spec, st) -> bool (false with the reason in st).
// False at the first failure. On every node's path, so the ok path makes no status, result or copy.
template <class SpecOf, class Provide>
[[gnu::always_inline]] inline bool prepare_outputs(std::size_t n, status& st, SpecOf&& spec_of, Provide&& provide) {
  tensor_spec scratch;
  for (std::size_t k = 0; k < n; ++k) {
    const tensor_spec* spec = spec_of(k, scratch, st);
    if (spec == nullptr || !provide(k, *spec, st)) return false;
  }
  return true;
}

// spec_of's answer for an inferred spec: written to scratch, or null with its status in error.
inline const tensor_spec* inferred_spec(result<tensor_spec> inferred, tensor_spec& scratch, status& error) {
  if (!inferred.ok()) {
    error = std::move(inferred).take_status();
    return nullptr;
  }
  scratch = *inferred;
  return &scratch;
}

// What an asynchronous kernel keeps until it calls back: its inputs (a std::array or std::vector
// of tensors) and its context.
template <class Device, class Inputs>
struct launch_frame {
  launch_frame(Device& device, Inputs in, std::span<tensor> out)
      : inputs(std::move(in)), ctx{device, std::span<const tensor>(inputs), out} {}
  Inputs inputs;
  kernel_context<Device> ctx;
};

// Runs `kernel` on `inputs` into `outputs` (their buffers given), then finish(status&) on its
// status (which adds the node to an error, or records the node's end). Returns true when it has
// finished, with that status in st; false when the kernel is asynchronous and `done` is a
// completion: then `inputs` has moved into a frame, and done(status) is called once, from any
// thread (the outputs must stay where they are until then). With done == nullptr an asynchronous
// kernel is waited for.
// Always inlined: it is on every node's path, and a call here measured 4% of a chain of small
// nodes on the runtime executor.
template <class Kernel, class Inputs, class Finish, class Done = std::nullptr_t>
[[gnu::always_inline]] inline bool launch(typename Kernel::device_type& device, const Kernel& kernel, Inputs& inputs, std::span<tensor> outputs,
            status& st, Finish finish, Done done = nullptr) {
  using Device = typename Kernel::device_type;
  if constexpr (Kernel::may_be_async) {
    if (kernel.async()) {
      if constexpr (std::is_same_v<Done, std::nullptr_t>) {
        kernel_context<Device> ctx{device, std::span<const tensor>(inputs), outputs};
        st = wait_for_done([&](kernel_done d) { kernel.compute_async(ctx, std::move(d)); });
        finish(st);
        return true;
      } else {
        auto* frame = new launch_frame<Device, Inputs>(device, std::move(inputs), outputs);
        kernel.compute_async(frame->ctx, kernel_done([frame, finish = std::move(finish), done](status result) mutable {
          delete frame;
          finish(result);
          done(std::move(result));
        }));
        return false;
      }
    }
  }
  kernel_context<Device> ctx{device, std::span<const tensor>(inputs), outputs};
  st = kernel.compute(ctx);
  if constexpr (paces_kernels<Device>) {
    if (st.ok()) st = device.after_kernel();
  }
  finish(st);
  return true;
}

} // namespace typeflow
