// SPDX-License-Identifier: Apache-2.0
// A static session run as a CUDA graph: after one run of its steps on the GPU, the steps are captured
// once into a CUDA graph, made executable, and each later run is one launch of it.
//   #include <typeflow/runtime/cuda_graph.hpp>
//   tf::cuda<0> gpu;
//   tf::cuda_graph_session<decltype(g), tf::cuda<0>, registry> s(g, gpu, tf::cuda_graph{});
//   tf::run_metadata md;
//   auto y = s.run(md, tf::feed(x, batch), tf::fetch(out));   // md.replay: captured, then replayed
//
// What a run does (cuda_graph_replay::run):
//  1. The state's arena is bound for the fed shapes, and the inputs, variables and constants take
//     their values: each feed is copied into its input's buffer on the GPU, which stays the same from
//     run to run while its shape does (the feeds' fixed staging); a fetch is copied out of its node's
//     buffer, which stays too.
//  2. Every address and shape the GPU steps read or write is compared with those of the capture. The
//     same: the executable graph is launched (graph_replay::replayed).
//  3. Otherwise (the first run, a new batch size, a variable given a new value): the steps run on the
//     GPU as usual, which gives this run's results and makes what a capture may not make (cuBLASLt's
//     algorithms, cuDNN's plans, NVRTC's fused kernels); then they are captured again and the
//     executable graph takes the new capture's parameters (updated) or, where CUDA refuses, is made
//     anew (reinstantiated); the first time, captured.
// The steps run on the session's own streams (cuda_branches), never on the GPU's shared compute
// stream, so another session launching on the GPU meanwhile is not captured; the runs join the
// compute stream by events, which keeps the pool's rule for freed memory. In the capture, the plan's
// independent steps go on up to cuda_graph::branches streams (runtime/branch_plan.hpp): memory read
// and written by each step, including bytes the memory plan reuses, orders them; everything else is
// parallel in the graph. What the steps allocate during the capture (a convolution's workspace) is
// kept as long as the executable graph uses it.
//
// Not capturable, and said so in the run's status: a kernel that waits for the GPU to report errors
// in its data (integer division and powers, gather's indices) and one that copies from host memory
// it does not keep (resize's tables). A capture may not wait, so these fail the capture, naming
// the node; such a graph runs without tf::cuda_graph.
// An assign step writes a variable between runs; a graph that assigns gives the variable its
// output's buffer, whose address then alternates with the next output's, so such a graph updates its
// executable graph on most runs (run_metadata says so).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/cuda/graph.hpp>
#include <typeflow/device/cuda.hpp>
#include <typeflow/device/cuda_branches.hpp>
#include <typeflow/runtime/branch_plan.hpp>
#include <typeflow/runtime/run_options.hpp>
#include <typeflow/runtime/session.hpp>
#include <typeflow/runtime/static_steps.hpp>

namespace typeflow {

// A static session on GPU policy Device, run as a CUDA graph: made with session(g, gpu, cuda_graph{}).
template <class Graph, class Device, class Registry = default_registry, bool Fuse = fuses_by_default<Device>>
using cuda_graph_session = session<Graph, Device, Registry, Fuse, true, false, true>;

namespace detail {
template <class D>
inline constexpr bool is_cuda_policy = false;
template <int N, class A>
inline constexpr bool is_cuda_policy<basic_cuda<N, A>> = true;
}  // namespace detail

template <class Executor, class Device>
class cuda_graph_replay final : public detail::replay_base {
  static_assert(detail::is_cuda_policy<Device>,
                "tf::cuda_graph: a session runs as a CUDA graph on one GPU policy (tf::cuda<N> or tf::cuda_spilling<N>)");
  using group = device_group_t<Device>;
  static constexpr auto& kinds = Executor::step_kinds;
  static constexpr auto& infos = Executor::infos;
  static constexpr std::size_t num_steps = kinds.size();

  static constexpr bool sets_values(static_step_kind k) {
    return k == static_step_kind::input || k == static_step_kind::variable || k == static_step_kind::constant;
  }
  static constexpr bool on_gpu(static_step_kind k) { return k == static_step_kind::op || k == static_step_kind::fused; }
  static_assert([] {
    for (static_step_kind k : kinds)
      if (k == static_step_kind::transfer) return false;
    return true;
  }(), "tf::cuda_graph: a graph captured as a CUDA graph runs on one GPU, without transfers");

  // The positions in the plan of the steps the GPU runs (the graph's steps).
  static constexpr std::size_t num_gpu_steps = [] {
    std::size_t n = 0;
    for (static_step_kind k : kinds) n += on_gpu(k);
    return n;
  }();
  static constexpr std::array<std::size_t, num_gpu_steps + 1> gpu_steps = [] {  // + 1: never empty
    std::array<std::size_t, num_gpu_steps + 1> a{};
    std::size_t n = 0;
    for (std::size_t k = 0; k < num_steps; ++k)
      if (on_gpu(kinds[k])) a[n++] = k;
    return a;
  }();

