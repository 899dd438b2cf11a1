// SPDX-License-Identifier: Apache-2.0
// CUDA graphs: stream capture, instantiation, update and replay (include/typeflow/cuda/graph.hpp).
#include <typeflow/cuda/graph.hpp>

#include <cuda_runtime_api.h>

#include <utility>

#include "detail/check.hpp"

namespace typeflow::gpu {

namespace {

cudaStream_t native_stream(const stream& s) { return static_cast<cudaStream_t>(s.native()); }

} // namespace

status begin_capture(const stream& s) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "begin_capture"));
  return detail::cuda_status(cudaStreamBeginCapture(native_stream(s), cudaStreamCaptureModeRelaxed),
                             "cudaStreamBeginCapture", "GPU:", s.ordinal());
}

result<bool> is_capturing(const stream& s) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "is_capturing"));
  cudaStreamCaptureStatus state = cudaStreamCaptureStatusNone;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(
      detail::cuda_status(cudaStreamIsCapturing(native_stream(s), &state), "cudaStreamIsCapturing", "GPU:", s.ordinal()));
  return state != cudaStreamCaptureStatusNone;
}

result<captured_graph> end_capture(const stream& s) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "end_capture"));
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(native_stream(s), &g);
  if (e != cudaSuccess) {
    if (g != nullptr) (void)cudaGraphDestroy(g);
    return detail::cuda_status(e, "cudaStreamEndCapture", "GPU:", s.ordinal());
  }
  if (g == nullptr) return errors::internal("cudaStreamEndCapture (GPU:", s.ordinal(), ") gave no graph");
  return captured_graph(s.ordinal(), g);
}

captured_graph::captured_graph(captured_graph&& other) noexcept
    : ordinal_(std::exchange(other.ordinal_, -1)), handle_(std::exchange(other.handle_, nullptr)) {}

captured_graph& captured_graph::operator=(captured_graph&& other) noexcept {
  if (this != &other) {
    captured_graph gone(std::move(*this));
    ordinal_ = std::exchange(other.ordinal_, -1);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

captured_graph::~captured_graph() {
  if (handle_ != nullptr) (void)cudaGraphDestroy(static_cast<cudaGraph_t>(handle_));
}

result<std::size_t> captured_graph::num_nodes() const {
  if (handle_ == nullptr) return errors::failed_precondition("captured_graph::num_nodes on a moved-from graph");
  std::size_t n = 0;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(
      detail::cuda_status(cudaGraphGetNodes(static_cast<cudaGraph_t>(handle_), nullptr, &n), "cudaGraphGetNodes"));
  return n;
}

result<std::size_t> captured_graph::num_root_nodes() const {
  if (handle_ == nullptr) return errors::failed_precondition("captured_graph::num_root_nodes on a moved-from graph");
  std::size_t n = 0;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
      cudaGraphGetRootNodes(static_cast<cudaGraph_t>(handle_), nullptr, &n), "cudaGraphGetRootNodes"));
  return n;
}

result<graph_exec> graph_exec::instantiate(const captured_graph& g) {
  if (g.native() == nullptr) return errors::failed_precondition("graph_exec::instantiate from a moved-from graph");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(g.ordinal()));
  cudaGraphExec_t exec = nullptr;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
      cudaGraphInstantiate(&exec, static_cast<cudaGraph_t>(g.native()), 0), "cudaGraphInstantiate", "GPU:", g.ordinal()));
  return graph_exec(g.ordinal(), exec);
}

graph_exec::graph_exec(graph_exec&& other) noexcept
    : ordinal_(std::exchange(other.ordinal_, -1)), handle_(std::exchange(other.handle_, nullptr)) {}

graph_exec& graph_exec::operator=(graph_exec&& other) noexcept {
  if (this != &other) {
    graph_exec gone(std::move(*this));
    ordinal_ = std::exchange(other.ordinal_, -1);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

graph_exec::~graph_exec() {
  if (handle_ != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(handle_));
}

result<bool> graph_exec::update(const captured_graph& g) {
  if (handle_ == nullptr || g.native() == nullptr)
    return errors::failed_precondition("graph_exec::update with a moved-from graph or executable graph");
  if (g.ordinal() != ordinal_)
    return errors::invalid_argument("graph_exec::update: the executable graph is on GPU:", ordinal_,
                                    ", the captured graph on GPU:", g.ordinal());
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ordinal_));
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t e =
      cudaGraphExecUpdate(static_cast<cudaGraphExec_t>(handle_), static_cast<cudaGraph_t>(g.native()), &info);
  if (e == cudaErrorGraphExecUpdateFailure) {
    (void)cudaGetLastError();
    return false;
  }
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(e, "cudaGraphExecUpdate", "GPU:", ordinal_));
  return true;
}

status graph_exec::upload(const stream& s) const {
  if (handle_ == nullptr) return errors::failed_precondition("graph_exec::upload on a moved-from executable graph");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "graph_exec::upload"));
  return detail::cuda_status(cudaGraphUpload(static_cast<cudaGraphExec_t>(handle_), native_stream(s)), "cudaGraphUpload",
                             "GPU:", s.ordinal());
}

status graph_exec::launch(const stream& s) const {
  if (handle_ == nullptr) return errors::failed_precondition("graph_exec::launch on a moved-from executable graph");
  if (s.ordinal() != ordinal_)
    return errors::invalid_argument("graph_exec::launch: the graph is on GPU:", ordinal_, ", the stream on GPU:",
                                    s.ordinal());
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, "graph_exec::launch"));
  return detail::cuda_status(cudaGraphLaunch(static_cast<cudaGraphExec_t>(handle_), native_stream(s)), "cudaGraphLaunch",
                             "GPU:", s.ordinal());
}

} // namespace typeflow::gpu
