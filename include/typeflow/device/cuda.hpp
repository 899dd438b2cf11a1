// SPDX-License-Identifier: Apache-2.0
// basic_cuda<Ordinal, Allocator>: the CUDA device GPU:Ordinal ("/job:localhost/replica:0/task:0/device:GPU:N").
// cuda<N> = basic_cuda<N, bfc_allocator<cuda_device_sub_allocator>>.
//
// Kernels enqueue on the device's compute stream and return (they are cheap for a scheduler: never
// worth a thread hand-off); copies to and from the host run on the copy streams, ordered against the
// compute stream by events, and report through their done callback from the completion thread when
// the bytes have arrived. A caller that waits for a copy anyway (a session's feeds and fetches, an
// eager call's inputs) takes the blocking copies instead (copy_from_host_blocking, through
// tf::copy_into): queued on the compute stream and waited for on the calling thread, with no event
// and no hand-off to the completion threads. A tensor's memory goes back to the pool when its last user is released on
// the host, which is safe for kernels still queued: the next user of that memory is queued behind
// them on the same compute stream (TensorFlow's rule for buffers only the compute stream touches).
// Every policy object for one GPU shares its streams (cuda_streams::of); each has its own pool,
// whose default limit is 90% of the memory free when it is made, so a program makes one cuda<N>
// object per GPU and passes it around (copies of it share the pool).
//
// Sharing a GPU between jobs (Antman, seed 001): set_op_idle_time paces the kernels of one policy
// object (each waited for, then the GPU left idle for a while), and the pool's limit may be raised or
// lowered between steps (allocator().set_memory_limit; a lowered limit gives free regions back with
// cudaFree, which waits for the GPU: do it between steps, not while another thread captures a CUDA
// graph on the same GPU).
//
// Constructible on any machine: without the GPU, allocate, copies and synchronize answer
// failed_precondition with the reason, and nothing is launched. Using it links libtypeflow_cuda.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>

#include <typeflow/core/tensor.hpp>
#include <typeflow/device/cuda_streams.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/memory/bfc_allocator.hpp>
#include <typeflow/memory/cuda_sub_allocator.hpp>
#include <typeflow/memory/device_memory.hpp>
#include <typeflow/memory/fallback_allocator.hpp>

namespace typeflow {

template <int Ordinal, class Allocator>
class basic_cuda;

// The pool of cuda_spilling: GPU memory first, then page-locked host memory when the GPU's pool is
// full (Antman's universal allocator, TensorFlow's GPUVMemAllocator). With unified addressing a
// kernel reads and writes a spilled block through the same pointer, over the bus: slower, not an
// out-of-memory error.
using cuda_spilling_allocator =
    fallback_allocator<bfc_allocator<cuda_device_sub_allocator>, bfc_allocator<cuda_pinned_sub_allocator>>;

// GPU:N with a BFC pool over its device memory.
template <int N = 0>
using cuda = basic_cuda<N, bfc_allocator<cuda_device_sub_allocator>>;

// GPU:N whose pool spills to pinned host memory (cuda_spilling_allocator); allocator().spills() says
// how much did.
template <int N = 0>
using cuda_spilling = basic_cuda<N, cuda_spilling_allocator>;

template <int Ordinal, class Allocator = bfc_allocator<cuda_device_sub_allocator>>
class basic_cuda {
  static_assert(Ordinal >= 0, "basic_cuda<Ordinal>: the GPU's ordinal must be >= 0");

 public:
  using allocator_type = Allocator;
  // Every GPU policy runs the kernels registered for cuda<0>.
  using family_type = cuda<0>;
  static constexpr std::string_view device_type = "GPU";
  static constexpr int ordinal_value = Ordinal;
  static constexpr int priority = 210;  // TensorFlow's GPU device factory: above the CPU's
  // fused_elementwise has a kernel here (kernels/cuda/fused.hpp: one NVRTC-compiled kernel per group).
  static constexpr bool fuses_elementwise = true;

  // The pool over GPU:Ordinal's memory, its limit 90% of the memory free when it is made
  // (TensorFlow's default), growing region by region.
  basic_cuda()
    requires std::same_as<Allocator, bfc_allocator<cuda_device_sub_allocator>>
      : basic_cuda(std::in_place, default_options(), std::in_place, Ordinal) {}

  // cuda_spilling: the device pool as cuda<N>'s (or at most `device_limit` bytes, when given),
  // spilling to a pool of at most `host_limit` bytes of pinned host memory.
  explicit basic_cuda(std::size_t host_limit, std::size_t device_limit = 0)
    requires std::same_as<Allocator, cuda_spilling_allocator>
      : basic_cuda(std::in_place, std::piecewise_construct,
                   std::forward_as_tuple(device_limit == 0 ? default_options() : bfc_options{.memory_limit = device_limit},
                                         std::in_place, Ordinal),
                   std::forward_as_tuple(bfc_options{.memory_limit = host_limit})) {}

