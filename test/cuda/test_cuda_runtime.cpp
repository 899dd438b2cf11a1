// SPDX-License-Identifier: Apache-2.0
// The runtime shim on a GPU: properties, memory, copies, streams, events, host callbacks, errors.
#include <atomic>
#include <numeric>

#include "gpu_support.hpp"

using namespace gpu_test;
using Catch::Matchers::Contains;
using typeflow::status_code;

TEST_CASE("properties and memory of GPU:0") {
  const auto p = value_of(gpu::properties(0));
  CHECK_FALSE(p.name.empty());
  CHECK(p.compute_major >= 7);
  CHECK(p.multiprocessors > 0);
  CHECK(p.total_memory > 0);
  const auto m = value_of(gpu::memory(0));
  CHECK(m.total == p.total_memory);
  CHECK(m.free <= m.total);
}

TEST_CASE("a copy to the device and back through pinned memory round-trips") {
  auto s = value_of(gpu::stream::create(0));
  constexpr std::size_t n = 1 << 20;
  auto* pinned = static_cast<float*>(value_of(gpu::pinned_alloc(n * sizeof(float))));
  std::iota(pinned, pinned + n, 0.0f);
  device_buffer d(n * sizeof(float)), e(n * sizeof(float));
  REQUIRE_OK(gpu::copy_async(s, d.get(), pinned, n * sizeof(float), gpu::copy_kind::host_to_device));
  REQUIRE_OK(gpu::copy_async(s, e.get(), d.get(), n * sizeof(float), gpu::copy_kind::device_to_device));
  REQUIRE_OK(gpu::set_async(s, d.get(), 0, n * sizeof(float)));
  std::vector<float> back(n);
  REQUIRE_OK(gpu::copy_async(s, back.data(), e.get(), n * sizeof(float), gpu::copy_kind::device_to_host));
  REQUIRE_OK(s.synchronize());
  for (std::size_t i = 0; i < n; i += 4099) REQUIRE(back[i] == static_cast<float>(i));
  CHECK(download<float>(s, d, 16) == std::vector<float>(16, 0.0f));
  REQUIRE_OK(gpu::pinned_free(pinned));
}

TEST_CASE("events order two streams and time them; a host function runs after the work before it") {
  auto producer = value_of(gpu::stream::create(0, gpu::stream::priority::high));
  auto consumer = value_of(gpu::stream::create(0));
  auto start = value_of(gpu::event::create(0, true));
  auto stop = value_of(gpu::event::create(0, true));
  auto ready = value_of(gpu::event::create(0));
  constexpr std::size_t n = 1 << 22;
  device_buffer a(n), b(n);
  REQUIRE_OK(start.record(producer));
  REQUIRE_OK(gpu::set_async(producer, a.get(), 7, n));
  REQUIRE_OK(ready.record(producer));
  REQUIRE_OK(consumer.wait(ready));
  REQUIRE_OK(gpu::copy_async(consumer, b.get(), a.get(), n, gpu::copy_kind::device_to_device));
  REQUIRE_OK(stop.record(producer));
  std::atomic<int> calls{0};
  REQUIRE_OK(consumer.launch_host_func([](void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &calls));
  REQUIRE_OK(consumer.synchronize());
  CHECK(calls.load() == 1);
  CHECK(value_of(consumer.done()));
  REQUIRE_OK(stop.synchronize());
  CHECK(value_of(stop.done()));
  CHECK(value_of(gpu::event::elapsed_ms(start, stop)) >= 0.0f);
  const auto bytes = download<unsigned char>(consumer, b, 64);
  CHECK(bytes == std::vector<unsigned char>(64, 7));
}

TEST_CASE("errors of the runtime name the call, the size and the device") {
  auto huge = gpu::device_alloc(0, std::size_t{1} << 52);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().code() == status_code::resource_exhausted);
  CHECK_THAT(std::string(huge.status().message()), Contains("cudaMalloc") && Contains("4503599627370496 bytes on GPU:0"));
  auto count = value_of(gpu::device_count());
  CHECK(gpu::stream::create(count).status().code() == status_code::invalid_argument);
  auto s = value_of(gpu::stream::create(0));
  CHECK_THAT(std::string(gpu::copy_async(s, nullptr, &count, 4, gpu::copy_kind::host_to_device).message()),
             Contains("the destination is null"));
  CHECK(gpu::copy_async(s, nullptr, nullptr, 0, gpu::copy_kind::host_to_device).ok());
  auto moved = std::move(s);
  CHECK(s.synchronize().code() == status_code::failed_precondition);  // NOLINT: testing the moved-from state
  CHECK(moved.synchronize().ok());
}
