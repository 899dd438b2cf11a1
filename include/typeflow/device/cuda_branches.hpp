// SPDX-License-Identifier: Apache-2.0
// cuda_branches: the streams of one GPU that a CUDA-graph session runs its steps on (its branches),
// apart from the GPU's shared compute stream, so that a capture records only its own work, however
// many other sessions launch on the GPU meanwhile; and the thread's launch target, which sends the
// kernels a thread launches for that GPU to one of those streams for a while.
//
// Each branch has a cuBLASLt workspace of its own (two branches may run products at once); one
// cuBLASLt context and one cuDNN context serve all of them, rebound to the branch's stream for each
// call, so their cached plans are made once. While a target is set, every allocation the thread makes
// on that GPU is also kept in the target's `hold`: memory freed during the steps could otherwise go
// to work on the shared stream while a branch still reads it (the pool's rule, that the next user
// of freed memory queues behind it on one stream, holds for the compute stream only).
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/cuda/blas.hpp>
#include <typeflow/cuda/dnn.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow {

class cuda_branches;

namespace detail {

// Where the calling thread's kernels for GPU `ordinal` go while it is set (cuda_branches::scope).
struct cuda_launch_target {
  int ordinal = -1;
  int branch = 0;
  cuda_branches* owner = nullptr;
  bool capturing = false;               // the stream is capturing: nothing may wait for the GPU
  std::vector<tensor>* hold = nullptr;  // allocations made meanwhile, kept until the work is joined
};

inline cuda_launch_target*& this_thread_launch_target() noexcept {
  thread_local cuda_launch_target* target = nullptr;
  return target;
}

// The calling thread's target for GPU `ordinal`, or null.
inline cuda_launch_target* launch_target_for(int ordinal) noexcept {
  cuda_launch_target* t = this_thread_launch_target();
  return t != nullptr && t->ordinal == ordinal ? t : nullptr;
}

}  // namespace detail

class cuda_branches {
 public:
  // `count` streams (1 to 16) on GPU:ordinal, with their workspaces and the cuBLASLt context.
  static result<std::unique_ptr<cuda_branches>> create(int ordinal, int count) {
    if (count < 1 || count > 16)
      return errors::invalid_argument("cuda_branches: ", count, " branches asked for; 1 to 16 are allowed");
    std::unique_ptr<cuda_branches> b(new cuda_branches(ordinal));
    auto bytes = gpu::recommended_workspace(ordinal);
    if (!bytes.ok()) return bytes.status();
    b->workspace_bytes_ = *bytes;
    for (int i = 0; i < count; ++i) {
      auto s = gpu::stream::create(ordinal);
      if (!s.ok()) return s.status();
      b->streams_.push_back(std::make_unique<gpu::stream>(std::move(s).value()));
      auto w = gpu::device_alloc(ordinal, b->workspace_bytes_);
      if (!w.ok()) return w.status();
      b->workspaces_.push_back(*w);
      auto e = gpu::event::create(ordinal);
      if (!e.ok()) return e.status();
      b->ordering_.push_back(std::move(e).value());
    }
    auto blas = gpu::blas_context::create(*b->streams_[0], b->workspaces_[0], b->workspace_bytes_);
    if (!blas.ok()) return blas.status();
    b->blas_ = std::make_unique<gpu::blas_context>(std::move(blas).value());
    return b;
  }

  cuda_branches(const cuda_branches&) = delete;
  cuda_branches& operator=(const cuda_branches&) = delete;
  ~cuda_branches() {
    (void)synchronize();
    dnn_.reset();
    blas_.reset();
    for (void* w : workspaces_) (void)gpu::device_free(ordinal_, w);
  }

  int ordinal() const noexcept { return ordinal_; }
  int size() const noexcept { return static_cast<int>(streams_.size()); }
  const gpu::stream& stream(int branch) const { return *streams_[static_cast<std::size_t>(branch)]; }