  // The allocator built from `allocator_args`.
  template <class... Args>
  explicit basic_cuda(std::in_place_t, Args&&... allocator_args)
      : memory_(std::in_place, std::forward<Args>(allocator_args)...), name_(device_name::full(device_type, Ordinal)) {
    auto group = cuda_streams::of(Ordinal);
    if (group.ok()) streams_ = std::move(group).value();
    else unavailable_ = group.status();
  }

  std::string_view name() const noexcept { return name_; }
  int ordinal() const noexcept { return Ordinal; }
  int num_threads() const noexcept { return 1; }
  memory_space space() const noexcept { return memory_space::device(device_type, Ordinal); }

  // ok when the GPU is there; else why not (failed_precondition: no device; invalid_argument: no
  // such ordinal).
  const status& available() const noexcept { return unavailable_; }

  Allocator& allocator() noexcept { return memory_.allocator(); }
  const Allocator& allocator() const noexcept { return memory_.allocator(); }

  result<tensor> allocate(dtype type, const shape& s) {
    if (!unavailable_.ok())
      return status(unavailable_.code(), detail::cat("cannot allocate ", name_of(type), s, " on ", name_, ": ",
                                                     unavailable_.message()));
    auto t = memory_.allocate(type, s, name_, space());
    // A CUDA-graph session's steps, on a stream of their own, keep what they allocate until their
    // work is joined, and start after the compute stream's work that may still use the block
    // (cuda_branches).
    if (auto* target = detail::launch_target_for(Ordinal); t.ok() && target != nullptr) {
      if (auto st = target->owner->after_compute(*target, streams_->compute); !st.ok()) return st.with_context(name_);
      if (target->hold != nullptr) {
        try {
          target->hold->push_back(*t);
        } catch (...) {
          return errors::resource_exhausted("cannot keep ", name_of(type), s, " on ", name_,
                                            " for a CUDA graph's steps: out of host memory");
        }
      }
    }
    return t;
  }

  // The streams kernels enqueue on (precondition: available()); they launch on streams().current().
  cuda_streams& streams() noexcept { return *streams_; }

  void copy_from_host(const tensor& src, tensor& dst, copy_done done) {
    if (auto s = check_copy("copy_from_host", src, dst, src.space().host_accessible(), dst.space() == space()); !s.ok())
      return done(s);
    copy(streams_->host_to_device, src, dst, gpu::copy_kind::host_to_device, std::move(done));
  }
  void copy_to_host(const tensor& src, tensor& dst, copy_done done) {
    if (auto s = check_copy("copy_to_host", src, dst, src.space() == space(), dst.space().host_accessible()); !s.ok())
      return done(s);
    copy(streams_->device_to_host, src, dst, gpu::copy_kind::device_to_host, std::move(done));
  }
  void copy_within(const tensor& src, tensor& dst, copy_done done) {
    if (auto s = check_copy("copy_within", src, dst, src.space() == space(), dst.space() == space()); !s.ok())
      return done(s);
    copy(streams_->compute, src, dst, gpu::copy_kind::device_to_device, std::move(done));
  }

  // The same copies for a caller that waits for them anyway (a session's feeds and fetches, an eager
  // call's inputs): queued on the compute stream behind its work and waited for on this thread, with
  // no events and no completion callback (whose two thread hand-offs cost a GPU session's run about
  // as much as its kernels at batch 1). While this thread captures a CUDA graph or runs a branch of
  // one, they go the asynchronous way above and are waited for.
  status copy_from_host_blocking(const tensor& src, tensor& dst) {
    return copy_blocking("copy_from_host", src, dst, src.space().host_accessible(), dst.space() == space(),
                         gpu::copy_kind::host_to_device);
  }
  status copy_to_host_blocking(const tensor& src, tensor& dst) {
    return copy_blocking("copy_to_host", src, dst, src.space() == space(), dst.space().host_accessible(),
                         gpu::copy_kind::device_to_host);
  }