 public:
  using state_type = typename Executor::state;

  // The runner of one plan on `gpu`, its steps on `branches` streams of their own; why not, when the
  // GPU is not there or its streams cannot be made.
  static result<std::unique_ptr<cuda_graph_replay>> create(Device& gpu, int branches) {
    if (!gpu.available().ok()) return gpu.available().with_context("tf::cuda_graph");
    auto made = cuda_branches::create(Device::ordinal_value, branches);
    if (!made.ok()) return made.status().with_context("tf::cuda_graph");
    std::unique_ptr<cuda_graph_replay> r(new cuda_graph_replay(std::move(made).value()));
    if (auto st = r->make_event(r->fork_); !st.ok()) return st;
    if (auto st = r->make_event(r->join_); !st.ok()) return st;
    return r;
  }

  cuda_graph_replay(const cuda_graph_replay&) = delete;
  cuda_graph_replay& operator=(const cuda_graph_replay&) = delete;
  // Waits for its streams: a launch may still be reading the state's buffers and the graph's memory.
  ~cuda_graph_replay() override { (void)branches_->synchronize(); }

  state_type& state() noexcept { return state_; }

  // One run (see the top of this file); what it did goes to metadata->replay and graph_branches.
  status run(const group& g, const static_environment& env, run_metadata* metadata) {
    graph_replay how = graph_replay::none;
    status st = run_once(g, env, how);
    if (metadata != nullptr) {
      metadata->replay = how;
      metadata->graph_branches = exec_ ? branches_used_ : 0;
    }
    return st;
  }

 private:
  explicit cuda_graph_replay(std::unique_ptr<cuda_branches> b) : branches_(std::move(b)) {}

  status run_once(const group& g, const static_environment& env, graph_replay& how) {
    Executor::check_devices();
    Device& gpu = g.template get<0>();
    if (auto st = Executor::bind(g, state_, env); !st.ok()) return st;
    status st;
    for (std::size_t k = 0; k < num_steps; ++k)
      if (sets_values(kinds[k]) && (Executor::run_table[k](infos[k], g, state_, env, st, nullptr), !st.ok())) return st;
    if (exec_ && signature() == signature_) {
      if (st = launch(gpu.streams()); !st.ok()) return st;
      for (std::size_t k = 0; k < num_steps; ++k)
        if (!sets_values(kinds[k]) && !on_gpu(kinds[k]) &&
            (Executor::run_table[k](infos[k], g, state_, env, st, nullptr), !st.ok()))
          return st;
      how = graph_replay::replayed;
      return ok_status();
    }
    if (st = run_steps(g, env); !st.ok()) return st;
    return capture(g, env, how);
  }

  status make_event(std::optional<gpu::event>& e) {
    if (e) return ok_status();
    auto made = gpu::event::create(Device::ordinal_value);
    if (!made.ok()) return made.status().with_context("tf::cuda_graph");
    e.emplace(std::move(made).value());
    return ok_status();
  }

  const gpu::stream& origin() const { return branches_->stream(0); }

  // Work on `from` before this call comes before work on `to` after it.
  status order(const gpu::stream& from, gpu::event& e, const gpu::stream& to) {
    if (auto st = e.record(from); !st.ok()) return st;
    return to.wait(e);
  }

