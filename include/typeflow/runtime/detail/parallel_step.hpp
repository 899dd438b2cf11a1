// SPDX-License-Identifier: Apache-2.0
// TensorFlow's ExecutorState scheduling, shared by the runtime executor and the static parallel
// executor: what one step does with a DAG of nodes, whatever the nodes compute.
//  - step_dag: successor lists (one array of edges with offsets per node), initial pending counts,
//    the roots and which nodes are expensive. The static executor's are compile-time arrays; the
//    runtime executor makes them once per signature.
//  - parallel_step<Body>: one run. Pending counts are atomics; the roots are the first ready set.
//    Scheduling is TensorFlow's ScheduleReady: a thread runs every cheap ready node itself, in
//    order; a pool thread keeps one expensive node when it has no cheap work, and other expensive
//    nodes go to the inter-op pool (the calling thread runs cheap nodes only, so a pool of n
//    threads is n cores of expensive work). A node that goes asynchronous finishes through a completion, which counts
//    its successors down and runs what became ready on the completing thread. The first error is
//    the step's status; later nodes are skipped but still counted down, so the step always ends.
//    The calling thread takes part, then sleeps on a condition variable until the last node ends.
// Body::start(k, status& st, step_completion done) runs node k: it returns true when the node has
// finished (its status in st), or false when it will call done(status) once, from any thread.
// The step does not end while a thread is inside the pool's Schedule for it: Eigen's pool still
// wakes a worker after the task is queued, and that task may end the step, after which the caller
// may destroy the pool (a session's, a device's). ThreadSanitizer found it on a copy thread.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow::detail {

struct step_dag {
  std::span<const std::uint32_t> successor_begin;  // size() + 1 offsets into successors
  std::span<const std::uint32_t> successors;       // one entry per edge (data and control)
  std::span<const std::uint32_t> pending;          // in-edges of each node
  std::span<const std::uint32_t> roots;            // the nodes without in-edges, in order
  std::span<const bool> expensive;                 // handed to the pool rather than run inline

  constexpr std::size_t size() const noexcept { return pending.size(); }
  constexpr std::span<const std::uint32_t> successors_of(std::uint32_t k) const noexcept {
    return successors.subspan(successor_begin[k], successor_begin[k + 1] - successor_begin[k]);
  }
};

// A FIFO of ready nodes that keeps its first 16 entries inline (TensorFlow's InlinedVector), so a
// thread running a chain or a small fan-out touches no heap.
class ready_queue {
 public:
  bool empty() const noexcept { return head_ == size_; }
  void push(std::uint32_t k) {
    if (size_ < inline_capacity) {
      inline_[size_++] = k;
      return;
    }
    if (spill_.empty()) spill_.assign(inline_, inline_ + inline_capacity);
    spill_.push_back(k);
    ++size_;
  }
  std::uint32_t pop() noexcept {
    const std::uint32_t k = spill_.empty() ? inline_[head_] : spill_[head_];
    if (++head_ == size_) clear();
    return k;
  }
  void clear() noexcept {
    head_ = size_ = 0;
    spill_.clear();
  }

 private:
  static constexpr std::size_t inline_capacity = 16;
  std::uint32_t inline_[inline_capacity];
  std::vector<std::uint32_t> spill_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

// The steps whose pool Schedule this thread is inside (Eigen's pool runs a task inline when its
// queue is full, and that task may end the step: it must not wait for its own thread).
struct schedule_frame {
  const void* step;
  const schedule_frame* next;
};
inline thread_local const schedule_frame* schedule_frames = nullptr;

// What an asynchronous node calls once when it is done: counts it as finished with `st`. Plain
// data (no allocation), so a body can hand it to an executor-independent callback.
struct step_completion {
  void* step;
  std::uint32_t node;
  void (*finish)(void* step, std::uint32_t node, status st);
  void operator()(status st) const { finish(step, node, std::move(st)); }
};

template <class Body>
class parallel_step {
 public:

  // `pending` holds one counter per node (the caller's storage: a step allocates nothing here).
  parallel_step(const step_dag& dag, Body& body, Eigen::ThreadPoolInterface& pool,
                std::span<std::atomic<std::uint32_t>> pending)
      : dag_(dag), body_(body), pool_(pool), pending_(pending) {}
  parallel_step(const parallel_step&) = delete;
  parallel_step& operator=(const parallel_step&) = delete;

