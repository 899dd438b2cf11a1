// SPDX-License-Identifier: Apache-2.0
// The registry of the placement tests: remote_device's few kernels, the probe op (identity that
// sleeps, and fails when asked, for the failure and cancellation tests) and the CPU kernels.
// Its kernel tables are instantiated once, in test/kernels/test_kernels.cpp (extern here), not in
// every test that includes this.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <thread>
#include <tuple>

#include <typeflow/typeflow.hpp>

#include "remote_device.hpp"

namespace typeflow::test {

struct probe {
  static constexpr std::string_view name = "probe";
  static constexpr int num_inputs = 1;
  std::int64_t sleep_ms = 0;
  bool fail = false;
  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const { return in[0]; }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return in[0]; }
  // Ops compare by value; no test compares two, and Clang 19 warns of an unused function.
  [[maybe_unused]] friend constexpr bool operator==(const probe&, const probe&) = default;
};

template <class Op, class Device, class T>
struct probe_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;
  static status compute(const Op& op, kernel_context<Device>& ctx) {
    std::this_thread::sleep_for(std::chrono::milliseconds(op.sleep_ms));
    if (op.fail) return errors::unavailable("probe failed on purpose");
    std::memcpy(ctx.outputs[0].data(), ctx.inputs[0].data(), ctx.inputs[0].bytes());
    return ok_status();
  }
};

using probe_kernels = kernel_list<kernel_family<probe_kernel, probe, devices<cpu, thread_pool>, dtypes<float>>>;

using placement_registry = registry<remote_kernels, probe_kernels, cpu_kernel_list>;

}  // namespace typeflow::test

template <>
inline constexpr auto typeflow::op_attributes<typeflow::test::probe> = std::tuple{
    typeflow::attribute<"sleep_ms", &typeflow::test::probe::sleep_ms>{}, typeflow::attribute<"fail", &typeflow::test::probe::fail>{}};

extern template const typeflow::kernel_table<typeflow::cpu>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::cpu>();
extern template const typeflow::kernel_table<typeflow::thread_pool>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::thread_pool>();
extern template const typeflow::kernel_table<typeflow::test::remote_device>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::test::remote_device>();
