// SPDX-License-Identifier: Apache-2.0
// memory_space: where a tensor's memory lives (Kokkos' memory space, TensorFlow's AllocatorAttributes
// and the device a Tensor's buffer came from). A small value carried by every tensor:
//   host            ordinary host memory: every host accessor may read it;
//   pinned_host     page-locked host memory (CUDA's staging buffers): host-readable too;
//   device          memory of a device (device type + ordinal, "GPU" 0): the host must not read it.
// Host accessors (tensor::values, at, eigen, clone) refuse a tensor whose space is not host-readable
// with failed_precondition naming the space, and never touch its pointer.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <string_view>

#include <typeflow/core/detail/format.hpp>

namespace typeflow {

enum class memory_kind : std::uint8_t { host, pinned_host, device };

struct memory_space {
  memory_kind kind = memory_kind::host;
  std::uint16_t ordinal = 0;
  // The device type ("GPU") for device memory; a string with static storage (a policy's
  // device_type), empty for host memory.
  std::string_view device_type{};

  static constexpr memory_space host() noexcept { return {}; }
  static constexpr memory_space pinned_host() noexcept { return {memory_kind::pinned_host, 0, {}}; }
  static constexpr memory_space device(std::string_view type, int ordinal) noexcept {
    return {memory_kind::device, static_cast<std::uint16_t>(ordinal), type};
  }

  // Whether the host may read and write it directly.
  constexpr bool host_accessible() const noexcept { return kind != memory_kind::device; }

  friend constexpr bool operator==(const memory_space& a, const memory_space& b) noexcept {
    return a.kind == b.kind && (a.kind != memory_kind::device || (a.ordinal == b.ordinal && a.device_type == b.device_type));
  }

  // "host", "pinned host", "device memory of TEST:1"
  void append_to(detail::text& out) const {
    switch (kind) {
      case memory_kind::host: out.append("host memory"); return;
      case memory_kind::pinned_host: out.append("pinned host memory"); return;
      case memory_kind::device:
        out.append("device memory of ");
        out.append(device_type);
        out.push_back(':');
        detail::append_int(out, ordinal);
        return;
    }
  }
};

} // namespace typeflow
