// SPDX-License-Identifier: Apache-2.0
// runtime_session<Device, Registry>: runs a runtime graph with TensorFlow's DirectSession::Run
// semantics.
//   auto g = tf::runtime_graph<tf::cpu>::make(*tf::parse_graph(text));
//   tf::runtime_session<tf::cpu> s(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), device);
//   auto out = s.run({{"x", x}}, {"y:0"}, {}, options, &metadata);   // result<vector<tensor>>
// - Executors are made once per signature (feeds and targets sorted, fetches in order) and cached.
// - Feeds may replace the output of any node, not only placeholders; a fed tensor's dtype must be
//   the node's and its shape must match the node's inferred shape (dyn takes any size).
// - run may be called from many threads at once.
// - inter_op_threads > 0: the parallel executor on an Eigen ThreadPool of that many threads,
//   which run the expensive nodes (the calling thread runs cheap ones as it makes them ready);
//   0: the sequential executor on the calling thread.
// - close() cancels the steps in flight and waits for them; runs after it are cancelled.
// - Replay = true (runtime_session(graph, gpu, cuda_graph{}); runtime/cuda_graph.hpp, which a
//   program includes to use it): each executor's runs replay a CUDA graph on a GPU policy, captured
//   after a run with the same feed shapes; run_metadata::replay says how a run ran. A replayed run is
//   one launch: its deadline and cancellation are checked before it, and it records no step stats.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/eigen_thread_pool.hpp>
#include <typeflow/graph/runtime_graph.hpp>
#include <typeflow/runtime/run_options.hpp>
#include <typeflow/runtime/runtime_executor.hpp>

namespace typeflow {

// One runtime executor's runs as a CUDA graph (defined in runtime/cuda_graph.hpp).
template <class Executor, class Device>
class runtime_graph_replay;

template <class Device, class Registry = default_registry, bool Replay = false>
class runtime_session {
 public:
  using graph_type = runtime_graph<Device, Registry>;
  using executor = runtime_executor<Device, Registry>;

  // An inter_op_threads count outside [0, max_pool_threads], or threads the system cannot start,
  // leave the session unusable: every run returns that status (also given by init_status()).
  runtime_session(std::shared_ptr<const graph_type> graph, Device& device, int inter_op_threads = 0)
      : graph_(std::move(graph)), device_(&device), label_(detail::cat("runtime_session on ", device.name()).str()) {
    if (inter_op_threads < 0) {
      init_ = errors::invalid_argument("runtime_session: inter_op_threads is ", inter_op_threads,
                                       "; it must be >= 0 (0 runs every node on the calling thread)");
    } else if (inter_op_threads > 0) {
      auto pool = make_eigen_thread_pool(inter_op_threads, "runtime_session: inter_op_threads");
      if (pool.ok()) pool_ = std::move(*pool);
      else init_ = pool.status();
    }
  }
  // Runs as CUDA graphs on one GPU policy, one per executor; the nodes in order on one stream.
  runtime_session(std::shared_ptr<const graph_type> graph, Device& device, const cuda_graph&) requires Replay
      : runtime_session(std::move(graph), device, 0) {}
  const status& init_status() const noexcept { return init_; }
  ~runtime_session() { close(); }
  runtime_session(const runtime_session&) = delete;
  runtime_session& operator=(const runtime_session&) = delete;

  // The fetched tensors, in the order of `fetches`. Running out of memory or threads on the calling
  // thread is resource_exhausted, never an exception.
  result<std::vector<tensor>> run(const std::vector<std::pair<std::string, tensor>>& feeds,
                                  const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {},
                                  const run_options& options = {}, run_metadata* metadata = nullptr) {
    return detail::status_boundary("runtime_session::run", [&] { return run_checked(feeds, fetches, targets, options, metadata); });
  }

  // Cancels the steps in flight, waits for them to end, and refuses later runs.
  void close() {
    closed_.store(true, std::memory_order_release);
    cancel_.cancel();
    std::unique_lock lock(flight_mutex_);
    flight_cv_.wait(lock, [&] { return in_flight_ == 0; });
  }

  const graph_type& graph() const noexcept { return *graph_; }
  // Executors made so far (one per distinct signature).
  std::size_t num_executors() const {
    std::lock_guard lock(cache_mutex_);
    return cache_.size();
  }

 private:
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

