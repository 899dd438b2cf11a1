// SPDX-License-Identifier: Apache-2.0
// runtime_executor<Device, Registry>: runs a runtime graph for one signature (feeds, fetches,
// targets), as TensorFlow's ExecutorImpl: made once per signature, then run many times, from
// many threads at once (each run has its own state).
//  - Pruning: only what the fetches and targets need; a fed node's inputs are not needed.
//  - Node items: inputs and successors by index, initial pending counts (data and control
//    edges), computed once here.
//  - run_sequential: the nodes in topological order on the calling thread.
//  - run_parallel: TensorFlow's ExecutorState algorithm (runtime/detail/parallel_step.hpp): atomic
//    pending counts, the root nodes are the first ready set; a thread runs the cheap nodes it
//    makes ready itself and hands expensive ones to the inter-op pool (Eigen's ThreadPool, as
//    TensorFlow's); an asynchronous kernel finishes through its callback; the first error ends the
//    step and is its status; the caller waits on a condition variable, pool threads sleep when
//    there is no work.
//  - Asynchronous kernels (kernels/kernel.hpp): the sequential executor waits for each; the
//    parallel one keeps the node's inputs alive until the kernel calls back, and goes on with
//    other nodes meanwhile.
//  - Memory: an intermediate is released when its last consumer has run; an elementwise node
//    writes over an input it is the last reader of when nothing else holds that buffer and the
//    dtype and shape match (TensorFlow's forwarding).
//  - Plans per fed shapes (run_sequential; ONNX Runtime's memory patterns): every output's spec
//    is a function of the fed shapes, so the second run with a set of them records the specs and
//    places the intermediates in one arena (memory/arena_plan.hpp, by the lifetimes of node order);
//    later runs with those shapes skip shape inference and make one allocation instead of one per
//    intermediate. An output the recording run wrote over its input takes that input's place, so a
//    planned step needs no more memory than forwarding did; a chain of such outputs that ends in a
//    fetched output, or that has an asynchronous kernel's, keeps buffers of its own (and forwards).
//    Shapes seen once are only remembered: placing costs O(nodes^2) (10 ms for 5000 nodes), which
//    shapes that change on every run would pay every time.
// A node is expensive when its kernel type says so (`expensive`, per kernel; see README).
//  - Partitions (runtime/runtime_session.hpp for a device_set): _send gives its input to the step's
//    rendezvous (through the host when it is in device memory); _recv is asynchronous: it finishes
//    when the tensor arrives (copied into this device's memory when that is not the host's), so no
//    thread waits for it. Such graphs run through async_run, which starts a step and reports its end
//    through a callback, as TensorFlow's RunAsync with an ExecutorBarrier.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/copy.hpp>
#include <typeflow/graph/runtime_graph.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/memory/arena_plan.hpp>
#include <typeflow/runtime/crash_handler.hpp>
#include <typeflow/runtime/detail/parallel_step.hpp>
#include <typeflow/runtime/detail/plan_cache.hpp>
#include <typeflow/runtime/launch.hpp>
#include <typeflow/runtime/rendezvous.hpp>
#include <typeflow/runtime/run_options.hpp>

namespace typeflow {

namespace detail {
// How deep receives that completed inline (on a sending thread) are nested on this thread: past a
// few, the next one continues on the pool, so a chain that crosses devices many times does not grow
// one thread's stack without bound.
inline thread_local int inline_receives = 0;
inline constexpr int max_inline_receives = 8;
}  // namespace detail

// What one run needs besides the executor: the fed tensors (by the executor's feed order), the
// options' deadline and cancellations, and where step stats go.
struct runtime_step {
  std::span<const tensor> feeds;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const cancellation* cancel = nullptr;
  const cancellation* session_cancel = nullptr;
  run_metadata* metadata = nullptr;
  rendezvous* transfers = nullptr;             // for graphs with _send and _recv
  Eigen::ThreadPoolInterface* pool = nullptr;  // the pool an async run (a partition) runs on
  const char* session = nullptr;               // the session's label in crash reports (runtime/crash_handler.hpp),
                                               // outliving the step; null: that of the running thread's scope
};

template <class Device, class Registry = default_registry>
class runtime_executor {
 public:
  using graph_type = runtime_graph<Device, Registry>;

