// SPDX-License-Identifier: Apache-2.0
// runtime_session<devices<Ds...>, Registry>: a graph_def run across the devices of a device_set,
// with TensorFlow's DirectSession semantics (placement, partitions, rendezvous, executor barrier).
//   tf::cpu c0; tf::thread_pool c1(2);
//   tf::device_set<tf::cpu, tf::thread_pool> devices;
//   devices.add(c0); devices.add(c1);
//   auto s = tf::runtime_session<tf::devices<tf::cpu, tf::thread_pool>>::make(def, devices, {.inter_op_threads = 2});
//   auto out = (*s)->run({{"x", x}}, {"y"});
// Per signature (feeds, fetches, targets), made once and cached: prune to what the fetches and
// targets need; place (runtime/placer.hpp); partition (runtime/partition.hpp); make one
// runtime_executor per partition, instantiated for its device's policy type (so a device type runs
// only the kernels its dispatch table has). Per run: fed host tensors are copied to the device of
// the node they feed; one rendezvous; every partition starts asynchronously (async_run) and an
// executor barrier joins them; the step's status is the first error, and an error in one partition
// aborts the rendezvous, so every receive pending elsewhere ends with it. Cancellation, timeouts and
// close() reach pending receives too: the waiting caller aborts the rendezvous (it looks every
// millisecond). Fetches come back in host memory unless run_options::fetch_on_device.
// inter_op_threads > 0: an Eigen ThreadPool of that many threads runs every partition's expensive
// nodes; 0: everything runs on the calling thread, the same algorithm with its queue drained there.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/copy.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/device_set.hpp>
#include <typeflow/device/eigen_thread_pool.hpp>
#include <typeflow/graph/graph_def.hpp>
#include <typeflow/graph/runtime_graph.hpp>
#include <typeflow/runtime/partition.hpp>
#include <typeflow/runtime/placer.hpp>
#include <typeflow/runtime/rendezvous.hpp>
#include <typeflow/runtime/run_options.hpp>
#include <typeflow/runtime/runtime_executor.hpp>

namespace typeflow {

template <class Device, class Registry, bool Replay>
class runtime_session;

struct session_options {
  int inter_op_threads = 0;     // 0: the calling thread runs every step
  bool soft_placement = false;  // TensorFlow's allow_soft_placement
};

namespace detail {

// The inter-op "pool" of a session without threads: work is queued and the calling thread runs it
// while it waits for the step.
class caller_pool final : public Eigen::ThreadPoolInterface {
 public:
  void Schedule(std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(fn));
    cv_.notify_all();
  }
  int NumThreads() const override { return 1; }
  int CurrentThreadId() const override { return -1; }
  // Runs queued work until finished() holds; wakes every millisecond to call poll(). finished()
  // is called without this pool's lock held: it takes the barrier's, and the barrier calls wake()
  // under its own, so holding both here would take them in the opposite order (a deadlock that
  // ThreadSanitizer reports).
  template <class Finished, class Poll>
  void run_until(Finished&& finished, Poll&& poll) {
    while (!finished()) {
      std::unique_lock lock(mutex_);
      if (queue_.empty()) {
        if (!woken_) cv_.wait_for(lock, std::chrono::milliseconds(1));
        woken_ = false;
        lock.unlock();
        poll();
        continue;
      }
      auto fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
    }
  }
  // Makes run_until check finished() now (a wake before it waits is not lost).
  void wake() {
    std::lock_guard lock(mutex_);
    woken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool woken_ = false;
};

// TensorFlow's ExecutorBarrier: counts the partitions of a step down; the first error is the step's
// and aborts its rendezvous.
class executor_barrier {
 public:
  executor_barrier(std::size_t partitions, rendezvous& transfers, caller_pool* inline_pool)
      : remaining_(partitions), transfers_(transfers), inline_pool_(inline_pool) {}