  // Waits for every branch; the first error.
  status synchronize() const {
    status s;
    for (const auto& st : streams_) s.update(st->synchronize());
    return s;
  }

  // While it lives, the thread's kernels for this GPU go to `branch`; `capturing` says that stream is
  // being captured, and `hold` (when given) keeps every allocation the thread makes on the GPU.
  class scope {
   public:
    scope(cuda_branches& owner, int branch, bool capturing, std::vector<tensor>* hold) noexcept
        : target_{owner.ordinal_, branch, &owner, capturing, hold}, previous_(detail::this_thread_launch_target()) {
      detail::this_thread_launch_target() = &target_;
    }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    ~scope() { detail::this_thread_launch_target() = previous_; }

   private:
    detail::cuda_launch_target target_;
    detail::cuda_launch_target* previous_;
  };

  // Work on the target's branch after this call waits for the work on `compute` before it: what a
  // branch that takes memory from the GPU's pool outside a capture needs, since the pool may give it
  // a block freed by work still queued on the compute stream. (A capture needs no such wait: each
  // replay starts after the compute stream's work before it.)
  status after_compute(const detail::cuda_launch_target& t, const gpu::stream& compute) {
    if (t.capturing) return ok_status();
    std::lock_guard lock(mu_);
    const auto b = static_cast<std::size_t>(t.branch);
    if (auto s = ordering_[b].record(compute); !s.ok()) return s;
    return streams_[b]->wait(ordering_[b]);
  }

  // A product on the target's branch, with that branch's workspace.
  status matmul(const detail::cuda_launch_target& t, const gpu::matmul_params& p, std::string_view op) {
    std::lock_guard lock(mu_);
    const auto b = static_cast<std::size_t>(t.branch);
    if (auto s = blas_->bind(*streams_[b], workspaces_[b], workspace_bytes_); !s.ok()) return s.with_context(op);
    return gpu::matmul(*blas_, p, op);
  }

  // A convolution's workspace size, and the convolution, on the target's branch. The cuDNN context
  // is made on the first convolution, outside a capture (the eager run before it makes it).
  result<std::size_t> conv2d_workspace(const detail::cuda_launch_target& t, const gpu::conv2d_params& p,
                                       std::string_view op) {
    std::lock_guard lock(mu_);
    if (auto s = bind_dnn(t); !s.ok()) return s.with_context(op);
    return gpu::conv2d_workspace(*dnn_, p, op);
  }
  status conv2d(const detail::cuda_launch_target& t, const gpu::conv2d_params& p, void* workspace, std::size_t bytes,
                std::string_view op) {
    std::lock_guard lock(mu_);
    if (auto s = bind_dnn(t); !s.ok()) return s.with_context(op);
    return gpu::conv2d(*dnn_, p, workspace, bytes, op);
  }

 private:
  explicit cuda_branches(int ordinal) : ordinal_(ordinal) {}

  status bind_dnn(const detail::cuda_launch_target& t) {
    const gpu::stream& s = *streams_[static_cast<std::size_t>(t.branch)];
    if (!dnn_) {
      if (t.capturing)
        return errors::failed_precondition("cannot make the cuDNN context while capturing a CUDA graph: run the "
                                           "graph eagerly first");
      auto made = gpu::dnn_context::create(s);
      if (!made.ok()) return made.status();
      dnn_ = std::make_unique<gpu::dnn_context>(std::move(made).value());
      return ok_status();
    }
    return dnn_->bind(s);
  }

  int ordinal_;
  std::size_t workspace_bytes_ = 0;
  std::vector<std::unique_ptr<gpu::stream>> streams_;  // stable addresses: the contexts keep one
  std::vector<void*> workspaces_;
  std::vector<gpu::event> ordering_;  // per branch: after_compute's event
  std::mutex mu_;
  std::unique_ptr<gpu::blas_context> blas_;
  std::unique_ptr<gpu::dnn_context> dnn_;
};

}  // namespace typeflow
