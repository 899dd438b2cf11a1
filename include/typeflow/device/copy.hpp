// SPDX-License-Identifier: Apache-2.0
// tf::copy(t, from, to): a tensor of device `from` as a new tensor of device `to`, through the
// policies' asynchronous copies (TensorFlow's CopyTensor::ViaDMA):
//   host-readable -> host-readable     one memcpy (a new buffer from `to`'s allocator)
//   host-readable -> device            to.copy_from_host
//   device        -> host-readable     from.copy_to_host
//   device        -> same device       from.copy_within
//   device        -> another device    from.copy_to_host into a host tensor, then to.copy_from_host
// copy_async calls done(status, tensor) once, from any thread. Errors name the tensor and both
// devices. copy, copy_into, to_device and to_host are the waited-for forms (copy for a program, the
// others for sessions and eager calls): through a policy's blocking host copies where it has them
// (blocking_host_copies), else the asynchronous ones, waited for.
#pragma once

#include <typeflow/fwd.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/host_copies.hpp>
#include <typeflow/kernels/kernel.hpp>

namespace typeflow {

using tensor_done = std::function<void(status, tensor)>;

// Copies `src` (a tensor of device `from`, or of host memory) into `dst` (one of device `to`, or of
// host memory; allocated, of src's dtype and shape) by the table above; done(status) once, from any
// thread. Both tensors stay valid until then. What copy_async and a static graph's transfers do.
template <device_policy From, device_policy To>
void copy_into_async(const tensor& src, From& from, tensor& dst, To& to, copy_done done) {
  const bool src_host = src.space().host_accessible(), dst_host = dst.space().host_accessible();
  if (src_host && dst_host) return copy_host_bytes(src, dst, done);
  if (src_host) return to.copy_from_host(src, dst, std::move(done));
  if (dst_host) return from.copy_to_host(src, dst, std::move(done));
  if (static_cast<const void*>(&from) == static_cast<const void*>(&to)) return from.copy_within(src, dst, std::move(done));
  // Neither side reads the other's memory: through the host.
  auto staging = tensor::allocate(src.dtype(), src.shape());
  if (!staging.ok()) return done(staging.status());
  auto host = std::make_shared<tensor>(std::move(*staging));
  from.copy_to_host(src, *host, [host, &dst, &to, done = std::move(done)](status st) {
    if (!st.ok()) return done(std::move(st));
    to.copy_from_host(*host, dst, [host, done](status st2) { done(std::move(st2)); });
  });
}

namespace detail {
// What copy_async and copy check, and the destination they copy into (a new tensor of `to`); the
// errors name the tensor and both devices.
template <device_policy From, device_policy To>
std::string copy_context(const tensor& t, From& from, To& to) {
  return cat("copy of ", t.spec(), " from ", from.name(), " to ", to.name()).str();
}
template <device_policy From, device_policy To>
result<tensor> copy_destination(const tensor& t, From& from, To& to) {
  if (!t.valid()) return errors::invalid_argument(copy_context(t, from, to), ": the tensor has no storage");
  if (!t.space().host_accessible() && !(t.space() == from.space()))
    return errors::invalid_argument(copy_context(t, from, to), ": the tensor is in ", t.space(),
                                    ", not in the source device's ", from.space());
  auto dst = to.allocate(t.dtype(), t.shape());
  if (!dst.ok()) return dst.status().with_context(copy_context(t, from, to));
  return dst;
}
}  // namespace detail

template <device_policy From, device_policy To>
void copy_async(const tensor& t, From& from, To& to, tensor_done done) {
  auto dst = detail::copy_destination(t, from, to);
  if (!dst.ok()) return done(dst.status(), tensor());
  // The destination lives in the callback until the copy is done.
  auto out = std::make_shared<tensor>(std::move(*dst));
  copy_into_async(t, from, *out, to, [out, done, context = detail::copy_context(t, from, to)](status st) {
    if (!st.ok()) return done(st.with_context(context), tensor());
    done(ok_status(), std::move(*out));
  });
}

// Whether device `to` reads tensor t where it is (host memory on a device that keeps its tensors
// in host memory, or t already in to's space): then it is passed, not copied.
template <device_policy To>
bool reads_in_place(const tensor& t, const To& to) {
  return t.space().host_accessible() ? to.space().host_accessible() : t.space() == to.space();
}

// Why `to` cannot be given t at all: t is on another device, and only host memory is copied in.
template <device_policy To>
status unreadable(const tensor& t, const To& to) {
  return errors::invalid_argument("the tensor ", t.spec(), " is in ", t.space(), ", which ", to.name(),
                                  " cannot read; copy it to the host first");
}

// A host tensor into device `to` (no copy when `to` keeps its tensors in host memory and `t` is
// already host-readable: the same buffer). What feeds and constants go through.
template <device_policy To>
void to_device_async(const tensor& t, To& to, tensor_done done) {
  if (reads_in_place(t, to)) return done(ok_status(), t);
  if (!t.space().host_accessible()) return done(unreadable(t, to), tensor());
  auto dst = to.allocate(t.dtype(), t.shape());
  if (!dst.ok()) return done(dst.status(), tensor());
  auto out = std::make_shared<tensor>(std::move(*dst));
  to.copy_from_host(t, *out, [out, done = std::move(done)](status st) {
    if (!st.ok()) return done(std::move(st), tensor());
    done(ok_status(), std::move(*out));
  });
}

// A tensor of device `from` in host memory (the same one when it already is).
template <device_policy From>
void to_host_async(const tensor& t, From& from, tensor_done done) {
  if (t.space().host_accessible()) return done(ok_status(), t);
  auto dst = tensor::allocate(t.dtype(), t.shape());
  if (!dst.ok()) return done(dst.status(), tensor());
  auto out = std::make_shared<tensor>(std::move(*dst));
  from.copy_to_host(t, *out, [out, done = std::move(done)](status st) {
    if (!st.ok()) return done(std::move(st), tensor());
    done(ok_status(), std::move(*out));
  });
}

// A policy whose host copies can also be waited for on the calling thread (the CUDA policy: a stream
// synchronize instead of a completion callback handed between threads).
template <class D>
concept blocking_host_copies = device_policy<D> && requires(D& d, const tensor& src, tensor& dst) {
  { d.copy_from_host_blocking(src, dst) } -> std::same_as<status>;
  { d.copy_to_host_blocking(src, dst) } -> std::same_as<status>;
};

// copy_into_async, waited for: through the policy's blocking copies where it has them. What callers
// that wait anyway use (feeds, fetches, constants, eager inputs).
template <device_policy From, device_policy To>
status copy_into(const tensor& src, From& from, tensor& dst, To& to) {
  const bool src_host = src.space().host_accessible(), dst_host = dst.space().host_accessible();
  if constexpr (blocking_host_copies<To>)
    if (src_host && !dst_host) return to.copy_from_host_blocking(src, dst);
  if constexpr (blocking_host_copies<From>)
    if (!src_host && dst_host) return from.copy_to_host_blocking(src, dst);
  return wait_for_done([&](kernel_done done) { copy_into_async(src, from, dst, to, std::move(done)); });
}

// copy_async, waited for, as copy_into.
template <device_policy From, device_policy To>
result<tensor> copy(const tensor& t, From& from, To& to) {
  auto dst = detail::copy_destination(t, from, to);
  if (!dst.ok()) return dst.status();
  if (auto st = copy_into(t, from, *dst, to); !st.ok()) return st.with_context(detail::copy_context(t, from, to));
  return dst;
}

// to_device_async and to_host_async, waited for, as copy_into.
template <device_policy To>
result<tensor> to_device(const tensor& t, To& to) {
  if (reads_in_place(t, to)) return t;
  if (!t.space().host_accessible()) return unreadable(t, to);
  auto dst = to.allocate(t.dtype(), t.shape());
  if (!dst.ok()) return dst.status();
  if (auto st = copy_into(t, to, *dst, to); !st.ok()) return st;
  return std::move(*dst);
}
template <device_policy From>
result<tensor> to_host(const tensor& t, From& from) {
  if (t.space().host_accessible()) return t;
  auto dst = tensor::allocate(t.dtype(), t.shape());
  if (!dst.ok()) return dst.status();
  if (auto st = copy_into(t, from, *dst, from); !st.ok()) return st;
  return std::move(*dst);
}

} // namespace typeflow