  // feeds and fetches name tensors ("x" or "x:0", "s:1" for output 1 of s), targets name nodes.
  // keys: the slots of the rendezvous its steps get, for graphs with _send and _recv. device: the
  // instance it will run on, when the policy keeps tensors outside host memory: constants are
  // copied there once, here.
  static result<std::shared_ptr<const runtime_executor>> make(std::shared_ptr<const graph_type> graph,
                                                              std::span<const std::string> feeds,
                                                              std::span<const std::string> fetches,
                                                              std::span<const std::string> targets,
                                                              const rendezvous_keys* keys = nullptr,
                                                              Device* device = nullptr) {
    auto e = std::shared_ptr<runtime_executor>(new runtime_executor());
    e->graph_ = std::move(graph);
    const graph_type& g = *e->graph_;
    const auto find = [&](std::string_view n) { return g.find(n); };
    const auto outputs = [&](std::size_t i) { return g[i].num_outputs(); };
    auto resolve = [&](const std::string& name, bool port_allowed, const char* what) {
      return resolve_tensor(name, what, port_allowed, find, outputs);
    };
    std::vector<std::size_t> fed_item(g.size(), npos);
    for (std::size_t k = 0; k < feeds.size(); ++k) {
      auto i = resolve_feed(feeds[k], find, outputs);
      if (!i.ok()) return i.status();
      if (fed_item[*i] != npos) return errors::invalid_argument("feed '", feeds[k], "' is given twice");
      fed_item[*i] = k;
      e->feed_specs_.push_back(g[*i].spec());
    }
    std::vector<std::size_t> target_items;
    std::vector<endpoint> fetch_items;
    for (const std::string& f : fetches) {
      auto i = resolve(f, true, "fetch");
      if (!i.ok()) return i.status();
      fetch_items.push_back(*i);
    }
    for (const std::string& t : targets) {
      auto i = resolve(t, false, "target");
      if (!i.ok()) return i.status();
      target_items.push_back(i->node);
    }
    if (fetch_items.empty() && target_items.empty())
      return errors::invalid_argument("a run needs at least one fetch or target");

    // Pruning, backwards from the fetches and targets; a fed node needs nothing.
    std::vector<bool> needed(g.size(), false);
    std::vector<std::size_t> stack(target_items);
    for (const endpoint& f : fetch_items) stack.push_back(f.node);
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      stack.pop_back();
      if (needed[i]) continue;
      needed[i] = true;
      if (fed_item[i] != npos) continue;
      for (std::size_t j : g[i].inputs) stack.push_back(j);
      for (std::size_t j : g[i].control) stack.push_back(j);
    }
    // Local numbering in topological order; each node's outputs are consecutive output slots.
    std::vector<std::size_t> local(g.size(), npos);
    for (std::size_t i : g.order())
      if (needed[i]) {
        local[i] = e->nodes_.size();
        node n;
        n.item = i;
        n.feed = fed_item[i];
        n.output_begin = e->num_slots_;
        n.num_outputs = static_cast<std::uint32_t>(g[i].num_outputs());
        e->num_slots_ += n.num_outputs;
        e->nodes_.push_back(std::move(n));
      }
    e->slot_readers_.assign(e->num_slots_, 0);
    const auto slot_of = [&](std::size_t item, std::size_t port) {
      return static_cast<std::uint32_t>(e->nodes_[local[item]].output_begin + port);
    };
    std::vector<std::vector<std::uint32_t>> successors(e->nodes_.size());
    // The prologue: fed nodes and constants without control inputs, whose outputs a parallel step
    // sets on the calling thread before it starts (their edges cost no atomic operation).
    std::vector<bool> prologue(e->nodes_.size(), false);
    e->expensive_ = std::make_unique<bool[]>(e->nodes_.size());
    for (std::size_t k = 0; k < e->nodes_.size(); ++k) {
      node& n = e->nodes_[k];
      const auto& it = g[n.item];
      if (n.feed == npos && it.kind == runtime_node_kind::placeholder)
        return errors::invalid_argument("placeholder '", it.name, "' is needed by the fetches but not fed");
      if (n.feed == npos && (it.kind == runtime_node_kind::send || it.kind == runtime_node_kind::recv)) {
        const auto slot = keys ? keys->find(it.key) : std::nullopt;
        if (!slot)
          return errors::failed_precondition("node '", it.name, "' (", it.def.op, ") has key '", it.key,
                                             "', which is not among the keys of this step's rendezvous");
        n.key_slot = *slot;
        if (it.kind == runtime_node_kind::recv) n.recv_index = e->num_recvs_++;
        e->transfers_ = true;
      }
      if (n.feed == npos && it.kind == runtime_node_kind::constant && device != nullptr &&
          !device->space().host_accessible()) {
        auto on_device = to_device(it.value, *device);
        if (!on_device.ok()) return on_device.status().with_context(detail::cat("constant '", it.name, "'").str());
        n.value = std::move(*on_device);
      }
      e->expensive_[k] = n.feed == npos && it.kind == runtime_node_kind::op && it.kernel->expensive;
      std::uint32_t pending = 0;
      if (n.feed == npos) {  // fed: ready at the start, reads nothing
        for (std::size_t j = 0; j < it.inputs.size(); ++j) {
          n.inputs.push_back(slot_of(it.inputs[j], it.ports[j]));
          ++e->slot_readers_[n.inputs.back()];
        }
        // A fed tensor must match its node's spec exactly where that is fully defined, so fully
        // defined input specs are the ones a run sees, and inference would give it.specs again.
        const auto defined = [](const tensor_spec& spec) { return spec.dims.is_fully_defined(); };
        n.spec_known = it.kind == runtime_node_kind::op && std::all_of(it.specs.begin(), it.specs.end(), defined);
        for (std::size_t j = 0; j < it.inputs.size() && n.spec_known; ++j) n.spec_known = defined(g.input_spec(it, j));
        // Edges from the prologue are met before the step starts: they are not counted.
        for (std::size_t j : it.inputs)
          if (!prologue[local[j]]) {
            successors[local[j]].push_back(static_cast<std::uint32_t>(k));
            ++pending;
          }
        for (std::size_t j : it.control)
          if (!prologue[local[j]]) {
            successors[local[j]].push_back(static_cast<std::uint32_t>(k));
            ++pending;
          }
      }
      prologue[k] = n.feed != npos || (it.kind == runtime_node_kind::constant && it.control.empty());
      e->pending_.push_back(pending);
      if (prologue[k]) e->prologue_.push_back(static_cast<std::uint32_t>(k));
      else if (pending == 0) e->roots_.push_back(static_cast<std::uint32_t>(k));
    }
    // The memory plan's inputs: each slot is written by its node and last read by the latest of
    // its readers, in node order (run_sequential's); fetched slots and those of asynchronous
    // kernels stay out of the arena.
    e->lifetimes_.assign(e->num_slots_, buffer_lifetime{});
    e->in_arena_.assign(e->num_slots_, false);
    for (std::size_t k = 0; k < e->nodes_.size(); ++k) {
      const node& n = e->nodes_[k];
      const auto& it = g[n.item];
      const bool planned = n.feed == npos && it.kind == runtime_node_kind::op && it.kernel->compute_async == nullptr;
      for (std::uint32_t o = 0; o < n.num_outputs; ++o) {
        e->lifetimes_[n.output_begin + o] = buffer_lifetime{0, k, k};
        e->in_arena_[n.output_begin + o] = planned;
      }
      for (std::uint32_t slot : n.inputs) e->lifetimes_[slot].last = std::max(e->lifetimes_[slot].last, k);
    }
    e->successor_begin_.push_back(0);
    for (const auto& list : successors) {
      e->successors_.insert(e->successors_.end(), list.begin(), list.end());
      e->successor_begin_.push_back(static_cast<std::uint32_t>(e->successors_.size()));
    }
    for (const endpoint& f : fetch_items) {
      e->fetches_.push_back(slot_of(f.node, f.port));
      ++e->slot_readers_[e->fetches_.back()];  // the caller is the last reader
      e->in_arena_[e->fetches_.back()] = false;
    }
    e->dag_ = detail::step_dag{e->successor_begin_, e->successors_, e->pending_, e->roots_,
                               std::span<const bool>(e->expensive_.get(), e->nodes_.size())};
    return std::shared_ptr<const runtime_executor>(std::move(e));
  }

