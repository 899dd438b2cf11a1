// SPDX-License-Identifier: Apache-2.0
// CUDA graphs as libtypeflow_cuda gives them: stream capture into a graph, its executable form,
// updating that form from a new capture of the same shape, and replaying it on a stream.
//
// Capture runs in CUDA's relaxed mode: the capturing thread may still allocate (a BFC pool that grows
// during a capture calls cudaMalloc), and other threads' work on other streams is not disturbed. What
// a capture may not do is wait for the GPU: a stream or event synchronize on a capturing stream ends
// the capture in an error, which end_capture reports (cudaErrorStreamCaptureInvalidated) after the
// failing call has reported its own.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// Starts capturing the work enqueued on `s` (and on the streams that wait on events it records).
TYPEFLOW_CUDA_API status begin_capture(const stream& s);
// Whether `s` is capturing now.
TYPEFLOW_CUDA_API result<bool> is_capturing(const stream& s);

// A captured graph (cudaGraph_t): what a capture recorded. Movable, not copyable.
class TYPEFLOW_CUDA_API captured_graph {
 public:
  captured_graph(captured_graph&& other) noexcept;
  captured_graph& operator=(captured_graph&& other) noexcept;
  ~captured_graph();

  int ordinal() const noexcept { return ordinal_; }
  void* native() const noexcept { return handle_; }
  // Its nodes, and those with no dependency: a capture of n independent branches has at least n roots.
  result<std::size_t> num_nodes() const;
  result<std::size_t> num_root_nodes() const;

 private:
  friend result<captured_graph> end_capture(const stream& s);
  captured_graph(int ordinal, void* handle) noexcept : ordinal_(ordinal), handle_(handle) {}
  int ordinal_ = -1;
  void* handle_ = nullptr;
};

// Ends the capture of `s`: the graph, or why the capture failed (an error of the capture, such as a
// synchronize during it, comes back here). The stream no longer captures after either answer.
TYPEFLOW_CUDA_API result<captured_graph> end_capture(const stream& s);

// An executable graph (cudaGraphExec_t). Movable, not copyable.
class TYPEFLOW_CUDA_API graph_exec {
 public:
  static result<graph_exec> instantiate(const captured_graph& g);

  graph_exec(graph_exec&& other) noexcept;
  graph_exec& operator=(graph_exec&& other) noexcept;
  ~graph_exec();

  int ordinal() const noexcept { return ordinal_; }

  // Takes the kernel arguments, addresses and sizes of `g`, a capture of the same work with other
  // parameters: true when done; false when CUDA refuses (the topology or a node's type or kernel
  // changed: cudaGraphExecUpdate), after which this executable graph must not be launched again
  // (instantiate one from `g`). Other failures: a status.
  result<bool> update(const captured_graph& g);
  // Uploads the graph's work to the device ahead of its first launch (the first launch then costs
  // what the others do).
  status upload(const stream& s) const;
  // Enqueues one replay on `s`.
  status launch(const stream& s) const;

 private:
  graph_exec(int ordinal, void* handle) noexcept : ordinal_(ordinal), handle_(handle) {}
  int ordinal_ = -1;
  void* handle_ = nullptr;
};

} // namespace typeflow::gpu
