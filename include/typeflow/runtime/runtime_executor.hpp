// SPDX-License-Identifier: Apache-2.0
// runtime_executor<Device, Registry>: runs a runtime graph for one signature (feeds, fetches,
// targets), as TensorFlow's ExecutorImpl: made once per signature, then run many times, from
// many threads at once (each run has its own state).
//  - Pruning: only what the fetches and targets need; a fed node's inputs are not needed.
//  - Node items: inputs and successors by index, initial pending counts (data and control
//    edges), computed once here.
//  - run_sequential: the nodes in topological order on the calling thread.
//  - run_parallel: TensorFlow's ExecutorState algorithm: atomic pending counts, the root nodes are
//    the first ready set; a thread that finishes a node runs one ready cheap node inline and
//    hands every expensive one (and every other cheap one) to the inter-op pool (Eigen's
//    ThreadPool, as TensorFlow's); the first error ends the step and is its status; the caller
//    waits on a condition variable, pool threads sleep when there is no work.
//  - Memory: an intermediate is released when its last consumer has run; an elementwise node
//    writes over an input it is the last reader of when nothing else holds that buffer and the
//    dtype and shape match (TensorFlow's forwarding).
// A node is expensive when its kernel type says so (`expensive`, per kernel; see README).
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
#include <typeflow/graph/runtime_graph.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/runtime/run_options.hpp>

namespace typeflow {

// What one run needs besides the executor: the fed tensors (by the executor's feed order), the
// options' deadline and cancellations, and where step stats go.
struct runtime_step {
  std::span<const tensor> feeds;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const cancellation* cancel = nullptr;
  const cancellation* session_cancel = nullptr;
  run_metadata* metadata = nullptr;
};

template <class Device, class Registry = default_registry>
class runtime_executor {
 public:
  using graph_type = runtime_graph<Device, Registry>;

  // feeds, fetches and targets name nodes ("x" or "x:0" for feeds and fetches, "x" for targets).
  static result<std::shared_ptr<const runtime_executor>> make(std::shared_ptr<const graph_type> graph,
                                                              std::span<const std::string> feeds,
                                                              std::span<const std::string> fetches,
                                                              std::span<const std::string> targets) {
    auto e = std::shared_ptr<runtime_executor>(new runtime_executor());
    e->graph_ = std::move(graph);
    const graph_type& g = *e->graph_;
    auto resolve = [&](const std::string& name, bool port_allowed, const char* what) -> result<std::size_t> {
      std::string_view n = name;
      if (port_allowed && n.size() > 2 && n.ends_with(":0")) n.remove_suffix(2);
      auto i = g.find(n);
      if (!i) {
        if (auto colon = n.rfind(':'); port_allowed && colon != std::string_view::npos && g.find(n.substr(0, colon)))
          return errors::invalid_argument(what, " '", name, "': node '", n.substr(0, colon), "' has one output (port 0)");
        return errors::invalid_argument(what, " '", name, "' names no node in the graph");
      }
      return *i;
    };
    std::vector<std::size_t> fed_item(g.size(), npos);
    for (std::size_t k = 0; k < feeds.size(); ++k) {
      auto i = resolve(feeds[k], true, "feed");
      if (!i.ok()) return i.status();
      if (fed_item[*i] != npos) return errors::invalid_argument("feed '", feeds[k], "' is given twice");
      fed_item[*i] = k;
      e->feed_specs_.push_back(g[*i].spec);
    }
    std::vector<std::size_t> fetch_items, target_items;
    for (const std::string& f : fetches) {
      auto i = resolve(f, true, "fetch");
      if (!i.ok()) return i.status();
      fetch_items.push_back(*i);
    }
    for (const std::string& t : targets) {
      auto i = resolve(t, false, "target");
      if (!i.ok()) return i.status();
      target_items.push_back(*i);
    }
    if (fetch_items.empty() && target_items.empty())
      return errors::invalid_argument("a run needs at least one fetch or target");

    // Pruning, backwards from the fetches and targets; a fed node needs nothing.
    std::vector<bool> needed(g.size(), false);
    std::vector<std::size_t> stack(fetch_items);
    stack.insert(stack.end(), target_items.begin(), target_items.end());
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      stack.pop_back();
      if (needed[i]) continue;
      needed[i] = true;
      if (fed_item[i] != npos) continue;
      for (std::size_t j : g[i].inputs) stack.push_back(j);
      for (std::size_t j : g[i].control) stack.push_back(j);
    }
    // Local numbering in topological order.
    std::vector<std::size_t> local(g.size(), npos);
    for (std::size_t i : g.order())
      if (needed[i]) {
        local[i] = e->nodes_.size();
        node n;
        n.item = i;
        n.feed = fed_item[i];
        e->nodes_.push_back(std::move(n));
      }
    for (node& n : e->nodes_) {
      const auto& it = g[n.item];
      if (n.feed == npos && it.kind == runtime_node_kind::placeholder)
        return errors::invalid_argument("placeholder '", it.name, "' is needed by the fetches but not fed");
      n.expensive = n.feed == npos && it.kind == runtime_node_kind::op && it.kernel->expensive;
      if (n.feed != npos) continue;  // fed: ready at the start, reads nothing
      for (std::size_t j : it.inputs) n.inputs.push_back(local[j]);
      for (std::size_t j : it.inputs) ++e->nodes_[local[j]].data_consumers;
      n.pending = static_cast<std::uint32_t>(it.inputs.size() + it.control.size());
      for (std::size_t j : it.inputs) e->nodes_[local[j]].successors.push_back(static_cast<std::uint32_t>(&n - e->nodes_.data()));
      for (std::size_t j : it.control) e->nodes_[local[j]].successors.push_back(static_cast<std::uint32_t>(&n - e->nodes_.data()));
    }
    for (std::size_t k = 0; k < e->nodes_.size(); ++k)
      if (e->nodes_[k].pending == 0) e->roots_.push_back(static_cast<std::uint32_t>(k));
    for (std::size_t i : fetch_items) {
      e->fetches_.push_back(local[i]);
      ++e->nodes_[local[i]].data_consumers;  // the caller is the last reader
    }
    return std::shared_ptr<const runtime_executor>(std::move(e));
  }

