// SPDX-License-Identifier: Apache-2.0
// cuda_streams: the streams of one GPU, shared by every cuda policy object for it (TensorFlow's
// GPUDevice stream group): a compute stream for kernels, one for each copy direction, the cuBLASLt
// context of the compute stream with its workspace, and the completion of copies: a thread polls each
// copy's event and hands its done callback, once the event has passed, to four callback threads
// (TensorFlow's EventMgr). Callbacks finish in any order, may launch CUDA work (which a CUDA host
// function may not), and may wait on other copies of the same GPU (up to four deep).
#pragma once

#include <typeflow/fwd.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <set>
#include <vector>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/blas.hpp>
#include <typeflow/device/cuda_branches.hpp>
#include <typeflow/cuda/dnn.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow {

namespace detail {

// The events of pending copies and their callbacks. Shared by the group and its own threads, so that
// the group may be destroyed on one of them (its last owner released by a callback).
//
// Each callback gets a ticket, in the order copies were added. A poller thread sweeps the pending
// events and queues the callback of each that has passed (or failed), in any order; callback threads
// run them. drain() waits for the tickets issued before it.
class cuda_completions {
 public:
  static constexpr int callback_threads = 4;

  cuda_completions() {
    for (int i = 0; i < callback_threads; ++i) workers_.emplace_back([this] { run_callbacks(); });
    poller_ = std::thread([this] { poll(); });
  }
  cuda_completions(const cuda_completions&) = delete;
  cuda_completions& operator=(const cuda_completions&) = delete;
  ~cuda_completions() { stop(); }

  // Queues done(status) for when `after` has passed. done is called exactly once (with an error
  // when the entry cannot even be queued).
  void add(gpu::event after, std::function<void(status)> done) {
    std::unique_lock lock(mu_);
    try {
      // emplace: the node is allocated before `done` is moved, so a failure leaves it to call.
      pending_.emplace_back(std::move(after), std::move(done), issued_ + 1);
      ++issued_;
      outstanding_.insert(issued_);
      if (in_callback()) last_from_callback_ = issued_;
    } catch (...) {
      lock.unlock();
      if (done) done(errors::resource_exhausted("cannot queue a copy's completion: out of host memory"));
      return;
    }
    lock.unlock();
    wake_.notify_one();
  }

  // The last ticket issued, and the last issued by a callback (synchronize repeats for those).
  std::pair<std::uint64_t, std::uint64_t> tickets() {
    std::lock_guard lock(mu_);
    return {issued_, last_from_callback_};
  }

  // Waits until the callback of every ticket up to `upto` has finished; from a callback thread, until
  // each has started (two callbacks draining could otherwise wait for each other).
  void drain(std::uint64_t upto) {
    std::unique_lock lock(mu_);
    if (in_callback())
      idle_.wait(lock, [&] { return pending_.empty() || pending_.front().ticket > upto; });  // in ticket order
    else
      idle_.wait(lock, [&] { return outstanding_.empty() || *outstanding_.begin() > upto; });
  }

  // Stops the threads once every pending event has passed and every callback has run.
  void stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    if (poller_.joinable()) poller_.join();
    {
      std::lock_guard lock(mu_);
      poller_done_ = true;
    }
    ready_cv_.notify_all();
    for (auto& w : workers_)
      if (w.joinable()) w.join();
  }

  bool on_own_thread() const { return std::this_thread::get_id() == poller_.get_id() || in_callback(); }

 private:
  struct entry {
    gpu::event after;
    std::function<void(status)> done;
    std::uint64_t ticket;
  };
  struct ready_entry {
    std::function<void(status)> done;
    status verdict;
    std::uint64_t ticket;
  };

  static bool& callback_flag() {
    thread_local bool flag = false;
    return flag;
  }
  static bool in_callback() { return callback_flag(); }

