// SPDX-License-Identifier: Apache-2.0
// cuda_streams: the streams of one GPU, shared by every cuda policy object for it (TensorFlow's
// GPUDevice stream group): a compute stream for kernels, one for each copy direction, the cuBLASLt
// context of the compute stream with its workspace, and the completion of copies: a thread polls each
// copy's event and hands its done callback, once the event has passed, to a small pool of callback
// threads (TensorFlow's EventMgr). Callbacks finish in any order, may launch CUDA work (which a CUDA
// host function may not), and may wait on other copies of the same GPU (up to the pool's size deep).
#pragma once

#include <typeflow/fwd.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/cuda/blas.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow {

namespace detail {

// The events of pending copies and their callbacks. Shared by the group and its own threads, so that
// the group may be destroyed on one of them (its last owner released by a callback).
class cuda_completions {
 public:
  static constexpr int callback_threads = 4;

  cuda_completions() : callbacks_(callback_threads), poller_([this] { poll(); }) {}
  cuda_completions(const cuda_completions&) = delete;
  cuda_completions& operator=(const cuda_completions&) = delete;
  ~cuda_completions() { stop(); }

  void add(gpu::event after, std::function<void(status)> done) {
    {
      std::lock_guard lock(mu_);
      pending_.emplace_back(std::move(after), std::move(done));
      ++submitted_;
    }
    wake_.notify_one();
  }

  // Waits until every callback added so far has finished; from a callback thread, until every event
  // added so far has passed and its callback has started (waiting for the caller itself would hang).
  void drain() {
    std::unique_lock lock(mu_);
    if (callbacks_.CurrentThreadId() >= 0)
      idle_.wait(lock, [&] { return pending_.empty(); });
    else
      idle_.wait(lock, [&] { return pending_.empty() && running_ == 0; });
  }

  // How many callbacks were ever added: synchronize() repeats until no callback added more work.
  std::uint64_t submitted() {
    std::lock_guard lock(mu_);
    return submitted_;
  }

  // Joins the poller once every pending event has passed; called by the destructor, or by a thread
  // of its own when the group dies on a callback thread.
  void stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    if (poller_.joinable()) poller_.join();
  }

  bool on_own_thread() const { return std::this_thread::get_id() == poller_.get_id() || callbacks_.CurrentThreadId() >= 0; }

 private:
  void poll() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      // Sweep: every passed (or failed) event's callback goes to the pool, in any order.
      bool any = false;
      for (auto it = pending_.begin(); it != pending_.end();) {
        auto passed = it->first.done();
        if (passed.ok() && !*passed) {
          ++it;
          continue;
        }
        status verdict = passed.ok() ? ok_status() : passed.status();
        ++running_;
        callbacks_.Schedule([this, done = std::move(it->second), verdict = std::move(verdict)]() mutable {
          done(verdict);
          done = nullptr;  // the callback's captures go before the count says it finished
          std::lock_guard guard(mu_);
          --running_;
          if (pending_.empty() && running_ == 0) idle_.notify_all();
        });
        it = pending_.erase(it);
        any = true;
      }
      if (pending_.empty()) idle_.notify_all();
      if (!any) {
        // Nothing passed: back off for a few microseconds before the next sweep.
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(5));
        lock.lock();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::list<std::pair<gpu::event, std::function<void(status)>>> pending_;
  int running_ = 0;
  std::uint64_t submitted_ = 0;
  bool stopping_ = false;
  Eigen::ThreadPool callbacks_;
  std::thread poller_;
};

} // namespace detail

class cuda_streams {
 public:
  // The group of GPU:ordinal, created on first use and shared while a policy holds it; the status
  // says why there is none (no device, a wrong ordinal, no memory for the workspace).
  static result<std::shared_ptr<cuda_streams>> of(int ordinal) {
    static std::mutex mu;
    static std::map<int, std::weak_ptr<cuda_streams>> groups;
    std::lock_guard lock(mu);
    if (auto live = groups[ordinal].lock()) return live;
    auto made = make(ordinal);
    if (!made.ok()) return made.status();
    groups[ordinal] = *made;
    return std::move(made).value();
  }