  std::size_t num_nodes() const noexcept { return nodes_.size(); }
  const graph_type& graph() const noexcept { return *graph_; }
  // The spec each feed must match (dyn dimensions take any size).
  std::span<const tensor_spec> feed_specs() const noexcept { return feed_specs_; }

  // Runs the nodes in topological order on the calling thread.
  status run_sequential(Device& device, const runtime_step& step, std::vector<tensor>& outputs) const {
    run_state s(*this, step);
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      if (auto st = s.check(); !st.ok()) return st;
      if (auto st = run_node(device, s, k); !st.ok()) return st;
    }
    return collect(s, outputs);
  }

  // TensorFlow's parallel algorithm on `pool` (the inter-op pool); the calling thread takes part.
  status run_parallel(Device& device, Eigen::ThreadPoolInterface& pool, const runtime_step& step,
                      std::vector<tensor>& outputs) const {
    run_state s(*this, step);
    s.outstanding.store(roots_.size(), std::memory_order_relaxed);  // never 0: a DAG has a root
    std::vector<std::uint32_t> ready(roots_.begin(), roots_.end());
    // As TensorFlow's ScheduleReady: expensive nodes go to the pool; cheap ones run here.
    schedule(device, pool, s, ready);
    {
      std::unique_lock lock(s.mutex);
      s.done_cv.wait(lock, [&] { return s.done; });
    }
    if (!s.first_error.ok()) return s.first_error;
    return collect(s, outputs);
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  struct node {
    std::size_t item = 0;
    std::size_t feed = npos;               // index into the step's feeds, npos when computed
    std::vector<std::uint32_t> inputs;     // data inputs, local indices
    std::vector<std::uint32_t> successors; // one entry per edge (data and control)
    std::uint32_t pending = 0;             // initial pending count
    std::uint32_t data_consumers = 0;      // data edges out, plus one when fetched
    bool expensive = false;
  };

  struct run_state {
    run_state(const runtime_executor& e, const runtime_step& st)
        : step(st), outputs(e.nodes_.size()), pending(new std::atomic<std::uint32_t>[e.nodes_.size()]),
          readers(new std::atomic<std::uint32_t>[e.nodes_.size()]), start(std::chrono::steady_clock::now()) {
      for (std::size_t k = 0; k < e.nodes_.size(); ++k) {
        pending[k].store(e.nodes_[k].pending, std::memory_order_relaxed);
        readers[k].store(e.nodes_[k].data_consumers, std::memory_order_relaxed);
      }
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
    void fail(const status& st) {
      std::lock_guard lock(mutex);
      if (first_error.ok()) first_error = st;
      failed.store(true, std::memory_order_release);
    }
    void finish_one() {
      if (outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex);
        done = true;
        done_cv.notify_all();
      }
    }

    const runtime_step& step;
    std::vector<tensor> outputs;
    std::unique_ptr<std::atomic<std::uint32_t>[]> pending;
    std::unique_ptr<std::atomic<std::uint32_t>[]> readers;
    std::vector<node_stats> stats;
    std::vector<unsigned char> ran;  // not vector<bool>: nodes on several threads write their own entry
    std::chrono::steady_clock::time_point start;
    std::atomic<std::size_t> outstanding{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    status first_error;
  };

  status run_node(Device& device, run_state& s, std::size_t k) const {
    const node& n = nodes_[k];
    const auto& it = (*graph_)[n.item];
    const auto t0 = std::chrono::steady_clock::now();
    tensor& y = s.outputs[k];
    if (n.feed != npos) {
      y = s.step.feeds[n.feed];
    } else if (it.kind == runtime_node_kind::constant) {
      y = it.value;
    } else {
      std::array<tensor, 4> small;
      std::vector<tensor> large;
      std::span<tensor> in = n.inputs.size() <= small.size() ? std::span<tensor>(small.data(), n.inputs.size())
                                                             : std::span<tensor>(large = std::vector<tensor>(n.inputs.size()));
      std::array<tensor_spec, 4> small_specs;
      std::vector<tensor_spec> large_specs;
      std::span<tensor_spec> specs = n.inputs.size() <= small_specs.size()
                                         ? std::span<tensor_spec>(small_specs.data(), n.inputs.size())
                                         : std::span<tensor_spec>(large_specs = std::vector<tensor_spec>(n.inputs.size()));
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        in[i] = s.outputs[n.inputs[i]].view();
        specs[i] = in[i].spec();
      }
      auto spec = it.op.infer(specs);
      if (!spec.ok()) return spec.status().with_context(node_context(it));
      // Forwarding: the last reader of an unshared input of the output's spec writes over it.
      bool forwarded = false;
      if (it.op.elementwise())
        for (std::size_t i = 0; i < n.inputs.size() && !forwarded; ++i) {
          tensor& src = s.outputs[n.inputs[i]];
          if (src.owns_buffer() && src.use_count() == 1 && src.spec() == *spec &&
              s.readers[n.inputs[i]].load(std::memory_order_acquire) == 1 &&
              std::count(n.inputs.begin(), n.inputs.end(), n.inputs[i]) == 1) {
            y = src;  // shares the buffer; src is released below as this was its last reader
            forwarded = true;
          }
        }
      if (!forwarded) {
        auto out = device.allocate(spec->type, spec->dims);
        if (!out.ok()) return out.status().with_context(node_context(it));
        y = std::move(*out);
      }
      kernel_context<Device> ctx{device, std::span<const tensor>(in.data(), in.size()), std::span<tensor>(&y, 1)};
      if (auto st = it.kernel->compute(it.op.get(), ctx); !st.ok()) return st.with_context(node_context(it));
      for (std::uint32_t j : n.inputs)
        if (s.readers[j].fetch_sub(1, std::memory_order_acq_rel) == 1) s.outputs[j] = tensor();
    }
    if (s.step.metadata) {
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
    return ok_status();
  }

  static std::string node_context(const typename graph_type::item& it) {
    return detail::cat("node '", it.name, "' (", it.def.op, ")").str();
  }

  // Runs ready nodes: each expensive one, and all cheap ones but one, go to the pool; the last
  // cheap one runs on this thread, and so on with what it makes ready.
  void schedule(Device& device, Eigen::ThreadPoolInterface& pool, run_state& s, std::vector<std::uint32_t>& ready) const {
    while (!ready.empty()) {
      std::uint32_t inline_node = static_cast<std::uint32_t>(-1);
      for (std::uint32_t k : ready) {
        if (!nodes_[k].expensive && inline_node == static_cast<std::uint32_t>(-1)) {
          inline_node = k;
          continue;
        }
        pool.Schedule([this, &device, &pool, &s, k] {
          std::vector<std::uint32_t> next;
          process(device, s, k, next);
          schedule(device, pool, s, next);
        });
      }
      ready.clear();
      if (inline_node == static_cast<std::uint32_t>(-1)) return;
      process(device, s, inline_node, ready);
    }
  }

  // Runs node k (unless the step has failed), then counts down its successors, adding those that
  // become ready to `ready` and to the outstanding count.
  void process(Device& device, run_state& s, std::uint32_t k, std::vector<std::uint32_t>& ready) const {
    if (!s.failed.load(std::memory_order_acquire)) {
      status st = s.check();
      if (st.ok()) st = run_node(device, s, k);
      if (!st.ok()) s.fail(st);
    }
    std::size_t made_ready = 0;
    for (std::uint32_t c : nodes_[k].successors)
      if (s.pending[c].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready.push_back(c);
        ++made_ready;
      }
    if (made_ready > 0) s.outstanding.fetch_add(made_ready, std::memory_order_relaxed);
    s.finish_one();
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
  std::vector<std::uint32_t> roots_;
  std::vector<std::size_t> fetches_;
  std::vector<tensor_spec> feed_specs_;
};

}  // namespace typeflow