  std::size_t num_nodes() const noexcept { return nodes_.size(); }
  const graph_type& graph() const noexcept { return *graph_; }
  // The spec each feed must match (dyn dimensions take any size).
  std::span<const tensor_spec> feed_specs() const noexcept { return feed_specs_; }
  // How many plans per fed shapes run_sequential has made, and how many it holds.
  std::size_t plans_made() const { return plans_->made(); }
  std::size_t plans_held() const { return plans_->size(); }

  // Runs the nodes in topological order on the calling thread (waiting for asynchronous kernels).
  status run_sequential(Device& device, const runtime_step& step, std::vector<tensor>& outputs) const {
    if (transfers_)
      return errors::failed_precondition("a graph with _send and _recv nodes runs through async_run (a device_set session)");
    run_state s(*this, step);
    if (auto st = bind_plan(device, s); !st.ok()) return st;
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      status st = s.check();
      if (st.ok()) start_node(device, s, static_cast<std::uint32_t>(k), st, nullptr);
      if (!st.ok()) return st;
    }
    if (!s.recorded.empty()) make_plan(s);
    return collect(s, outputs);
  }

  // TensorFlow's parallel algorithm on `pool` (the inter-op pool); the calling thread takes part.
  status run_parallel(Device& device, Eigen::ThreadPoolInterface& pool, const runtime_step& step,
                      std::vector<tensor>& outputs) const {
    if (transfers_)
      return errors::failed_precondition("a graph with _send and _recv nodes runs through async_run (a device_set session)");
    run_state s(*this, step);
    for (std::uint32_t k : prologue_) {
      status st;
      start_node(device, s, k, st, nullptr);  // a feed or a constant: never asynchronous
      if (!st.ok()) return st;
    }
    parallel_body body{*this, device, s};
    detail::parallel_step<parallel_body> p(dag_, body, pool, std::span(s.pending.get(), nodes_.size()));
    if (auto st = p.run(); !st.ok()) return st;
    return collect(s, outputs);
  }

 private:
  struct run_state;
  struct parallel_body;

 public:
  // One step started without waiting (TensorFlow's RunAsync): for the partitions of a step, which an
  // executor barrier joins. The step runs on step.pool (required) and the threads that complete
  // asynchronous work; finished(context, status) is called once, by the thread that ends it. The
  // object must stay alive until then; collect() gives the fetches afterwards.
  class async_run;

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t plan_capacity = 16;

  // What a set of fed shapes gives every node: the spec of each output slot and its place in the
  // step's arena (npos: a buffer of its own).
  struct shape_plan {
    std::vector<shape> fed;  // the key
    std::vector<tensor_spec> specs;
    std::vector<std::size_t> offsets;
    std::size_t arena_bytes = 0;
  };

  // The plan for the step's fed shapes, with its arena allocated. Without one: the step records the
  // specs that make it when those shapes were seen before; else they are remembered as seen.
  status bind_plan(Device& device, run_state& s) const {
    const std::span<const tensor> feeds = s.step.feeds;
    const auto same_shapes = [&](const std::vector<shape>& fed) {
      return std::equal(fed.begin(), fed.end(), feeds.begin(), feeds.end(),
                        [](const shape& a, const tensor& b) { return a == b.shape(); });
    };
    s.plan = plans_->find([&](const shape_plan& p) { return same_shapes(p.fed); });
    if (s.plan) return bind_arena(device, s);
    if (seen_->find(same_shapes)) {
      s.recorded.resize(num_slots_);
      s.forwarded_from.assign(num_slots_, npos);
    } else {
      seen_->add(std::make_shared<const std::vector<shape>>(fed_shapes(feeds)));
    }
    return ok_status();
  }

  static std::vector<shape> fed_shapes(std::span<const tensor> feeds) {
    std::vector<shape> fed;
    for (const tensor& f : feeds) fed.push_back(f.shape());
    return fed;
  }

  // One allocation for the plan's intermediates.
  status bind_arena(Device& device, run_state& s) const {
    if (s.plan->arena_bytes == 0) return ok_status();
    auto arena = device.allocate(dtype::u8, shape{static_cast<std::int64_t>(s.plan->arena_bytes)});
    if (!arena.ok()) return std::move(arena).take_status().with_context("allocating the arena of the step's memory plan");
    s.arena = std::move(*arena);
    return ok_status();
  }

  // After a step that recorded: the plan of its fed shapes, from the specs it recorded.
  void make_plan(run_state& s) const {
    auto p = std::make_shared<shape_plan>();
    p->fed = fed_shapes(s.step.feeds);
    p->specs = std::move(s.recorded);
    const std::vector<std::size_t>& from = s.forwarded_from;
    // Slots that a recorded forwarding joins share one buffer: outside the arena when one of them
    // must be (a fetched output, an asynchronous kernel's), else one place. from[slot] < slot.
    std::vector<unsigned char> own(num_slots_);
    for (std::size_t slot = 0; slot < num_slots_; ++slot) own[slot] = !in_arena_[slot];
    for (std::size_t slot = num_slots_; slot-- > 0;)
      if (from[slot] != npos && own[slot]) own[from[slot]] = 1;
    for (std::size_t slot = 0; slot < num_slots_; ++slot)
      if (from[slot] != npos && own[from[slot]]) own[slot] = 1;
    std::vector<buffer_lifetime> buffers(lifetimes_);  // bytes: 0 but for the slot that owns a place
    std::vector<std::size_t> place(num_slots_, npos);   // that slot, by slot
    for (std::size_t slot = 0; slot < num_slots_; ++slot) {
      if (own[slot]) continue;
      if (from[slot] != npos) {
        place[slot] = place[from[slot]];
        buffers[place[slot]].last = std::max(buffers[place[slot]].last, lifetimes_[slot].last);
      } else {
        place[slot] = slot;
        buffers[slot].bytes = static_cast<std::size_t>(p->specs[slot].dims.num_elements()) * size_of(p->specs[slot].type);
      }
    }
    const run_time_arena_layout layout = plan_arena(buffers, default_alignment);
    p->offsets.assign(num_slots_, npos);
    for (std::size_t slot = 0; slot < num_slots_; ++slot)
      if (place[slot] != npos && buffers[place[slot]].bytes != 0) p->offsets[slot] = layout.offset[place[slot]];
    p->arena_bytes = layout.arena_bytes;
    plans_->add(std::move(p));
  }

  struct node {
    std::size_t item = 0;
    std::size_t feed = npos;               // index into the step's feeds, npos when computed
    std::vector<std::uint32_t> inputs;     // data inputs, by output slot
    std::uint32_t output_begin = 0;        // its outputs are slots output_begin .. + num_outputs
    std::uint32_t num_outputs = 1;
    bool spec_known = false;               // every input's spec is fully defined, so the output's
                                           // is the graph's: no inference per run
    std::uint32_t key_slot = 0;            // _send and _recv: their key's slot in the rendezvous
    std::uint32_t recv_index = 0;          // _recv: its record in a step's run_state::recvs
    tensor value;                          // a constant copied to the device's memory (else the graph's)
  };

  // A _recv in flight: what its completion needs, kept in the step's state so that the callback the
  // rendezvous holds is one pointer (std::function keeps that without allocating).
  struct recv_record {
    const runtime_executor* e = nullptr;
    Device* device = nullptr;
    run_state* s = nullptr;
    std::uint32_t k = 0;
    std::chrono::steady_clock::time_point t0;
    detail::step_completion done{};

    // The tensor (or the abort's status) has come. Nested receives completing on one thread go to
    // the step's queue every max_inline_receives levels, so the stack stays bounded.
    void arrived(status rst, tensor t) {
      if (s->parallel != nullptr && detail::inline_receives >= detail::max_inline_receives) {
        s->parallel->schedule([this, rst = std::move(rst), t = std::move(t)]() mutable { deliver(std::move(rst), std::move(t)); });
        return;
      }
      ++detail::inline_receives;
      deliver(std::move(rst), std::move(t));
      --detail::inline_receives;
    }
    void deliver(status rst, tensor t) {
      if (!rst.ok()) return end(std::move(rst));
      tensor& y = s->outputs[e->nodes_[k].output_begin];
      if (!t.valid()) {  // a control signal: an empty tensor
        y = *tensor::borrow(nullptr, dtype::f32, shape{0});
        return end(ok_status());
      }
      if (reads_in_place(t, *device)) {  // host memory, or already there: the same buffer
        y = std::move(t);
        return end(ok_status());
      }
      to_device_async(t, *device, [this, &y](status cst, tensor on_device) {
        if (cst.ok()) y = std::move(on_device);
        end(std::move(cst));
      });
    }
    void end(status st) {
      e->node_finish(*device, *s, k, t0)(st);
      done(std::move(st));
    }
  };

  struct run_state {
    run_state(const runtime_executor& e, const runtime_step& st)
        : step(st), outputs(e.num_slots_), pending(new std::atomic<std::uint32_t>[e.nodes_.size()]),
          readers(new std::atomic<std::uint32_t>[e.num_slots_]), start(std::chrono::steady_clock::now()) {
      for (std::size_t k = 0; k < e.num_slots_; ++k) readers[k].store(e.slot_readers_[k], std::memory_order_relaxed);
      if (e.num_recvs_ != 0) recvs = std::make_unique<recv_record[]>(e.num_recvs_);
      if (st.metadata) stats.resize(e.nodes_.size());
      ran.assign(st.metadata ? e.nodes_.size() : 0, 0);
    }
    status check() const {
      if ((step.cancel && step.cancel->is_cancelled()) || (step.session_cancel && step.session_cancel->is_cancelled()))
        return errors::cancelled("the step was cancelled");
      if (step.deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > step.deadline)
        return errors::deadline_exceeded("the step ran past its timeout");
      return ok_status();
    }

    const runtime_step& step;
    std::vector<tensor> outputs;                            // by output slot
    std::unique_ptr<std::atomic<std::uint32_t>[]> pending;  // by node
    std::unique_ptr<std::atomic<std::uint32_t>[]> readers;  // by output slot
    std::vector<node_stats> stats;
    std::vector<unsigned char> ran;  // not vector<bool>: nodes on several threads write their own entry
    std::chrono::steady_clock::time_point start;
    detail::parallel_step<parallel_body>* parallel = nullptr;  // the step, where a deep receive continues
    std::unique_ptr<recv_record[]> recvs;                      // by _recv node (node::recv_index)
    std::shared_ptr<const shape_plan> plan;  // run_sequential's, for the fed shapes
    tensor arena;                            // the plan's intermediates
    std::vector<tensor_spec> recorded;       // by slot, where the step makes the plan
    std::vector<std::size_t> forwarded_from;  // by slot, there: the input slot it wrote over, or npos
  };

  struct parallel_body {
    const runtime_executor& e;
    Device& device;
    run_state& s;
    bool start(std::uint32_t k, status& st, detail::step_completion done) const {
      st = s.check();
      return !st.ok() || e.start_node(device, s, k, st, done);
    }
  };

  // Runs node k. Returns true when it has finished, with its status in st; false when its kernel
  // is asynchronous and `done` is a completion, which the kernel's callback calls. With
  // done == nullptr an asynchronous kernel is waited for.
  template <class Done>
  bool start_node(Device& device, run_state& s, std::uint32_t k, status& st, Done done) const {
    const node& n = nodes_[k];
    const auto& it = (*graph_)[n.item];
    // What a crash report names while this node runs (a thread_local pointer and a record on this
    // stack); the strings are the graph's, which outlives the step.
    const crash_context_scope crash_scope(s.step.session, it.name.c_str(), it.def.op.c_str());
    ensure_crash_signal_stack();  // a pool thread's first node after install_crash_handler()
    const auto t0 = s.step.metadata ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    tensor& y = s.outputs[n.output_begin];
    if (n.feed != npos) {
      y = s.step.feeds[n.feed];
    } else if (it.kind == runtime_node_kind::constant) {
      y = n.value.valid() && n.value.data() ? n.value : it.value;
    } else if (it.kind == runtime_node_kind::send) {
      rendezvous* rv = s.step.transfers;
      if (rv == nullptr) {
        st = errors::failed_precondition("node '", it.name, "' (_send): the step has no rendezvous");
        return true;
      }
      tensor value = n.inputs.empty() ? tensor() : s.outputs[n.inputs[0]];
      if (!value.valid() || value.space().host_accessible()) {
        st = rv->send(n.key_slot, std::move(value));
        if (!st.ok()) {
          st = st.with_context(node_context(it));
          return true;
        }
      } else {  // device memory: through the host
        const std::uint32_t slot = n.key_slot;
        return run_async(device, s, k, st, done, t0, [&device, rv, slot, value](kernel_done d) {
          to_host_async(value, device, [rv, slot, d = std::move(d)](status cst, tensor host) {
            d(cst.ok() ? rv->send(slot, std::move(host)) : cst);
          });
        });
      }
    } else if (it.kind == runtime_node_kind::recv) {
      rendezvous* rv = s.step.transfers;
      if (rv == nullptr) {
        st = errors::failed_precondition("node '", it.name, "' (_recv): the step has no rendezvous");
        return true;
      }
      const std::uint32_t slot = n.key_slot;
      if constexpr (std::is_same_v<Done, detail::step_completion>) {
        recv_record& r = s.recvs[n.recv_index];
        r = recv_record{this, &device, &s, k, t0, done};
        rv->recv_async(slot, [&r](status rst, tensor t) { r.arrived(std::move(rst), std::move(t)); });
        return false;
      } else {
        // Receives run only in a partition's asynchronous step: the sequential and parallel runs
        // refuse graphs with transfers, and a step's prologue holds feeds and constants only.
        st = errors::internal("node '", it.name, "' (_recv) started outside an asynchronous step");
        return true;
      }
    } else {
      constexpr std::size_t small = 4;
      std::array<tensor, small> small_in;
      std::vector<tensor> large_in;
      const bool async = it.kernel->compute_async != nullptr;
      if (async || n.inputs.size() > small) large_in.resize(n.inputs.size());
      std::span<tensor> in = large_in.empty() && !async ? std::span<tensor>(small_in.data(), n.inputs.size())
                                                        : std::span<tensor>(large_in);
      for (std::size_t i = 0; i < n.inputs.size(); ++i) in[i] = s.outputs[n.inputs[i]].view();
      std::array<tensor_spec, small> small_specs;
      std::vector<tensor_spec> large_specs;
      std::span<tensor_spec> specs;
      if (!n.spec_known && !s.plan) {
        specs = n.inputs.size() <= small ? std::span<tensor_spec>(small_specs.data(), n.inputs.size())
                                         : std::span<tensor_spec>(large_specs = std::vector<tensor_spec>(n.inputs.size()));
        for (std::size_t i = 0; i < n.inputs.size(); ++i) specs[i] = in[i].spec();
      }
      const std::span<tensor> ys(&y, n.num_outputs);
      const bool prepared = prepare_outputs(
          ys.size(), st,
          [&](std::size_t o, tensor_spec& scratch, status& error) -> const tensor_spec* {
            if (n.spec_known) return &it.spec(o);
            if (s.plan) return &s.plan->specs[n.output_begin + o];
            return inferred_spec(it.op.infer(specs, o), scratch, error);
          },
          [&](std::size_t o, const tensor_spec& spec, status& error) {
            // A place in the step's arena, borrowed: the arena outlives every reader of the slot.
            if (const std::size_t offset = s.plan ? s.plan->offsets[n.output_begin + o] : npos; offset != npos) {
              auto part = s.arena.view().part(offset, spec.type, spec.dims);
              if (!part.ok()) {
                error = std::move(part).take_status();
                return false;
              }
              ys[o] = std::move(*part);
              return true;
            }
            // Forwarding: the last reader of an unshared input of the output's spec writes over it.
            if (it.op.elementwise()) {
              if (const std::size_t from = forward_input(s, n, spec, ys[o]); from != npos) {
                if (!s.recorded.empty()) s.forwarded_from[n.output_begin + o] = from;  // for the plan
                return true;
              }
            }
            auto out = device.allocate(spec.type, spec.dims);
            if (!out.ok()) {
              error = std::move(out).take_status();
              return false;
            }
            ys[o] = std::move(*out);
            return true;
          });
      if (!prepared) {
        st = st.with_context(node_context(it));
        return true;
      }
      const table_kernel<Device> kernel{it.kernel, it.op.get()};
      auto finish = node_finish(device, s, k, t0);
      if (async || n.inputs.size() > small) return launch(device, kernel, large_in, ys, st, finish, done);
      std::span<const tensor> few(small_in.data(), n.inputs.size());  // a synchronous kernel: read in place
      return launch(device, kernel, few, ys, st, finish, done);
    }
    finish_node(device, s, k, t0);
    return true;
  }

  // What ends node k: an error names the node; else finish_node.
  auto node_finish(Device& device, run_state& s, std::uint32_t k, std::chrono::steady_clock::time_point t0) const {
    return [this, &device, &s, k, t0](status& result) __attribute__((always_inline)) {
      if (!result.ok()) result = result.with_context(node_context((*graph_)[nodes_[k].item]));
      else finish_node(device, s, k, t0);
    };
  }

  // Makes y share the buffer of an input of node n that it is the last reader of, when nothing
  // else holds that buffer and its spec is y's (the input is released when n finishes).
  // Returns the input's slot, or npos when none qualifies.
  static std::size_t forward_input(run_state& s, const node& n, const tensor_spec& spec, tensor& y) {
    for (std::uint32_t slot : n.inputs) {
      tensor& src = s.outputs[slot];
      if (src.owns_buffer() && src.use_count() == 1 && src.spec() == spec &&
          s.readers[slot].load(std::memory_order_acquire) == 1 && std::count(n.inputs.begin(), n.inputs.end(), slot) == 1) {
        y = src;
        return slot;
      }
    }
    return npos;
  }

  // Node k's work, started by start(kernel_done) and finished when that calls back: waited for when
  // done is nullptr (true, with the status in st), else finished through done (false).
  template <class Done, class Start>
  bool run_async(Device& device, run_state& s, std::uint32_t k, status& st, Done done,
                 std::chrono::steady_clock::time_point t0, Start&& start) const {
    auto finish = node_finish(device, s, k, t0);
    if constexpr (std::is_same_v<Done, std::nullptr_t>) {
      st = wait_for_done(std::forward<Start>(start));
      finish(st);
      return true;
    } else {
      start(kernel_done([finish, done](status result) {
        finish(result);
        done(std::move(result));
      }));
      return false;
    }
  }

  // After node k's kernel: releases inputs it was the last reader of, records its stats.
  void finish_node(Device& device, run_state& s, std::uint32_t k, std::chrono::steady_clock::time_point t0) const {
    const node& n = nodes_[k];
    if (!s.recorded.empty())
      for (std::uint32_t o = 0; o < n.num_outputs; ++o) s.recorded[n.output_begin + o] = s.outputs[n.output_begin + o].spec();
    for (std::uint32_t j : n.inputs)
      if (s.readers[j].fetch_sub(1, std::memory_order_acq_rel) == 1) s.outputs[j] = tensor();
    if (!s.step.metadata) return;
    const auto& it = (*graph_)[n.item];
    const tensor& y = s.outputs[n.output_begin];  // the first output's
    const auto t1 = std::chrono::steady_clock::now();
    node_stats& st = s.stats[k];
    st.node = it.name;
    st.op = it.def.op;
    st.device = std::string(device.name());
    st.thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
    st.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t0 - s.start).count();
    st.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - s.start).count();
    st.output_type = y.dtype();
    st.output_shape = y.shape();
    st.output_bytes = y.bytes();
    s.ran[k] = 1;
  }

  static std::string node_context(const typename graph_type::item& it) {
    return detail::cat("node '", it.name, "' (", it.def.op, ")").str();
  }

  status collect(run_state& s, std::vector<tensor>& outputs) const {
    outputs.clear();
    for (std::size_t k : fetches_) outputs.push_back(s.outputs[k]);
    if (s.step.metadata)
      for (std::size_t k = 0; k < nodes_.size(); ++k)
        if (s.ran[k]) s.step.metadata->steps.push_back(std::move(s.stats[k]));
    return ok_status();
  }

  std::shared_ptr<const graph_type> graph_;
  std::vector<node> nodes_;
  std::vector<std::size_t> fetches_;      // by output slot
  std::vector<tensor_spec> feed_specs_;
  std::uint32_t num_slots_ = 0;           // outputs of every node
  std::uint32_t num_recvs_ = 0;           // _recv nodes
  std::vector<std::uint32_t> slot_readers_;  // data edges out of each output slot, plus one per fetch
  // The step DAG the parallel executor schedules (edges by local index).
  std::vector<std::uint32_t> successor_begin_;
  std::vector<std::uint32_t> successors_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::uint32_t> roots_;     // without the prologue
  std::vector<std::uint32_t> prologue_;
  std::unique_ptr<bool[]> expensive_;
  detail::step_dag dag_;
  bool transfers_ = false;  // has _send or _recv nodes
  // run_sequential's memory plans: the slots' lifetimes in node order, which slots may be placed,
  // the plans made per fed shapes, and the fed shapes seen once.
  std::vector<buffer_lifetime> lifetimes_;
  std::vector<bool> in_arena_;
  std::unique_ptr<detail::plan_cache<shape_plan>> plans_ = std::make_unique<detail::plan_cache<shape_plan>>(plan_capacity);
  std::unique_ptr<detail::plan_cache<std::vector<shape>>> seen_ =
      std::make_unique<detail::plan_cache<std::vector<shape>>>(plan_capacity);
};