  void poll() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      bool any = false;
      for (auto it = pending_.begin(); it != pending_.end();) {
        auto passed = it->after.done();
        if (passed.ok() && !*passed) {
          ++it;
          continue;
        }
        // ready_ is a deque that only grows here; a failed push leaves the entry pending for the
        // next sweep.
        try {
          ready_.emplace_back(std::move(it->done), passed.ok() ? ok_status() : passed.status(), it->ticket);
        } catch (...) {
          ++it;
          continue;
        }
        it = pending_.erase(it);
        any = true;
      }
      if (any) {
        ready_cv_.notify_all();
        idle_.notify_all();
      } else {
        // Nothing passed: back off for a few microseconds before the next sweep.
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(5));
        lock.lock();
      }
    }
  }

  void run_callbacks() {
    callback_flag() = true;
    std::unique_lock lock(mu_);
    for (;;) {
      ready_cv_.wait(lock, [&] { return poller_done_ || !ready_.empty(); });
      if (ready_.empty()) return;  // the poller has stopped and nothing is left
      ready_entry r = std::move(ready_.front());
      ready_.pop_front();
      lock.unlock();
      try {
        if (r.done) r.done(r.verdict);
      } catch (...) {
        // A callback that throws has nowhere to report to; the others still run.
      }
      r.done = nullptr;  // its captures go before the ticket says it finished
      lock.lock();
      outstanding_.erase(r.ticket);
      idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, ready_cv_, idle_;
  std::list<entry> pending_;
  std::deque<ready_entry> ready_;
  std::set<std::uint64_t> outstanding_;
  std::uint64_t issued_ = 0, last_from_callback_ = 0;
  bool stopping_ = false, poller_done_ = false;
  std::vector<std::thread> workers_;
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
      // own stops them once this callback has returned (or, if no thread can be made, they are left
      // running: a leak, not a hang).
      try {
        std::thread([c = completions_] { c->stop(); }).detach();
      } catch (...) {
        (void)new std::shared_ptr<detail::cuda_completions>(completions_);
      }
    }
    completions_.reset();
    dnn_.reset();
    blas_.reset();
    (void)gpu::device_free(ordinal_, workspace_);
    (void)gpu::device_free(ordinal_, error_word_);
  }

  int ordinal() const noexcept { return ordinal_; }

  gpu::stream compute, host_to_device, device_to_host;

  // Calls done(status) on a callback thread once `after` has passed (or failed).
  void when_done(gpu::event after, std::function<void(status)> done) { completions_->add(std::move(after), std::move(done)); }

  // Waits for the streams and for the callbacks of every copy added before the call, again while
  // those callbacks added copies (copies other threads add meanwhile are theirs to wait for); the
  // first error of the streams. From a callback, it waits until those callbacks have started.
  status synchronize() {
    status s;
    std::uint64_t upto = completions_->tickets().first;
    for (;;) {
      s.update(compute.synchronize());
      s.update(host_to_device.synchronize());
      s.update(device_to_host.synchronize());
      completions_->drain(upto);
      const auto [issued, from_callback] = completions_->tickets();
      if (from_callback <= upto) return s;
      upto = issued;
    }
  }

  // The stream this thread's kernels for this GPU go to: a branch of a CUDA-graph session while it
  // runs its steps there (cuda_branches::scope), else the compute stream. Kernels enqueue on it.
  const gpu::stream& current() const noexcept {
    if (const auto* t = detail::launch_target_for(ordinal_)) return t->owner->stream(t->branch);
    return compute;
  }
  // Whether this thread is capturing current() into a CUDA graph: a kernel that must wait for the GPU,
  // or that copies from host memory it does not keep, refuses then (refuse_capture).
  bool capturing() const noexcept {
    const auto* t = detail::launch_target_for(ordinal_);
    return t != nullptr && t->capturing;
  }
  static status refuse_capture(std::string_view op, std::string_view why) {
    return errors::failed_precondition(op, ": cannot be captured into a CUDA graph: ", why,
                                       "; run this graph without tf::cuda_graph");
  }

  // A product on current() (one thread at a time uses a cuBLASLt context).
  status matmul(const gpu::matmul_params& p, std::string_view op) {
    if (const auto* t = detail::launch_target_for(ordinal_)) return t->owner->matmul(*t, p, op);
    std::lock_guard lock(blas_mu_);
    return gpu::matmul(*blas_, p, op);
  }

  // The workspace a convolution on the compute stream needs, and the convolution; one thread at a
  // time uses the cuDNN context, which is made on the first convolution (cudnnCreate loads cuDNN's
  // engines: a program without convolutions never pays for it).
  result<std::size_t> conv2d_workspace(const gpu::conv2d_params& p, std::string_view op) {
    if (const auto* t = detail::launch_target_for(ordinal_)) return t->owner->conv2d_workspace(*t, p, op);
    std::lock_guard lock(dnn_mu_);
    if (auto s = make_dnn(); !s.ok()) return s.with_context(op);
    return gpu::conv2d_workspace(*dnn_, p, op);
  }
  status conv2d(const gpu::conv2d_params& p, void* workspace, std::size_t bytes, std::string_view op) {
    if (const auto* t = detail::launch_target_for(ordinal_)) return t->owner->conv2d(*t, p, workspace, bytes, op);
    std::lock_guard lock(dnn_mu_);
    if (auto s = make_dnn(); !s.ok()) return s.with_context(op);
    return gpu::conv2d(*dnn_, p, workspace, bytes, op);
  }

  // A launch on current() whose data may hold errors (integer division by zero, negative integer
  // exponents, indices out of range): launch(error_word) enqueues a kernel that sets bits in the
  // device word, and the check waits for the verdict. One such launch at a time. A capture cannot
  // wait for the GPU, so it refuses.
  template <class Launch>
  status checked(std::string_view op, Launch&& launch) {
    if (capturing())
      return refuse_capture(op, "its kernel reports errors in its data (integer division by zero, a negative integer "
                                "power, an index outside gather's axis) through a flag the host reads after it, and a "
                                "capture cannot wait for the GPU");
    std::lock_guard lock(checked_mu_);
    if (auto s = launch(error_word_); !s.ok()) return s;
    return gpu::read_error_bits(current(), error_word_, op);
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

  status make_dnn() {
    if (dnn_) return ok_status();
    auto made = gpu::dnn_context::create(compute);
    if (!made.ok()) return made.status();
    dnn_ = std::make_unique<gpu::dnn_context>(std::move(made).value());
    return ok_status();
  }

  int ordinal_;
  std::shared_ptr<detail::cuda_completions> completions_;
  std::mutex blas_mu_, dnn_mu_, checked_mu_;
  std::unique_ptr<gpu::blas_context> blas_;
  std::unique_ptr<gpu::dnn_context> dnn_;
  void* workspace_ = nullptr;
  unsigned* error_word_ = nullptr;
};

} // namespace typeflow
