// SPDX-License-Identifier: Apache-2.0
// host_copies: the memory side of a device policy whose tensors are in host memory (basic_cpu,
// basic_thread_pool): its memory space is the host, and the device_policy copies are memcpy, done
// before they return.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstring>
#include <utility>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/memory_space.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/device.hpp>

namespace typeflow {

// Copies the bytes of `src` into `dst` (same dtype and shape) and reports through done. Checks
// that both are host-readable and of one spec; an error names both.
inline void copy_host_bytes(const tensor& src, tensor& dst, const copy_done& done) {
  if (src.spec() != dst.spec())
    return done(errors::invalid_argument("copy: source ", src.spec(), " and destination ", dst.spec(), " differ"));
  if (auto st = src.check_host_access(); !st.ok()) return done(st.with_context("copy: source"));
  if (auto st = dst.check_host_access(); !st.ok()) return done(st.with_context("copy: destination"));
  if (src.bytes() != 0 && src.data() != dst.data()) std::memcpy(dst.data(), src.data(), src.bytes());
  done(ok_status());
}

class host_copies {
 public:
  static constexpr memory_space space() noexcept { return memory_space::host(); }
  void copy_from_host(const tensor& src, tensor& dst, const copy_done& done) { copy_host_bytes(src, dst, done); }
  void copy_to_host(const tensor& src, tensor& dst, const copy_done& done) { copy_host_bytes(src, dst, done); }
  void copy_within(const tensor& src, tensor& dst, const copy_done& done) { copy_host_bytes(src, dst, done); }
  status synchronize() { return ok_status(); }
};

} // namespace typeflow