template <class Device, class Registry>
class runtime_executor<Device, Registry>::async_run {
 public:
  async_run(const runtime_executor& e, Device& device, const runtime_step& step)
      : e_(e), state_(e, step), body_{e, device, state_},
        step_(e.dag_, body_, *step.pool, std::span(state_.pending.get(), e.nodes_.size())), device_(device) {
    state_.parallel = &step_;
  }
  async_run(const async_run&) = delete;
  async_run& operator=(const async_run&) = delete;

  using finished_fn = void (*)(void* context, status st);
  // Runs the prologue (feeds, constants) on this thread, then starts the step.
  void start(finished_fn finished, void* context) {
    for (std::uint32_t k : e_.prologue_) {
      status st;
      e_.start_node(device_, state_, k, st, nullptr);  // a feed or a constant: never asynchronous
      if (!st.ok()) return finished(context, std::move(st));
    }
    step_.start(finished, context);
  }
  // The fetched tensors, in the executor's fetch order, and the step stats; after finished.
  status collect(std::vector<tensor>& outputs) { return e_.collect(state_, outputs); }

 private:
  const runtime_executor& e_;
  run_state state_;
  parallel_body body_;
  detail::parallel_step<parallel_body> step_;
  Device& device_;
};

}  // namespace typeflow