  static void finished(void* self, status st) { static_cast<executor_barrier*>(self)->partition_done(std::move(st)); }

  void partition_done(status st) {
    if (!st.ok()) {
      {
        std::lock_guard lock(mutex_);
        if (first_error_.ok()) first_error_ = st;
      }
      transfers_.abort(st);
    }
    std::lock_guard lock(mutex_);
    if (--remaining_ == 0) {
      cv_.notify_all();
      if (inline_pool_) inline_pool_->wake();
    }
  }
  bool done() const {
    std::lock_guard lock(mutex_);
    return remaining_ == 0;
  }
  // Waits for the last partition, calling poll() every millisecond.
  template <class Poll>
  void wait(Poll&& poll) {
    std::unique_lock lock(mutex_);
    while (remaining_ != 0) {
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      lock.unlock();
      poll();
      lock.lock();
    }
  }
  status first_error() const {
    std::lock_guard lock(mutex_);
    return first_error_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::size_t remaining_;
  status first_error_;
  rendezvous& transfers_;
  caller_pool* inline_pool_;
};

}  // namespace detail

template <device_policy... Ds, class Registry>
class runtime_session<devices<Ds...>, Registry, false> {
 public:
  using device_set_type = device_set<Ds...>;

  // Checks the graph (names, edges, ops, attributes, inference) for the device types Ds; placement
  // and kernels are checked per signature, on the first run that needs them.
  static result<std::unique_ptr<runtime_session>> make(graph_def def, device_set_type& devices, session_options options = {}) {
    if (devices.size() == 0) return errors::invalid_argument("the session's device_set has no devices");
    if (options.inter_op_threads < 0)
      return errors::invalid_argument("session_options::inter_op_threads is ", options.inter_op_threads, "; it must be >= 0");
    return detail::status_boundary("runtime_session::make", [&]() -> result<std::unique_ptr<runtime_session>> {
      static constexpr const device_kernels* kinds[] = {&device_kernels_of<Registry, Ds>...};
      auto g = inferred_graph::make(std::move(def), kinds);
      if (!g.ok()) return g.status();
      std::unique_ptr<Eigen::ThreadPool> pool;
      if (options.inter_op_threads > 0) {
        auto made = make_eigen_thread_pool(options.inter_op_threads, "session_options::inter_op_threads");
        if (!made.ok()) return made.status();
        pool = std::move(*made);
      }
      return std::unique_ptr<runtime_session>(new runtime_session(std::move(*g), devices, options, std::move(pool)));
    });
  }
  ~runtime_session() { close(); }
  runtime_session(const runtime_session&) = delete;
  runtime_session& operator=(const runtime_session&) = delete;

  // The fetched tensors, in the order of `fetches`.
  result<std::vector<tensor>> run(const std::vector<std::pair<std::string, tensor>>& feeds,
                                  const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {},
                                  const run_options& options = {}, run_metadata* metadata = nullptr) {
    return detail::status_boundary("runtime_session::run", [&] { return run_checked(feeds, fetches, targets, options, metadata); });
  }

 private:
  result<std::vector<tensor>> run_checked(const std::vector<std::pair<std::string, tensor>>& feeds,
                                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                          const run_options& options, run_metadata* metadata) {
    in_flight_guard guard(*this);
    if (closed_.load(std::memory_order_acquire)) return errors::cancelled("the session is closed");
    std::vector<std::size_t> order(feeds.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return feeds[a].first < feeds[b].first; });
    std::vector<std::string> feed_names;
    for (std::size_t i : order) feed_names.push_back(feeds[i].first);
    auto made = plan_for(feed_names, fetches, targets);
    if (!made.ok()) return made.status();
    const signature_plan& plan = **made;
    std::vector<tensor> fed(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      const tensor& t = feeds[order[k]].second;
      const tensor_spec& want = graph_.spec({plan.feed_nodes[k], 0});
      if (!t.valid()) return errors::invalid_argument("feed '", feed_names[k], "': the tensor has no storage");
      if (t.dtype() != want.type)
        return errors::invalid_argument("feed '", feed_names[k], "': dtype ", t.dtype(), " does not match the node's ", want.type);
      if (!matches(want.dims, t.shape()))
        return errors::invalid_argument("feed '", feed_names[k], "': shape ", t.shape(), " does not match the node's ", want.dims);
      fed[k] = t;
    }