  result<std::vector<tensor>> run_checked(const std::vector<std::pair<std::string, tensor>>& feeds,
                                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                          const run_options& options, run_metadata* metadata) {
    in_flight_guard guard(*this);
    if (!init_.ok()) return init_;
    if (closed_.load(std::memory_order_acquire)) return errors::cancelled("the session is closed");

    // Feeds sorted by name, so that the signature does not depend on their order.
    std::vector<std::size_t> order(feeds.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return feeds[a].first < feeds[b].first; });
    std::vector<std::string> feed_names;
    std::vector<tensor> fed;
    for (std::size_t i : order) {
      feed_names.push_back(feeds[i].first);
      fed.push_back(feeds[i].second);
    }
    auto exec = executor_for(feed_names, fetches, targets);
    if (!exec.ok()) return exec.status();
    for (std::size_t k = 0; k < fed.size(); ++k) {
      const tensor_spec& want = (*exec)->feed_specs()[k];
      const tensor& t = fed[k];
      if (!t.valid()) return errors::invalid_argument("feed '", feed_names[k], "': the tensor has no storage");
      if (t.dtype() != want.type)
        return errors::invalid_argument("feed '", feed_names[k], "': dtype ", t.dtype(), " does not match the node's ", want.type);
      if (!matches(want.dims, t.shape()))
        return errors::invalid_argument("feed '", feed_names[k], "': shape ", t.shape(), " does not match the node's ", want.dims);
    }
    runtime_step step{fed, std::chrono::steady_clock::time_point::max(), options.cancel, &cancel_,
                      options.trace == trace_level::full ? metadata : nullptr};
    step.session = label_.c_str();
    if (options.timeout.count() > 0) step.deadline = std::chrono::steady_clock::now() + options.timeout;
    std::vector<tensor> outputs;
    // A policy whose allocator tracks steps (tracking_allocator) reports this step's memory.
    constexpr bool tracks_steps = requires(Device& d) { d.allocator().reset_step(); };
    if constexpr (tracks_steps)
      if (step.metadata) device_->allocator().reset_step();
    status st;
    if constexpr (Replay) {
      // A replay is one launch: its cancellation and deadline are checked before it.
      if ((options.cancel && options.cancel->is_cancelled()) || cancel_.is_cancelled())
        return errors::cancelled("the step was cancelled");
      if (step.deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > step.deadline)
        return errors::deadline_exceeded("the step ran past its timeout");
      std::lock_guard lock(replay_mutex_);
      auto r = replay_for(**exec);
      if (!r.ok()) return r.status();
      graph_replay how = graph_replay::none;
      st = (*r)->run(*device_, **exec, step, outputs, how);
      if (metadata != nullptr) {
        metadata->replay = how;
        metadata->graph_branches = how == graph_replay::none ? 0 : 1;
      }
    } else {
      st = pool_ ? (*exec)->run_parallel(*device_, *pool_, step, outputs) : (*exec)->run_sequential(*device_, step, outputs);
    }
    if constexpr (tracks_steps)
      if (step.metadata) step.metadata->memory = device_->allocator().step_record();
    if (!st.ok()) return st;
    return outputs;
  }

  result<std::shared_ptr<const executor>> executor_for(const std::vector<std::string>& feeds,
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
    // The device: constants are copied into its memory once, when it keeps tensors outside the host's.
    auto made = executor::make(graph_, feeds, fetches, sorted_targets, nullptr, device_);
    if (!made.ok()) return made.status();
    std::lock_guard lock(cache_mutex_);
    return cache_.emplace(key, std::move(*made)).first->second;  // another thread's, if it won
  }

  // A CUDA-graph session's runner of an executor, made on its first run.
  result<runtime_graph_replay<executor, Device>*> replay_for(const executor& e) {
    for (auto& [k, r] : replays_)
      if (k == &e) return static_cast<runtime_graph_replay<executor, Device>*>(r.get());
    auto made = runtime_graph_replay<executor, Device>::create(*device_);
    if (!made.ok()) return made.status();
    runtime_graph_replay<executor, Device>* raw = made->get();
    replays_.emplace_back(&e, std::move(*made));
    return raw;
  }

  std::shared_ptr<const graph_type> graph_;
  Device* device_;
  std::string label_;  // the session in crash reports (runtime/crash_handler.hpp)
  std::unique_ptr<Eigen::ThreadPool> pool_;
  status init_;
  mutable std::mutex cache_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const executor>> cache_;
  cancellation cancel_;
  std::atomic<bool> closed_{false};
  std::mutex flight_mutex_;
  std::condition_variable flight_cv_;
  std::size_t in_flight_ = 0;
  std::mutex replay_mutex_;
  std::vector<std::pair<const executor*, std::unique_ptr<detail::replay_base>>> replays_;  // destroyed first
};

}  // namespace typeflow

// The same for a graph placed across the devices of a device_set: runtime_session<devices<Ds...>>.
#include <typeflow/runtime/device_set_session.hpp>