  cuda_streams(const cuda_streams&) = delete;
  cuda_streams& operator=(const cuda_streams&) = delete;
  ~cuda_streams() {
    (void)compute.synchronize();
    (void)host_to_device.synchronize();
    (void)device_to_host.synchronize();
    if (completions_ && completions_->on_own_thread()) {
      // Destroyed by a callback: the completion threads cannot join themselves, so a thread of its
      // own stops them once this callback has returned.
      std::thread([c = std::move(completions_)] { c->stop(); }).detach();
    }
    completions_.reset();
    blas_.reset();
    (void)gpu::device_free(ordinal_, workspace_);
    (void)gpu::device_free(ordinal_, error_word_);
  }

  int ordinal() const noexcept { return ordinal_; }

  gpu::stream compute, host_to_device, device_to_host;

  // Calls done(status) on a callback thread once `after` has passed (or failed).
  void when_done(gpu::event after, std::function<void(status)> done) { completions_->add(std::move(after), std::move(done)); }

  // Waits for the streams and for every callback so far, again while callbacks added work; the
  // first error of the streams.
  status synchronize() {
    status s;
    for (;;) {
      const std::uint64_t before = completions_->submitted();
      s.update(compute.synchronize());
      s.update(host_to_device.synchronize());
      s.update(device_to_host.synchronize());
      completions_->drain();
      if (completions_->submitted() == before) return s;
    }
  }

  // A product on the compute stream; one thread at a time uses the cuBLASLt context.
  status matmul(const gpu::matmul_params& p, std::string_view op) {
    std::lock_guard lock(blas_mu_);
    return gpu::matmul(*blas_, p, op);
  }

  // A binary op on the compute stream whose data may hold errors (integer division by zero,
  // negative integer exponents): the kernel sets the device word, and the check waits for it.
  status checked_binary(gpu::binary_params p) {
    std::lock_guard lock(blas_mu_);
    p.error_word = error_word_;
    if (auto s = gpu::binary(compute, p); !s.ok()) return s;
    return gpu::read_error_bits(compute, error_word_, gpu::to_string(p.op));
  }

 private:
  explicit cuda_streams(int ordinal, gpu::stream c, gpu::stream h2d, gpu::stream d2h)
      : compute(std::move(c)), host_to_device(std::move(h2d)), device_to_host(std::move(d2h)), ordinal_(ordinal) {}

  static result<std::shared_ptr<cuda_streams>> make(int ordinal) {
    auto c = gpu::stream::create(ordinal);
    if (!c.ok()) return c.status();
    auto h2d = gpu::stream::create(ordinal);
    if (!h2d.ok()) return h2d.status();
    auto d2h = gpu::stream::create(ordinal);
    if (!d2h.ok()) return d2h.status();
    std::shared_ptr<cuda_streams> g(new cuda_streams(ordinal, std::move(c).value(), std::move(h2d).value(),
                                                     std::move(d2h).value()));
    auto bytes = gpu::recommended_workspace(ordinal);
    if (!bytes.ok()) return bytes.status();
    auto workspace = gpu::device_alloc(ordinal, *bytes);
    if (!workspace.ok()) return workspace.status();
    g->workspace_ = *workspace;
    auto blas = gpu::blas_context::create(g->compute, g->workspace_, *bytes);
    if (!blas.ok()) return blas.status();
    g->blas_ = std::make_unique<gpu::blas_context>(std::move(blas).value());
    auto word = gpu::device_alloc(ordinal, sizeof(unsigned));
    if (!word.ok()) return word.status();
    g->error_word_ = static_cast<unsigned*>(*word);
    if (auto s = gpu::set_async(g->compute, g->error_word_, 0, sizeof(unsigned)); !s.ok()) return s;
    g->completions_ = std::make_shared<detail::cuda_completions>();
    return g;
  }

  int ordinal_;
  std::shared_ptr<detail::cuda_completions> completions_;
  std::mutex blas_mu_;
  std::unique_ptr<gpu::blas_context> blas_;
  void* workspace_ = nullptr;
  unsigned* error_word_ = nullptr;
};

} // namespace typeflow