    rendezvous transfers(plan.keys);
    std::unique_ptr<detail::caller_pool> inline_pool = pool_ ? nullptr : std::make_unique<detail::caller_pool>();
    Eigen::ThreadPoolInterface& pool = pool_ ? static_cast<Eigen::ThreadPoolInterface&>(*pool_) : *inline_pool;
    const auto deadline = options.timeout.count() > 0 ? std::chrono::steady_clock::now() + options.timeout
                                                      : std::chrono::steady_clock::time_point::max();
    run_metadata* trace = options.trace == trace_level::full ? metadata : nullptr;

    // Each partition's feeds, in its device's memory.
    std::vector<std::vector<tensor>> part_feeds(plan.parts.size());
    for (std::size_t p = 0; p < plan.parts.size(); ++p) {
      for (std::size_t k : plan.parts[p].feeds) {
        auto on_device = devices_.visit(plan.parts[p].device, [&](auto& device) {
          return to_device(fed[k], device);
        });
        if (!on_device.ok()) return on_device.status().with_context(detail::cat("feed '", feed_names[k], "'").str());
        part_feeds[p].push_back(std::move(*on_device));
      }
    }
    std::vector<runtime_step> steps(plan.parts.size());
    std::vector<std::unique_ptr<partition_run>> runs;
    for (std::size_t p = 0; p < plan.parts.size(); ++p) {
      steps[p] = runtime_step{part_feeds[p], deadline, options.cancel, &cancel_, trace, &transfers, &pool};
      steps[p].session = plan.parts[p].label.c_str();
      runs.push_back(std::visit(
          [&](const auto& exec) -> std::unique_ptr<partition_run> {
            using exec_type = std::remove_cvref_t<decltype(*exec)>;
            return std::make_unique<partition_run_of<exec_type>>(*exec, device_of<exec_type>(plan.parts[p].device), steps[p]);
          },
          plan.parts[p].executor));
    }
    detail::executor_barrier barrier(runs.size(), transfers, inline_pool.get());
    for (auto& r : runs) r->start(&detail::executor_barrier::finished, &barrier);
    auto poll = [&] {
      if ((options.cancel && options.cancel->is_cancelled()) || cancel_.is_cancelled())
        transfers.abort(errors::cancelled("the step was cancelled"));
      else if (deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > deadline)
        transfers.abort(errors::deadline_exceeded("the step ran past its timeout"));
    };
    if (inline_pool) inline_pool->run_until([&] { return barrier.done(); }, poll);
    else barrier.wait(poll);
    if (auto st = barrier.first_error(); !st.ok()) return st;

    std::vector<tensor> outputs(fetches.size());
    for (std::size_t p = 0; p < plan.parts.size(); ++p) {
      std::vector<tensor> part_out;
      if (auto st = runs[p]->collect(part_out); !st.ok()) return st;
      for (std::size_t k = 0; k < part_out.size(); ++k) {
        const std::size_t slot = plan.parts[p].fetches[k];
        if (options.fetch_on_device) {
          outputs[slot] = std::move(part_out[k]);
          continue;
        }
        auto host = devices_.visit(plan.parts[p].device, [&](auto& device) {
          return to_host(part_out[k], device);
        });
        if (!host.ok()) return host.status().with_context(detail::cat("fetch '", fetches[slot], "'").str());
        outputs[slot] = std::move(*host);
      }
    }
    if (metadata) metadata->placement = plan.placement;
    return outputs;
  }