  // Runs the step to its end on this thread and the pool; the first error, or ok.
  status run() {
    if (dag_.roots.empty()) return ok_status();
    begin();
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_; });
    return first_error_;
  }

  // Starts the step and returns once this thread has no more cheap work; the thread that ends the
  // last node calls finished(context, first error or ok) and touches nothing of *this after it.
  // *this must stay alive until then.
  using finished_fn = void (*)(void* context, status st);
  void start(finished_fn finished, void* context) {
    if (dag_.roots.empty()) return finished(context, ok_status());
    finished_ = finished;
    finished_context_ = context;
    begin();
  }

  // Hands fn to the pool; the step does not end before the pool's Schedule has returned. For work
  // of this step only (a body continuing a node on the pool).
  void schedule(std::function<void()> fn) {
    scheduling_.fetch_add(1, std::memory_order_relaxed);  // ordered before the task by the pool's queue
    const schedule_frame frame{this, schedule_frames};
    schedule_frames = &frame;
    pool_.Schedule(std::move(fn));
    schedule_frames = frame.next;
    scheduling_.fetch_sub(1, std::memory_order_release);
  }

  // True once a node has failed: a body may use it to skip work.
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

 private:
  // ScheduleReady: cheap nodes join `inline_ready`. A pool thread (worker) hands all expensive
  // nodes but the last to the pool and keeps that one when it has no cheap work. Any other thread
  // (the caller, a thread completing an asynchronous kernel) hands every expensive node to the
  // pool, so the pool's threads are the ones doing expensive work: a pool of n threads is n cores.
  template <class Nodes>
  void schedule(const Nodes& ready, ready_queue& inline_ready, bool worker) {
    constexpr std::uint32_t none = static_cast<std::uint32_t>(-1);
    std::uint32_t expensive = none;
    for (std::uint32_t k : ready) {
      if (!dag_.expensive[k]) {
        inline_ready.push(k);
        continue;
      }
      if (expensive != none) hand_off(expensive);
      expensive = k;
    }
    if (expensive == none) return;
    if (worker && inline_ready.empty()) inline_ready.push(expensive);
    else hand_off(expensive);
  }

  void hand_off(std::uint32_t k) {
    schedule([this, k] {
      ready_queue ready;
      ready.push(k);
      process_inline(ready, /*worker=*/true);
    });
  }

  // Process: runs the queue's nodes, and those they make ready, until the queue is empty.
  void process_inline(ready_queue& ready, bool worker) {
    while (!ready.empty()) {
      const std::uint32_t k = ready.pop();
      status st;
      if (!failed() && !body_.start(k, st, step_completion{this, k, &finish_async})) continue;  // finishes through async_done
      node_done(k, st, ready, worker);
    }
  }

  // The node has finished: counts its successors down and queues those that are ready. The node
  // leaves the outstanding count as the ready ones join it, in one atomic operation (none for a
  // node that makes exactly one ready, as in a chain). The last node out wakes the caller; nothing
  // here touches *this after that.
  void node_done(std::uint32_t k, const status& st, ready_queue& ready, bool worker) {
    if (!st.ok()) fail(st);
    std::uint32_t made_ready[16];
    std::size_t n = 0;
    for (std::uint32_t c : dag_.successors_of(k)) {
      // A node with one in-edge is made ready by its only predecessor: no atomic needed.
      if (dag_.pending[c] != 1 && pending_[c].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      if (n == std::size(made_ready)) {  // this node stays counted until its last batch
        add_ready(made_ready, n, ready, worker, /*leaving=*/false);
        n = 0;
      }
      made_ready[n++] = c;
    }
    if (n > 0) add_ready(made_ready, n, ready, worker, /*leaving=*/true);
    else finish_one();
  }

  // Counts n ready nodes in (less this node when it is leaving) and schedules them.
  void add_ready(const std::uint32_t* nodes, std::size_t n, ready_queue& ready, bool worker, bool leaving) {
    if (const std::size_t more = leaving ? n - 1 : n; more > 0) outstanding_.fetch_add(more, std::memory_order_relaxed);
    schedule(std::span<const std::uint32_t>(nodes, n), ready, worker);
  }

  // Runs on the thread that completed the node. When nothing became ready the step may already be
  // over (and *this gone), so only the local queue is looked at.
  static void finish_async(void* self, std::uint32_t k, status st) {
    static_cast<parallel_step*>(self)->async_done(k, std::move(st));
  }
  void async_done(std::uint32_t k, status st) {
    ready_queue ready;
    node_done(k, st, ready, /*worker=*/false);
    if (!ready.empty()) process_inline(ready, /*worker=*/false);
  }

  void fail(const status& st) {
    std::lock_guard lock(mutex_);
    if (first_error_.ok()) first_error_ = st;
    failed_.store(true, std::memory_order_release);
  }

  void begin() {
    for (std::size_t k = 0; k < dag_.size(); ++k) pending_[k].store(dag_.pending[k], std::memory_order_relaxed);
    outstanding_.store(dag_.roots.size(), std::memory_order_relaxed);
    ready_queue ready;
    schedule(dag_.roots, ready, /*worker=*/false);
    process_inline(ready, /*worker=*/false);
  }

  void finish_one() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      wait_for_schedulers();
      if (finished_) {
        status st;
        {
          std::lock_guard lock(mutex_);
          st = first_error_;
        }
        return finished_(finished_context_, std::move(st));
      }
      std::lock_guard lock(mutex_);
      done_ = true;
      done_cv_.notify_all();
    }
  }

  // Waits until no other thread is inside the pool's Schedule for this step (a short tail: the
  // task it queued has already run).
  void wait_for_schedulers() const noexcept {
    std::uint32_t own = 0;
    for (const schedule_frame* f = schedule_frames; f != nullptr; f = f->next) own += f->step == this;
    while (scheduling_.load(std::memory_order_acquire) > own) std::this_thread::yield();
  }

  const step_dag& dag_;
  Body& body_;
  Eigen::ThreadPoolInterface& pool_;
  std::span<std::atomic<std::uint32_t>> pending_;
  std::atomic<std::size_t> outstanding_{0};
  std::atomic<std::uint32_t> scheduling_{0};  // threads inside pool_.Schedule for this step
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  status first_error_;
  finished_fn finished_ = nullptr;
  void* finished_context_ = nullptr;
};

}  // namespace typeflow::detail
