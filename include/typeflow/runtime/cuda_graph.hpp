// SPDX-License-Identifier: Apache-2.0
// A static session run as a CUDA graph: after one run of its steps on the GPU, the steps are captured
// once into a CUDA graph, made executable, and each later run is one launch of it. The same for a
// runtime session, per executor (runtime_graph_replay, at the end of this file).
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
// A graph that assigns variables is a compile error here: an assign gives the variable its value's
// buffer each run, so the addresses a replay reads would change on every run.
// session::run_batches calls feeds_of and done while it holds the session's runners: they must not
// run the same session (that would wait for itself).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/cuda/graph.hpp>
#include <typeflow/device/cuda.hpp>
#include <typeflow/device/cuda_branches.hpp>
#include <typeflow/runtime/branch_plan.hpp>
#include <typeflow/runtime/run_options.hpp>
#include <typeflow/runtime/runtime_executor.hpp>
#include <typeflow/runtime/runtime_session.hpp>
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

namespace detail {
// Updates `exec` from a new capture where CUDA allows it, else makes it anew; `how` says which
// (captured when there was none).
inline status update_or_instantiate(std::optional<gpu::graph_exec>& exec, const gpu::captured_graph& graph,
                                    graph_replay& how) {
  how = graph_replay::captured;
  if (exec) {
    auto updated = exec->update(graph);
    if (!updated.ok()) {
      exec.reset();
      return updated.status().with_context("tf::cuda_graph");
    }
    how = *updated ? graph_replay::updated : graph_replay::reinstantiated;
    if (!*updated) exec.reset();
  }
  if (!exec) {
    auto made = gpu::graph_exec::instantiate(graph);
    if (!made.ok()) return made.status().with_context("tf::cuda_graph");
    exec.emplace(std::move(made).value());
  }
  return ok_status();
}
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
  // The first assign step of the plan, or num_steps.
  static constexpr std::size_t first_assign = [] {
    for (std::size_t k = 0; k < num_steps; ++k)
      if (kinds[k] == static_step_kind::assign) return k;
    return num_steps;
  }();
  static_assert(first_assign == num_steps || compile_error<detail::text_constant<[] {
                  if constexpr (first_assign == num_steps) return detail::text();
                  else
                    return detail::cat("tf::cuda_graph: node ", infos[first_assign].node, " (", infos[first_assign].name,
                                       ") assigns a variable; a CUDA graph replays fixed addresses, and an assign "
                                       "gives the variable its value's buffer each run: run a graph that assigns "
                                       "without tf::cuda_graph");
                }>::value>::value,
                "tf::cuda_graph: a graph run as a CUDA graph must not assign variables");

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

  // ---- Overlapped runs (session::run_batches) ---------------------------------------------------
  // A batch in two halves, so that two runners take turns: begin() stages the feeds and starts the
  // graph and the copies of the fetches, all on this runner's first branch; end() waits for them.
  // Between the two, the caller begins the next batch on the other runner: its feed copies overlap
  // this graph, and this batch's fetch copies overlap the next graph.
  //
  // begin: when the graph is captured and every input already has its buffer on the GPU for the fed
  // shape, each feed goes through this runner's pinned staging (a host copy) and is copied in on the
  // branch, the graph is launched after it, and each fetch is copied out into pinned staging after
  // it; nothing waits. Otherwise the batch runs as run() does (capturing if it must), and only the
  // fetch copies are left to end().
  status begin(const group& g, const static_environment& env, std::span<const std::size_t> fetches, graph_replay& how) {
    how = graph_replay::none;
    Device& gpu = g.template get<0>();
    if (auto st = Executor::bind(g, state_, env); !st.ok()) return st;
    status st;
    bool fast = exec_.has_value();
    for (std::size_t k = 0; k < num_steps && fast; ++k)
      if (kinds[k] == static_step_kind::input) {
        const tensor& y = state_.slots[infos[k].node];
        const tensor& x = *env.feeds[infos[k].index];
        fast = y.owns_buffer() && y.use_count() == 1 && y.space() == gpu.space() && y.spec() == x.spec() &&
               x.space().host_accessible();
      }
    if (fast) {
      std::size_t staged = 0;
      for (std::size_t k = 0; k < num_steps && st.ok(); ++k) {
        if (kinds[k] == static_step_kind::input) {
          const tensor& x = *env.feeds[infos[k].index];
          st = copy_in(staged++, x, state_.slots[infos[k].node]);
        } else if (sets_values(kinds[k]) || kinds[k] == static_step_kind::output) {
          Executor::run_step(k, g, state_, env, st);
        }
      }
      if (st.ok() && signature() == signature_) {
        st = exec_->launch(origin());
        if (st.ok()) st = gpu.pace(origin());  // an op idle time paces each replay (and gives up the overlap)
        if (st.ok()) how = graph_replay::replayed;
      } else if (st.ok()) {
        fast = false;  // an address changed after all: a whole run, after the copies made so far
        st = origin().synchronize();
      }
      if (!st.ok()) {
        (void)origin().synchronize();
        return st.with_context("tf::cuda_graph");
      }
    }
    if (!fast) {
      // The copies below read what run() leaves on the first branch (its steps, or the graph joined
      // after it on the compute stream).
      if (st = run_once(g, env, how); !st.ok()) return st;
    }
    fetched_.resize(fetches.size());
    for (std::size_t j = 0; j < fetches.size() && st.ok(); ++j) st = copy_out(j, state_.slots[fetches[j]]);
    if (!st.ok()) {
      (void)origin().synchronize();
      return st.with_context("tf::cuda_graph");
    }
    return ok_status();
  }