 public:
  // Cancels the steps in flight, waits for them to end, and refuses later runs.
  void close() {
    closed_.store(true, std::memory_order_release);
    cancel_.cancel();
    std::unique_lock lock(flight_mutex_);
    flight_cv_.wait(lock, [&] { return in_flight_ == 0; });
  }

  // Executors made so far: one per partition of each distinct signature.
  std::size_t num_executors() const {
    std::lock_guard lock(cache_mutex_);
    std::size_t n = 0;
    for (const auto& [k, plan] : cache_) n += plan->parts.size();
    return n;
  }

  // Graphviz DOT of the placed graph for a signature: one cluster per device, _send/_recv included.
  result<std::string> to_dot(const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                             const std::vector<std::string>& targets = {}) {
    std::vector<std::string> sorted = feeds;
    std::sort(sorted.begin(), sorted.end());
    auto made = plan_for(sorted, fetches, targets);
    if (!made.ok()) return made.status();
    detail::text t;
    t.append("digraph typeflow {\n  node [shape=box, fontname=\"monospace\"];\n");
    const auto& graphs = (*made)->graphs;
    for (std::size_t p = 0; p < graphs.size(); ++p) {
      detail::append(t, detail::cat("  subgraph cluster_", p, " {\n    label=\"", devices_[(*made)->parts[p].device].name, "\";\n"));
      for (const node_def& n : graphs[p].nodes) detail::append(t, detail::cat("    \"", n.name, "\" [label=\"", n.name, "\\n", n.op, "\"];\n"));
      t.append("  }\n");
    }
    for (std::size_t p = 0; p < graphs.size(); ++p)
      for (const node_def& n : graphs[p].nodes)
        for (const std::string& in : n.inputs) {
          const bool control = !in.empty() && in[0] == '^';
          const std::string_view src = control ? std::string_view(in).substr(1) : tensor_name::parse(in)->node;
          detail::append(t, detail::cat("  \"", src, "\" -> \"", n.name, "\"", control ? " [style=dashed]" : "", ";\n"));
        }
    // Each transfer pair, dotted.
    for (std::size_t p = 0; p < graphs.size(); ++p)
      for (const node_def& n : graphs[p].nodes)
        if (n.op == "_send")
          for (std::size_t q = 0; q < graphs.size(); ++q)
            for (const node_def& m : graphs[q].nodes)
              if (m.op == "_recv" && *m.attrs.find("key") == *n.attrs.find("key"))
                detail::append(t, detail::cat("  \"", n.name, "\" -> \"", m.name, "\" [style=dotted];\n"));
    t.append("}\n");
    return t.str();
  }

 private:
  using executor_variant = std::variant<std::shared_ptr<const runtime_executor<Ds, Registry>>...>;

  struct partition_exec {
    std::size_t device = 0;             // index in the device set
    executor_variant executor;
    std::vector<std::size_t> feeds;     // the session's (sorted) feed indices, in the executor's feed order
    std::vector<std::size_t> fetches;   // output positions, in the executor's fetch order
    std::string label;                  // in crash reports: "partition on /job:.../device:CPU:1"
  };
  struct signature_plan {
    std::vector<partition_exec> parts;
    std::vector<graph_def> graphs;
    std::shared_ptr<const rendezvous_keys> keys;
    std::vector<std::size_t> feed_nodes;  // by sorted feed
    std::vector<std::pair<std::string, std::string>> placement;  // (node, device) of every node that runs
  };

  struct partition_run {
    virtual ~partition_run() = default;
    virtual void start(void (*finished)(void*, status), void* context) = 0;
    virtual status collect(std::vector<tensor>& outputs) = 0;
  };
  template <class Executor>
  struct partition_run_of final : partition_run {
    template <class Device>
    partition_run_of(const Executor& e, Device& device, const runtime_step& step) : run(e, device, step) {}
    void start(void (*finished)(void*, status), void* context) override { run.start(finished, context); }
    status collect(std::vector<tensor>& outputs) override { return run.collect(outputs); }
    typename Executor::async_run run;
  };
  template <class Executor>
  struct device_of_executor;
  template <class D>
  struct device_of_executor<runtime_executor<D, Registry>> {
    using type = D;
  };
  template <class Executor>
  typename device_of_executor<Executor>::type& device_of(std::size_t index) const {
    return *static_cast<typename device_of_executor<Executor>::type*>(devices_[index].device);
  }

