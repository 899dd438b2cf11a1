// SPDX-License-Identifier: Apache-2.0
// What a runtime session's run takes besides feeds and fetches, and what it can report back, as
// TensorFlow's RunOptions and RunMetadata:
//  - run_options: a timeout (the step ends with deadline_exceeded), a cancellation (cancelled),
//    and a trace level (full: step stats per node);
//  - cancellation: a shared flag; cancel() from any thread stops the steps watching it at their
//    next node (a kernel already running finishes first);
//  - run_metadata: one node_stats per node that ran, exportable as Chrome trace JSON (Perfetto,
//    chrome://tracing), and, when the device policy's allocator is a tracking_allocator, what the
//    step allocated (TensorFlow's per-step memory stats); for a static session run as a CUDA graph,
//    whether the run captured, updated or replayed it.
#pragma once

#include <typeflow/fwd.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/memory/tracking_allocator.hpp>

namespace typeflow {

class cancellation {
 public:
  cancellation() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const noexcept { flag_->store(true, std::memory_order_release); }
  bool is_cancelled() const noexcept { return flag_->load(std::memory_order_acquire); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

enum class trace_level : unsigned char { none, full };

struct run_options {
  std::chrono::nanoseconds timeout{0};  // 0: none
  const cancellation* cancel = nullptr;   // watched between nodes when set
  trace_level trace = trace_level::none;
  bool fetch_on_device = false;           // device_set sessions: fetches stay in their device's memory
};

struct node_stats {
  std::string node;
  std::string op;
  std::string device;
  std::uint64_t thread = 0;     // a hash of the thread id
  std::int64_t start_ns = 0;    // since the step started
  std::int64_t end_ns = 0;
  dtype output_type = dtype::f32;
  shape output_shape;
  std::size_t output_bytes = 0;
};

// A session option: run as CUDA graphs on a GPU policy (runtime/cuda_graph.hpp, which a program
// includes to use it). A static session's independent steps go on up to `branches` streams (1 to
// 16): the parallel structure of its plan becomes parallel branches of the graph; a runtime
// session's nodes run in order on one.
struct cuda_graph {
  int branches = 4;
};

namespace detail {
// What a session keeps of a CUDA-graph runner without knowing its type.
struct replay_base {
  virtual ~replay_base() = default;
};
}  // namespace detail

// How a run of a static session made with tf::cuda_graph ran (runtime/cuda_graph.hpp):
//  - captured: it ran its steps on the GPU and captured them into a CUDA graph, made executable;
//  - updated: the same, after a change of shape or address, and the executable graph took the new
//    capture's parameters (cudaGraphExecUpdate);
//  - reinstantiated: the same, but CUDA refused the update (the graph's shape changed), so a new
//    executable graph was made;
//  - replayed: it launched the executable graph: one launch for every step.
// none: any other session.
enum class graph_replay : unsigned char { none, captured, updated, reinstantiated, replayed };

constexpr std::string_view to_string(graph_replay r) noexcept {
  switch (r) {
    case graph_replay::none: return "none";
    case graph_replay::captured: return "captured";
    case graph_replay::updated: return "updated";
    case graph_replay::reinstantiated: return "reinstantiated";
    case graph_replay::replayed: return "replayed";
  }
  return "invalid";
}

struct run_metadata {
  std::vector<node_stats> steps;
  // Bytes and allocations through the policy's tracking_allocator during the step (set only for
  // such a policy). Steps that run at the same time on one policy count each other's too.
  std::optional<step_memory_record> memory;
  // device_set sessions: (node, full device name) of every node the run needed.
  std::vector<std::pair<std::string, std::string>> placement;
  // Static sessions run as a CUDA graph: how this run ran (graph_replay).
  graph_replay replay = graph_replay::none;
  // ... and the streams its executable graph's steps are spread over (its parallel branches).
  int graph_branches = 0;

  // {"traceEvents": [{"name": ..., "ph": "X", "ts": µs, "dur": µs, "pid": device, "tid": ..., "args": {...}}]}:
  // one track (pid) per device, named by a process_name event.
  std::string to_chrome_trace() const {
    detail::text t;
    t.append("{\"traceEvents\": [");
    std::vector<std::string_view> devices;
    auto pid_of = [&](std::string_view device) {
      for (std::size_t i = 0; i < devices.size(); ++i)
        if (devices[i] == device) return static_cast<std::int64_t>(i);
      devices.push_back(device);
      return static_cast<std::int64_t>(devices.size() - 1);
    };
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const node_stats& s = steps[i];
      detail::append(t, detail::cat(i ? ",\n  " : "\n  ", "{\"name\": \"", s.node, "\", \"cat\": \"", s.op,
                                    "\", \"ph\": \"X\", \"pid\": ", pid_of(s.device), ", \"tid\": ",
                                    static_cast<std::int64_t>(s.thread % 1000000), ", \"ts\": "));
      append_micros(t, s.start_ns);
      t.append(", \"dur\": ");
      append_micros(t, s.end_ns - s.start_ns);
      detail::append(t, detail::cat(", \"args\": {\"op\": \"", s.op, "\", \"device\": \"", s.device, "\", \"output\": \"",
                                    name_of(s.output_type), s.output_shape, "\", \"bytes\": ",
                                    static_cast<std::int64_t>(s.output_bytes), "}}"));
    }
    for (std::size_t d = 0; d < devices.size(); ++d)
      detail::append(t, detail::cat(steps.empty() && d == 0 ? "\n  " : ",\n  ", "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": ", d,
                                    ", \"args\": {\"name\": \"", devices[d], "\"}}"));
    t.append("\n]}\n");
    return t.str();
  }

 private:
  static void append_micros(detail::text& t, std::int64_t ns) {
    detail::append_int(t, ns / 1000);
    t.push_back('.');
    const std::int64_t frac = ns % 1000;
    t.push_back(static_cast<char>('0' + frac / 100));
    t.push_back(static_cast<char>('0' + frac / 10 % 10));
    t.push_back(static_cast<char>('0' + frac % 10));
  }
};

}  // namespace typeflow