  // Waits for whatever this runner's first branch still has to do (after an error).
  void wait() noexcept { (void)origin().synchronize(); }

  // Waits for the batch begin() started; the fetches, in begin's order, as host tensors of their own.
  status end(std::span<tensor> out) {
    if (auto st = origin().synchronize(); !st.ok()) return st.with_context("tf::cuda_graph");
    for (std::size_t j = 0; j < out.size(); ++j) {
      auto t = tensor::allocate(fetched_[j].spec.type, fetched_[j].spec.dims);
      if (!t.ok()) return std::move(t).take_status();
      if (t->bytes() != 0) std::memcpy(t->data(), fetch_staging_[j].data(), t->bytes());
      out[j] = std::move(*t);
    }
    return ok_status();
  }

  // One run (see the top of this file), its fetches (state slots) copied out into `out` as host
  // tensors of their own: begin() then end(), so that once the graph is captured a run is a host copy
  // of each feed into pinned staging, the copies in, the launch and the copies out queued on one
  // stream, one wait, and a host copy of each fetch out of staging. What it did goes to
  // metadata->replay and graph_branches.
  status run(const group& g, const static_environment& env, std::span<const std::size_t> fetches, std::span<tensor> out,
             run_metadata* metadata) {
    graph_replay how = graph_replay::none;
    status st = begin(g, env, fetches, how);
    if (st.ok()) st = end(out);
    else wait();
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
    // Inputs, variables and constants take this run's values; output nodes share their ops' outputs
    // (buffers kept from the last run), so that the signature sees what the graph will read.
    for (std::size_t k = 0; k < num_steps; ++k)
      if ((sets_values(kinds[k]) || kinds[k] == static_step_kind::output) &&
          (Executor::run_step(k, g, state_, env, st), !st.ok()))
        return st;
    if (exec_ && signature() == signature_) {
      if (st = launch(gpu.streams()); !st.ok()) return st;
      if (st = gpu.after_kernel(); !st.ok()) return st;  // an op idle time paces each replay
      how = graph_replay::replayed;
      return ok_status();
    }
    // An op reuses its output's buffer only when nothing else holds it: not the output nodes.
    clear_output_nodes();
    if (st = run_steps(g, env); !st.ok()) return st;
    clear_output_nodes();
    return capture(g, env, how);
  }

  void clear_output_nodes() {
    for (std::size_t k = 0; k < num_steps; ++k)
      if (kinds[k] == static_step_kind::output) state_.slots[infos[k].node] = tensor();
  }