  struct in_flight_guard {
    runtime_session& s;
    explicit in_flight_guard(runtime_session& session) : s(session) {
      std::lock_guard lock(s.flight_mutex_);
      ++s.in_flight_;
    }
    ~in_flight_guard() {
      std::lock_guard lock(s.flight_mutex_);
      if (--s.in_flight_ == 0) s.flight_cv_.notify_all();
    }
  };

  runtime_session(inferred_graph g, device_set_type& devices, session_options options, std::unique_ptr<Eigen::ThreadPool> pool)
      : graph_(std::move(g)), devices_(devices), options_(options), pool_(std::move(pool)) {}

  result<std::shared_ptr<const signature_plan>> plan_for(const std::vector<std::string>& feeds,
                                                         const std::vector<std::string>& fetches,
                                                         const std::vector<std::string>& targets) {
    std::vector<std::string> sorted_targets = targets;
    std::sort(sorted_targets.begin(), sorted_targets.end());
    std::string key;
    for (const auto& f : feeds) key += f + ',';
    key += '|';
    for (const auto& f : fetches) key += f + ',';
    key += '|';
    for (const auto& t : sorted_targets) key += t + ',';
    {
      std::lock_guard lock(cache_mutex_);
      if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    }
    auto made = make_plan(feeds, fetches, sorted_targets);
    if (!made.ok()) return made.status();
    std::lock_guard lock(cache_mutex_);
    return cache_.emplace(key, std::move(*made)).first->second;  // another thread's, if it won
  }

