// SPDX-License-Identifier: Apache-2.0
// remote_device: a device policy for tests whose memory is on the heap but marked as device memory
// ("TEST"), so every copy path, every refusal of a host accessor and every fetch to the host runs
// without a GPU. Its copies run on a thread of its own and complete through their callbacks, as a
// GPU's copy streams do; it counts them. Its kernels are the Eigen CPU kernels of a few ops
// (remote_kernels), f32 only, so a missing kernel on it is easy to provoke.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <string_view>

#include <typeflow/typeflow.hpp>

namespace typeflow::test {

class remote_device {
 public:
  using allocator_type = heap_allocator;
  using family_type = remote_device;
  static constexpr std::string_view device_type = "TEST";
  static constexpr int priority = 10;  // below the CPU devices: used where a node asks for it

  remote_device() : copier_(std::make_unique<Eigen::ThreadPool>(1)) {}
  remote_device(const remote_device&) = delete;
  remote_device& operator=(const remote_device&) = delete;
  ~remote_device() { (void)synchronize(); }

  std::string_view name() const noexcept { return identity_.name(); }
  void set_ordinal(int ordinal) { identity_.set_ordinal(ordinal); }
  int num_threads() const noexcept { return 1; }
  memory_space space() const noexcept { return memory_space::device(device_type, identity_.ordinal()); }

  heap_allocator& allocator() noexcept { return memory_.allocator(); }
  result<tensor> allocate(dtype type, const shape& s) { return memory_.allocate(type, s, name(), space()); }

  const Eigen::DefaultDevice& eigen() const noexcept { return eigen_; }
  template <class F>
  void parallel_for(std::int64_t n, double, F&& f) const {
    if (n > 0) f(std::int64_t{0}, n);
  }

  void copy_from_host(const tensor& src, tensor& dst, copy_done done) {
    ++copies_in;
    enqueue(src, dst, std::move(done), src.space().host_accessible() && dst.space() == space());
  }
  void copy_to_host(const tensor& src, tensor& dst, copy_done done) {
    ++copies_out;
    enqueue(src, dst, std::move(done), src.space() == space() && dst.space().host_accessible());
  }
  void copy_within(const tensor& src, tensor& dst, copy_done done) {
    ++copies_within;
    enqueue(src, dst, std::move(done), src.space() == space() && dst.space() == space());
  }
  status synchronize() {
    while (pending_.load() != 0) std::this_thread::yield();
    return ok_status();
  }

  std::atomic<int> copies_in{0}, copies_out{0}, copies_within{0};
  std::atomic<bool> fail_copies{false};  // every copy ends with unavailable, for the error paths

 private:
  void enqueue(const tensor& src, tensor& dst, copy_done done, bool spaces_ok) {
    if (!spaces_ok)
      return done(errors::invalid_argument(name(), ": a copy between ", src.space(), " and ", dst.space(), " is not this device's"));
    if (src.spec() != dst.spec())
      return done(errors::invalid_argument(name(), ": copy of ", src.spec(), " into ", dst.spec()));
    if (fail_copies) return done(errors::unavailable(name(), ": the copy failed (fail_copies is set)"));
    // Pending until the copy has run and Schedule has returned: the copier's pool still touches
    // its own state after queueing, and the copy's callback may already have let the caller go on
    // to destroy this device.
    pending_ += 2;
    copier_->Schedule([this, s = src, d = dst, done = std::move(done)] {
      if (s.bytes() != 0) std::memcpy(d.data(), s.data(), s.bytes());
      done(ok_status());
      --pending_;
    });
    --pending_;
  }

  Eigen::DefaultDevice eigen_;
  device_memory<heap_allocator> memory_;
  device_identity identity_{device_type};
  std::atomic<int> pending_{0};
  std::unique_ptr<Eigen::ThreadPool> copier_;
};

static_assert(device_policy<remote_device>, "remote_device must satisfy typeflow::device_policy");
static_assert(!blocking_host_copies<remote_device>);

// remote_device with host copies the caller waits for on its own thread (blocking_host_copies, as the
// CUDA policy has): they copy at once and count themselves, never going through the callbacks that
// copies_in and copies_out count. Its kernels are remote_device's (the same family).
class blocking_remote_device : public remote_device {
 public:
  status copy_from_host_blocking(const tensor& src, tensor& dst) {
    ++blocking_in;
    return copy_now(src, dst, src.space().host_accessible() && dst.space() == space());
  }
  status copy_to_host_blocking(const tensor& src, tensor& dst) {
    ++blocking_out;
    return copy_now(src, dst, src.space() == space() && dst.space().host_accessible());
  }

  std::atomic<int> blocking_in{0}, blocking_out{0};

 private:
  status copy_now(const tensor& src, tensor& dst, bool spaces_ok) {
    if (!spaces_ok) return errors::invalid_argument(name(), ": a copy between ", src.space(), " and ", dst.space(), " is not this device's");
    if (src.spec() != dst.spec()) return errors::invalid_argument(name(), ": copy of ", src.spec(), " into ", dst.spec());
    if (fail_copies) return errors::unavailable(name(), ": the copy failed (fail_copies is set)");
    if (src.bytes() != 0) std::memcpy(dst.data(), src.data(), src.bytes());
    return ok_status();
  }
};

static_assert(blocking_host_copies<blocking_remote_device>);

using remote_kernels = kernel_list<
    kernel_family<cpu_kernels::eigen_binary_kernel, ops::add, devices<remote_device>, dtypes<float>>,
    kernel_family<cpu_kernels::eigen_binary_kernel, ops::mul, devices<remote_device>, dtypes<float>>,
    kernel_family<cpu_kernels::eigen_unary_kernel, ops::relu, devices<remote_device>, dtypes<float>>,
    kernel_family<cpu_kernels::eigen_unary_kernel, ops::tanh, devices<remote_device>, dtypes<float>>>;

}  // namespace typeflow::test