  // Page-locked host memory, grown as needed: the staging of feeds and fetches in run_batches.
  class pinned_staging {
   public:
    pinned_staging() = default;
    pinned_staging(pinned_staging&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    pinned_staging& operator=(pinned_staging&&) = delete;
    ~pinned_staging() { (void)gpu::pinned_free(p_); }
    status reserve(std::size_t bytes) {
      if (bytes <= bytes_) return ok_status();
      (void)gpu::pinned_free(std::exchange(p_, nullptr));
      bytes_ = 0;
      auto p = gpu::pinned_alloc(bytes);
      if (!p.ok()) return p.status();
      p_ = *p;
      bytes_ = bytes;
      return ok_status();
    }
    void* data() const noexcept { return p_; }

   private:
    void* p_ = nullptr;
    std::size_t bytes_ = 0;
  };

  // Feed x into the device buffer y on the first branch, through staging buffer i.
  status copy_in(std::size_t i, const tensor& x, tensor& y) {
    if (feed_staging_.size() <= i) feed_staging_.resize(i + 1);
    if (auto st = feed_staging_[i].reserve(x.bytes()); !st.ok()) return st;
    if (x.bytes() == 0) return ok_status();
    std::memcpy(feed_staging_[i].data(), x.data(), x.bytes());
    return gpu::copy_async(origin(), y.data(), feed_staging_[i].data(), x.bytes(), gpu::copy_kind::host_to_device);
  }
  // The device tensor t into fetch staging buffer j on the first branch (end() makes the host tensor).
  status copy_out(std::size_t j, const tensor& t) {
    if (fetch_staging_.size() <= j) fetch_staging_.resize(j + 1);
    fetched_[j] = fetched{t.spec()};
    if (auto st = fetch_staging_[j].reserve(t.bytes()); !st.ok()) return st;
    if (t.bytes() == 0) return ok_status();
    return gpu::copy_async(origin(), fetch_staging_[j].data(), t.data(), t.bytes(), gpu::copy_kind::device_to_host);
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
        if (!sets_values(kinds[k])) Executor::run_step(k, g, state_, env, st);
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
  // updates the executable graph. Output nodes are set again in order (they share their op's output).
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

    if (auto e = make_event(capture_fork_); !e.ok()) return e;
    std::vector<tensor> hold;
    if (auto st = gpu::begin_capture(origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    // Whatever happens from here, the forked branches join the origin and the capture ends.
    std::optional<result<gpu::captured_graph>> graph;
    int forked = 1;
    struct ending {
      cuda_graph_replay& r;
      int& forked;
      std::optional<result<gpu::captured_graph>>& graph;
      ~ending() {
        for (int b = 1; b < forked; ++b)
          (void)r.order(r.branches_->stream(b), *r.branch_events_[static_cast<std::size_t>(b)], r.origin());
        graph.emplace(gpu::end_capture(r.origin()));
      }
    };
    status st;
    {
      const ending end{*this, forked, graph};
      for (int b = 1; b < plan.branches && st.ok(); ++b)
        if (st = order(origin(), *capture_fork_, branches_->stream(b)); st.ok()) forked = b + 1;
      if (st.ok()) st = capture_steps(g, env, plan, hold);
    }
    if (!st.ok()) return st.with_context("capturing a CUDA graph");
    if (!graph->ok()) return graph->status().with_context("capturing a CUDA graph");
    // What the capture took from the pool may be a block freed by work still queued on the compute
    // stream: the next replay (run_batches' too, which does not fork from the compute stream) comes
    // after that work.
    if (auto ordered = order(g.template get<0>().streams().compute, *fork_, origin()); !ordered.ok())
      return ordered.with_context("tf::cuda_graph");
    return instantiate(**graph, plan, hold, how);
  }

  // The GPU steps on their branches, each after the steps it waits for (in the capture).
  status capture_steps(const group& g, const static_environment& env, const branch_plan& plan, std::vector<tensor>& hold) {
    status st;
    for (std::size_t k = 0, i = 0; k < num_steps && st.ok(); ++k) {
      if (kinds[k] == static_step_kind::output) {
        Executor::run_step(k, g, state_, env, st);
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
        Executor::run_step(k, g, state_, env, st);
      }
      if (st.ok() && plan.recorded[i]) st = step_events_[i]->record(on);
      ++i;
    }
    return st;
  }

  // Makes the executable graph from a capture, or updates it.
  status instantiate(gpu::captured_graph& graph, const branch_plan& plan, std::vector<tensor>& hold, graph_replay& how) {
    if (auto st = detail::update_or_instantiate(exec_, graph, how); !st.ok()) return st;
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
  std::optional<gpu::event> fork_, join_, capture_fork_;
  struct fetched {
    tensor_spec spec;
  };
  std::vector<fetched> fetched_;
  std::vector<pinned_staging> feed_staging_, fetch_staging_;
  std::vector<std::optional<gpu::event>> step_events_, branch_events_;
  int branches_used_ = 0;
};

// ---- Runtime sessions -----------------------------------------------------------------------------

// A runtime session on GPU policy Device whose runs replay a CUDA graph per executor (per signature),
// as ONNX Runtime's CUDA graphs: made with runtime_session(graph, gpu, cuda_graph{}).
template <class Device, class Registry = default_registry>
using cuda_graph_runtime_session = runtime_session<Device, Registry, true>;

// One runtime executor's runs as a CUDA graph. A run with the feeds' shapes of the capture copies the
// feeds into the device tensors the capture read (the feeds' staging), launches the graph, and copies
// the outputs the capture wrote into tensors of their own for the caller; nothing waits on the host
// (the caller's later work on the GPU is ordered after it, as after a plain run). Another shape, or
// the first run: the executor runs as usual on the runner's stream (its results are the run's), then
// runs again under capture, reading the staging; what that run allocates (its arena, intermediates
// and outputs) is kept by the graph. Nodes run in the executor's sequential order, on one stream.
template <class Executor, class Device>
class runtime_graph_replay final : public detail::replay_base {
  static_assert(detail::is_cuda_policy<Device>,
                "tf::cuda_graph: a runtime session runs as a CUDA graph on one GPU policy (tf::cuda<N> or "
                "tf::cuda_spilling<N>)");

 public:
  static result<std::unique_ptr<runtime_graph_replay>> create(Device& gpu) {
    if (!gpu.available().ok()) return gpu.available().with_context("tf::cuda_graph");
    auto made = cuda_branches::create(Device::ordinal_value, 1);
    if (!made.ok()) return made.status().with_context("tf::cuda_graph");
    std::unique_ptr<runtime_graph_replay> r(new runtime_graph_replay(std::move(made).value()));
    for (auto* e : {&r->fork_, &r->join_}) {
      auto ev = gpu::event::create(Device::ordinal_value);
      if (!ev.ok()) return ev.status().with_context("tf::cuda_graph");
      e->emplace(std::move(ev).value());
    }
    return r;
  }
  runtime_graph_replay(const runtime_graph_replay&) = delete;
  runtime_graph_replay& operator=(const runtime_graph_replay&) = delete;
  ~runtime_graph_replay() override { (void)branches_->synchronize(); }

  status run(Device& gpu, const Executor& e, const runtime_step& step, std::vector<tensor>& outputs, graph_replay& how) {
    how = graph_replay::none;
    if (exec_ && same_feeds(step)) {
      if (auto st = replay(gpu, step, outputs); !st.ok()) return st.with_context("tf::cuda_graph");
      how = graph_replay::replayed;
      return gpu.after_kernel();  // an op idle time paces each replay
    }
    // The run's results, on the runner's stream (which makes cuBLASLt's algorithms, cuDNN's plans and
    // NVRTC's kernels for it); what it allocates is kept until its work has joined the compute stream.
    cuda_streams& streams = gpu.streams();
    {
      std::vector<tensor> hold;
      if (auto st = order(streams.compute, *fork_, origin()); !st.ok()) return st.with_context("tf::cuda_graph");
      status st;
      {
        const cuda_branches::scope on(*branches_, 0, false, &hold);
        st = e.run_sequential(gpu, step, outputs);
      }
      if (auto joined = order(origin(), *join_, streams.compute); !joined.ok()) {
        (void)origin().synchronize();
        st.update(joined.with_context("tf::cuda_graph"));
      }
      if (!st.ok()) return st;
    }
    return capture(gpu, e, step, how);
  }

 private:
  explicit runtime_graph_replay(std::unique_ptr<cuda_branches> b) : branches_(std::move(b)) {}

  const gpu::stream& origin() const { return branches_->stream(0); }
  status order(const gpu::stream& from, gpu::event& e, const gpu::stream& to) {
    if (auto st = e.record(from); !st.ok()) return st;
    return to.wait(e);
  }

  bool same_feeds(const runtime_step& step) const {
    if (step.feeds.size() != staging_.size()) return false;
    for (std::size_t k = 0; k < staging_.size(); ++k)
      if (step.feeds[k].spec() != staging_[k].spec()) return false;
    return true;
  }

  // Copies feeds into the staging, launches, and copies the graph's outputs into new tensors, all on
  // the runner's stream between the compute stream's work before and after.
  status replay(Device& gpu, const runtime_step& step, std::vector<tensor>& outputs) {
    std::vector<tensor> out(captured_outputs_.size());
    for (std::size_t j = 0; j < out.size(); ++j) {
      auto t = gpu.allocate(captured_outputs_[j].dtype(), captured_outputs_[j].shape());
      if (!t.ok()) return std::move(t).take_status();
      out[j] = std::move(*t);
    }
    cuda_streams& streams = gpu.streams();
    if (auto st = order(streams.compute, *fork_, origin()); !st.ok()) return st;
    status st;
    for (std::size_t k = 0; k < staging_.size() && st.ok(); ++k)
      st = gpu::copy_async(origin(), staging_[k].data(), step.feeds[k].data(), staging_[k].bytes(),
                           step.feeds[k].space().host_accessible() ? gpu::copy_kind::host_to_device
                                                                    : gpu::copy_kind::device_to_device);
    if (st.ok()) st = exec_->launch(origin());
    for (std::size_t j = 0; j < out.size() && st.ok(); ++j)
      st = gpu::copy_async(origin(), out[j].data(), captured_outputs_[j].data(), out[j].bytes(),
                           gpu::copy_kind::device_to_device);
    if (auto joined = order(origin(), *join_, streams.compute); !joined.ok()) st.update(joined);
    if (!st.ok()) {
      (void)origin().synchronize();
      return st;
    }
    outputs = std::move(out);
    return ok_status();
  }

  // Captures a run of the executor reading the staging (the feeds copied there first) and makes or
  // updates the executable graph.
  status capture(Device& gpu, const Executor& e, const runtime_step& step, graph_replay& how) {
    std::vector<tensor> staging;
    for (const tensor& f : step.feeds) {
      auto t = gpu.allocate(f.dtype(), f.shape());
      if (!t.ok()) return std::move(t).take_status().with_context("tf::cuda_graph: the feeds' staging");
      staging.push_back(std::move(*t));
    }
    cuda_streams& streams = gpu.streams();
    if (auto st = order(streams.compute, *fork_, origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    for (std::size_t k = 0; k < staging.size(); ++k)
      if (auto st = gpu::copy_async(origin(), staging[k].data(), step.feeds[k].data(), staging[k].bytes(),
                                    step.feeds[k].space().host_accessible() ? gpu::copy_kind::host_to_device
                                                                             : gpu::copy_kind::device_to_device);
          !st.ok())
        return st.with_context("tf::cuda_graph");
    runtime_step captured = step;
    captured.feeds = std::span<const tensor>(staging);
    captured.metadata = nullptr;  // the run before it gave this run's step stats
    std::vector<tensor> hold, outputs;
    if (auto st = gpu::begin_capture(origin()); !st.ok()) return st.with_context("tf::cuda_graph");
    status st;
    {
      const cuda_branches::scope on(*branches_, 0, true, &hold);
      st = e.run_sequential(gpu, captured, outputs);
    }
    auto graph = gpu::end_capture(origin());
    if (!st.ok()) return st.with_context("capturing a CUDA graph");
    if (!graph.ok()) return graph.status().with_context("capturing a CUDA graph");
    if (auto st2 = detail::update_or_instantiate(exec_, *graph, how); !st2.ok()) return st2;
    // The graph's memory: the staging, what the captured run allocated (its outputs among it).
    if (auto st2 = order(origin(), *join_, streams.compute); !st2.ok()) {
      (void)origin().synchronize();
      return st2.with_context("tf::cuda_graph");
    }
    staging_ = std::move(staging);
    held_ = std::move(hold);
    captured_outputs_ = std::move(outputs);
    return ok_status();
  }

  std::unique_ptr<cuda_branches> branches_;
  std::optional<gpu::graph_exec> exec_;
  std::vector<tensor> staging_, held_, captured_outputs_;
  std::optional<gpu::event> fork_, join_;
};

}  // namespace typeflow