  result<std::shared_ptr<const signature_plan>> make_plan(const std::vector<std::string>& feeds,
                                                          const std::vector<std::string>& fetches,
                                                          const std::vector<std::string>& targets) {
    const auto& index = graph_.topology.index;
    const std::size_t n = graph_.def.nodes.size();
    const auto find = [&](std::string_view name) -> std::optional<std::size_t> {
      auto it = index.find(std::string(name));
      if (it == index.end()) return std::nullopt;
      return it->second;
    };
    const auto outputs = [&](std::size_t i) { return graph_.num_outputs(i); };
    auto plan = std::make_shared<signature_plan>();
    std::vector<bool> fed(n, false);
    for (const std::string& f : feeds) {
      auto i = resolve_feed(f, find, outputs);
      if (!i.ok()) return i.status();
      if (fed[*i]) return errors::invalid_argument("feed '", f, "' is given twice");
      fed[*i] = true;
      plan->feed_nodes.push_back(*i);
    }
    std::vector<std::size_t> fetch_nodes, target_nodes;
    for (const std::string& f : fetches) {
      auto i = resolve_tensor(f, "fetch", true, find, outputs);
      if (!i.ok()) return i.status();
      fetch_nodes.push_back(i->node);
    }
    for (const std::string& t : targets) {
      auto i = resolve_tensor(t, "target", false, find, outputs);
      if (!i.ok()) return i.status();
      target_nodes.push_back(i->node);
    }
    if (fetch_nodes.empty() && target_nodes.empty()) return errors::invalid_argument("a run needs at least one fetch or target");
    std::vector<bool> needed(n, false);
    std::vector<std::size_t> stack(fetch_nodes);
    stack.insert(stack.end(), target_nodes.begin(), target_nodes.end());
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      stack.pop_back();
      if (needed[i]) continue;
      needed[i] = true;
      if (fed[i]) continue;
      for (std::size_t j : graph_.topology.inputs[i]) stack.push_back(j);
      for (std::size_t j : graph_.topology.control[i]) stack.push_back(j);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (needed[i] && !fed[i] && graph_.kinds[i] == runtime_node_kind::placeholder)
        return errors::invalid_argument("placeholder '", graph_.def.nodes[i].name, "' is needed by the fetches but not fed");

    // Placement over the devices in priority order.
    const std::vector<std::size_t> by_priority = devices_.prioritized();
    static constexpr const device_kernels* kinds[] = {&device_kernels_of<Registry, Ds>...};
    std::vector<placement_device> candidates;
    std::vector<partition_device> names;
    for (std::size_t d : by_priority) {
      const auto& e = devices_[d];
      candidates.push_back({e.name, &e.parsed, kinds[e.type_index]});
      names.push_back({e.name, e.incarnation, detail::cat(e.type, "_", e.ordinal).str()});
    }
    auto where = place(graph_, needed, candidates, placement_options{options_.soft_placement});
    if (!where.ok()) return where.status();
    partition_plan parts = partition(graph_, needed, fed, *where, names);
    plan->keys = parts.keys;
    for (std::size_t i = 0; i < n; ++i)
      if (needed[i]) plan->placement.emplace_back(graph_.def.nodes[i].name, devices_[by_priority[(*where)[i]]].name);

    for (std::size_t p = 0; p < parts.graphs.size(); ++p) {
      partition_exec part;
      part.device = by_priority[parts.devices[p]];
      std::vector<std::string> part_feeds, part_fetches, part_targets;
      for (std::size_t k = 0; k < plan->feed_nodes.size(); ++k)
        if (parts.partition_of[plan->feed_nodes[k]] == p) {
          part.feeds.push_back(k);
          part_feeds.push_back(graph_.def.nodes[plan->feed_nodes[k]].name);
        }
      for (std::size_t k = 0; k < fetch_nodes.size(); ++k)
        if (parts.partition_of[fetch_nodes[k]] == p) {
          part.fetches.push_back(k);
          part_fetches.push_back(fetches[k]);  // the partition keeps the node's name and outputs
        }
      for (std::size_t i : target_nodes)
        if (parts.partition_of[i] == p) part_targets.push_back(graph_.def.nodes[i].name);
      for (const node_def& d : parts.graphs[p].nodes)
        if (d.op == "_send") part_targets.push_back(d.name);
      std::sort(part_targets.begin(), part_targets.end());
      part_targets.erase(std::unique(part_targets.begin(), part_targets.end()), part_targets.end());
      status st = devices_.visit(part.device, [&](auto& device) -> status {
        using D = std::remove_cvref_t<decltype(device)>;
        part.label = detail::cat("partition on ", device.name()).str();  // errors' context, crash reports
        auto g = runtime_graph<D, Registry>::make(parts.graphs[p]);
        if (!g.ok()) return g.status().with_context(part.label);
        auto e = runtime_executor<D, Registry>::make(std::make_shared<const runtime_graph<D, Registry>>(std::move(*g)), part_feeds,
                                                     part_fetches, part_targets, parts.keys.get(), &device);
        if (!e.ok()) return e.status().with_context(part.label);
        part.executor.template emplace<std::shared_ptr<const runtime_executor<D, Registry>>>(std::move(*e));
        return ok_status();
      });
      if (!st.ok()) return st;
      plan->parts.push_back(std::move(part));
    }
    plan->graphs = std::move(parts.graphs);
    return std::shared_ptr<const signature_plan>(std::move(plan));
  }

  inferred_graph graph_;
  device_set_type& devices_;
  session_options options_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  mutable std::mutex cache_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const signature_plan>> cache_;
  cancellation cancel_;
  std::atomic<bool> closed_{false};
  std::mutex flight_mutex_;
  std::condition_variable flight_cv_;
  std::size_t in_flight_ = 0;
};

}  // namespace typeflow