  // Antman's GPU op queue (seed 001), for a job that shares the GPU with another: with an op idle
  // time set, each kernel this policy object (and its copies) runs is waited for, and the GPU is left
  // to other work for the idle time before the next kernel is launched; a session run as a CUDA graph
  // waits after each replay. It may be changed from any thread while sessions run; 0 (the default)
  // turns it off. Nothing waits while a CUDA graph is being captured.
  void set_op_idle_time(std::chrono::nanoseconds idle) noexcept {
    if (idle_ns_) idle_ns_->store(std::max<std::int64_t>(0, idle.count()), std::memory_order_relaxed);
  }
  std::chrono::nanoseconds op_idle_time() const noexcept {
    return std::chrono::nanoseconds(idle_ns_ ? idle_ns_->load(std::memory_order_relaxed) : 0);
  }
  // What launch() calls after each kernel (runtime/launch.hpp): the pacing above, on the stream the
  // kernel went to.
  status after_kernel() { return unavailable_.ok() ? pace(streams_->current()) : ok_status(); }
  // The pacing after work on `s`: with an op idle time, waits for `s`, then for the idle time.
  status pace(const gpu::stream& s) {
    const std::chrono::nanoseconds idle = op_idle_time();
    if (idle.count() == 0 || !unavailable_.ok() || streams_->capturing()) return ok_status();
    if (auto st = s.synchronize(); !st.ok()) return st.with_context(name_);
    std::this_thread::sleep_for(idle);
    return ok_status();
  }

  // Waits for the compute and copy streams and for every copy's callback (again while callbacks
  // enqueue more); their first error.
  status synchronize() {
    if (!unavailable_.ok()) return unavailable_.with_context(name_);
    return streams_->synchronize().with_context(name_);
  }

 private:
  static bfc_options default_options() {
    bfc_options o;
    if (auto m = gpu::memory(Ordinal); m.ok()) o.memory_limit = m->free / 10 * 9;
    return o;
  }

  status check_copy(std::string_view what, const tensor& src, const tensor& dst, bool src_ok, bool dst_ok) const {
    if (!unavailable_.ok()) return unavailable_.with_context(detail::cat(name_, ": ", what).view());
    if (!src_ok || !dst_ok)
      return errors::invalid_argument(name_, ": ", what, " from ", src.space(), " into ", dst.space(),
                                      " is not a copy of this device");
    if (src.spec() != dst.spec())
      return errors::invalid_argument(name_, ": ", what, " of ", src.spec(), " into ", dst.spec());
    return ok_status();
  }

  status copy_blocking(std::string_view what, const tensor& src, tensor& dst, bool src_ok, bool dst_ok,
                       gpu::copy_kind kind) {
    if (auto s = check_copy(what, src, dst, src_ok, dst_ok); !s.ok()) return s;
    cuda_streams& g = *streams_;
    if (&g.current() != &g.compute || g.capturing()) {
      gpu::stream& on = kind == gpu::copy_kind::host_to_device ? g.host_to_device : g.device_to_host;
      return wait_for_done([&](kernel_done done) { copy(on, src, dst, kind, std::move(done)); });
    }
    if (auto s = gpu::copy_async(g.compute, dst.data(), src.data(), src.bytes(), kind); !s.ok()) {
      (void)g.compute.synchronize();
      return s.with_context(name_);
    }
    return g.compute.synchronize().with_context(name_);
  }

  // The copy on `on`, after the compute stream's work so far (a pooled destination may still be
  // read by queued kernels, a source still be written); the compute stream's later work waits for it.
  void copy(gpu::stream& on, const tensor& src, tensor& dst, gpu::copy_kind kind, copy_done done) {
    cuda_streams& g = *streams_;
    const auto fail = [&](const status& s) { done(s.with_context(name_)); };
    if (&on != &g.compute) {
      auto before = gpu::event::create(Ordinal);
      if (!before.ok()) return fail(before.status());
      if (auto s = before->record(g.compute); !s.ok()) return fail(s);
      if (auto s = on.wait(*before); !s.ok()) return fail(s);
    }
    if (auto s = gpu::copy_async(on, dst.data(), src.data(), src.bytes(), kind); !s.ok()) return fail(s);
    // From here the copy is queued: a failure waits for it before the caller may free the tensors.
    const auto fail_queued = [&](const status& s) {
      (void)on.synchronize();
      fail(s);
    };
    auto after = gpu::event::create(Ordinal);
    if (!after.ok()) return fail_queued(after.status());
    if (auto s = after->record(on); !s.ok()) return fail_queued(s);
    if (&on != &g.compute) {
      if (auto s = g.compute.wait(*after); !s.ok()) return fail_queued(s);
    }
    // The tensors stay alive until done (the caller's promise), so the copy never reads freed memory.
    g.when_done(std::move(after).value(), [name = name_, done = std::move(done)](status s) {
      done(s.with_context(name));
    });
  }

  device_memory<Allocator> memory_;
  std::string name_;
  std::shared_ptr<cuda_streams> streams_;
  status unavailable_;
  std::shared_ptr<std::atomic<std::int64_t>> idle_ns_ = std::make_shared<std::atomic<std::int64_t>>(0);
};

static_assert(device_policy<cuda<0>>, "typeflow::cuda<0> must satisfy typeflow::device_policy");
static_assert(device_policy<cuda_spilling<0>>, "typeflow::cuda_spilling<0> must satisfy typeflow::device_policy");

} // namespace typeflow