  // One replay between the compute stream's work before it and after it.
  status launch(cuda_streams& streams) {
    if (auto st = order(streams.compute, *fork_, origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    if (auto st = exec_->launch(origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    if (auto st = order(origin(), *join_, streams.compute); !st.ok()) {
      (void)origin().synchronize();
      return st.with_context("tf::cuda_graph");
    }
    return ok_status();
  }

  // The steps after the values are set, in order on the first branch, as a run without a graph runs
  // them; what they allocate is kept until their work has joined the compute stream.
  status run_steps(const group& g, const static_environment& env) {
    cuda_streams& streams = g.template get<0>().streams();
    if (auto st = order(streams.compute, *fork_, origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    std::vector<tensor> hold;
    status st;
    {
      const cuda_branches::scope on(*branches_, 0, false, &hold);
      for (std::size_t k = 0; k < num_steps && st.ok(); ++k)
        if (!sets_values(kinds[k])) Executor::run_table[k](infos[k], g, state_, env, st, nullptr);
    }
    if (auto joined = order(origin(), *join_, streams.compute); !joined.ok()) {
      (void)origin().synchronize();
      st.update(joined.with_context("tf::cuda_graph"));
    }
    return st;
  }

  // What GPU step i reads and writes in the state as it is now.
  static void add_range(std::vector<memory_range>& to, const tensor& t) {
    const auto begin = reinterpret_cast<std::uintptr_t>(t.data());
    if (begin != 0 && t.bytes() != 0) to.push_back({begin, begin + t.bytes()});
  }
  step_access access_of(std::size_t k) const {
    step_access a;
    for (std::size_t slot : infos[k].inputs) add_range(a.reads, state_.slots[slot]);
    for (std::size_t o = 0; o < Executor::output_counts[k]; ++o) add_range(a.writes, state_.slots[infos[k].output_slot + o]);
    return a;
  }

  // The address, size and shape of every tensor the GPU steps read or write.
  std::vector<std::uintptr_t> signature() const {
    std::vector<std::uintptr_t> sig;
    const auto add = [&](const tensor& t) {
      sig.push_back(reinterpret_cast<std::uintptr_t>(t.data()));
      sig.push_back(t.bytes());
      sig.push_back(t.rank());
      for (std::size_t d = 0; d < t.rank(); ++d) sig.push_back(static_cast<std::uintptr_t>(t.dim(d)));
    };
    for (std::size_t i = 0; i < num_gpu_steps; ++i) {
      const std::size_t k = gpu_steps[i];
      for (std::size_t slot : infos[k].inputs) add(state_.slots[slot]);
      for (std::size_t o = 0; o < Executor::output_counts[k]; ++o) add(state_.slots[infos[k].output_slot + o]);
    }
    return sig;
  }

  // Captures the GPU steps, on the branches of a plan made from what they touch now, and makes or
  // updates the executable graph. Output nodes are set again (they share their op's output); assigns
  // are not (the steps' run has assigned this run's values).
  status capture(const group& g, const static_environment& env, graph_replay& how) {
    std::vector<step_access> access(num_gpu_steps);
    for (std::size_t i = 0; i < num_gpu_steps; ++i) access[i] = access_of(gpu_steps[i]);
    const branch_plan plan = plan_branches(access, branches_->size());
    step_events_.resize(num_gpu_steps);
    branch_events_.resize(static_cast<std::size_t>(branches_->size()));
    for (std::size_t i = 0; i < num_gpu_steps; ++i)
      if (plan.recorded[i])
        if (auto st = make_event(step_events_[i]); !st.ok()) return st;
    for (auto& e : branch_events_)
      if (auto st = make_event(e); !st.ok()) return st;

    std::vector<tensor> hold;
    if (auto st = gpu::begin_capture(origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    status st;
    for (int b = 1; b < plan.branches && st.ok(); ++b) st = order(origin(), *fork_, branches_->stream(b));
    for (std::size_t k = 0, i = 0; k < num_steps && st.ok(); ++k) {
      if (kinds[k] == static_step_kind::output) {
        Executor::run_table[k](infos[k], g, state_, env, st, nullptr);
        continue;
      }
      if (!on_gpu(kinds[k])) continue;
      const int b = plan.branch[i];
      const gpu::stream& on = branches_->stream(b);
      for (std::size_t j : plan.waits[i])
        if (st = on.wait(*step_events_[j]); !st.ok()) break;
      if (!st.ok()) break;
      {
        const cuda_branches::scope scope(*branches_, b, true, &hold);
        Executor::run_table[k](infos[k], g, state_, env, st, nullptr);
      }
      if (st.ok() && plan.recorded[i]) st = step_events_[i]->record(on);
      ++i;
    }
    for (int b = 1; b < plan.branches && st.ok(); ++b)
      st = order(branches_->stream(b), *branch_events_[static_cast<std::size_t>(b)], origin());
    auto graph = gpu::end_capture(origin());  // ends the capture whatever happened in it
    if (!st.ok()) return st.with_context("capturing a CUDA graph");
    if (!graph.ok()) return graph.status().with_context("capturing a CUDA graph");

    how = graph_replay::captured;
    if (exec_) {
      auto updated = exec_->update(*graph);
      if (!updated.ok()) {
        exec_.reset();
        return updated.status().with_context("tf::cuda_graph");
      }
      how = *updated ? graph_replay::updated : graph_replay::reinstantiated;
      if (!*updated) exec_.reset();
    }
    if (!exec_) {
      auto made = gpu::graph_exec::instantiate(*graph);
      if (!made.ok()) return made.status().with_context("tf::cuda_graph");
      exec_.emplace(std::move(made).value());
    }
    // The memory only the graph uses (what the capture allocated and no slot holds) stays with it.
    scratch_.clear();
    for (tensor& t : hold)
      if (t.use_count() == 1) scratch_.push_back(std::move(t));
    signature_ = signature();
    branches_used_ = plan.branches;
    return ok_status();
  }

  std::unique_ptr<cuda_branches> branches_;
  state_type state_;
  std::optional<gpu::graph_exec> exec_;
  std::vector<std::uintptr_t> signature_;
  std::vector<tensor> scratch_;
  std::optional<gpu::event> fork_, join_;
  std::vector<std::optional<gpu::event>> step_events_, branch_events_;
  int branches_used_ = 0;
};

}  // namespace typeflow
