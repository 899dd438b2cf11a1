// SPDX-License-Identifier: Apache-2.0
// Catch2's main for the GPU tests: without a CUDA device the executable says why and exits 77, which
// Meson's test harness reports as skipped. Catch2's implementation is test/unit/catch_impl.cpp.
#include "../unit/catch_runner.hpp"

#include <cstdio>

#include <typeflow/cuda/runtime.hpp>

int main(int argc, char* argv[]) {
  auto count = typeflow::gpu::device_count();
  if (!count.ok()) {
    std::fprintf(stderr, "CUDA error: %s\n", count.status().to_string().c_str());
    return 1;
  }
  if (*count == 0) {
    std::printf("skipped: no CUDA device (%s)\n", typeflow::gpu::unavailable_reason().c_str());
    return 77;
  }
  auto props = typeflow::gpu::properties(0);
  if (props.ok())
    std::printf("GPU:0 is %s (sm_%d%d, %zu MiB)\n", props->name.c_str(), props->compute_major, props->compute_minor,
                props->total_memory >> 20);
  return typeflow::test::run_catch(argc, argv);
}
