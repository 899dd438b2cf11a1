// SPDX-License-Identifier: Apache-2.0
// A downstream program that uses the GPU through libtypeflow_cuda: compiled by a plain C++ compiler
// with only `pkg-config --cflags typeflow-cuda` (no CUDA include path, no nvcc), linked with
// `pkg-config --libs typeflow-cuda`. Without a device it says so and succeeds, as a program should.
#include <cstdio>
#include <vector>

#include <typeflow/cuda/blas.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace gpu = typeflow::gpu;

int main() {
  auto count = gpu::device_count();
  if (!count.ok()) {
    std::fprintf(stderr, "%s\n", count.status().to_string().c_str());
    return 1;
  }
  if (*count == 0) {
    std::printf("no CUDA device: %s\n", gpu::unavailable_reason().c_str());
    return 0;
  }
  auto s = gpu::stream::create(0);
  if (!s.ok()) return std::fprintf(stderr, "%s\n", s.status().to_string().c_str()), 1;
  const std::vector<float> a{1, 2, 3, 4}, b{10, 20};
  const std::int64_t a_dims[] = {2, 2}, b_dims[] = {2};
  auto da = gpu::device_alloc(0, sizeof(float) * 4);
  auto db = gpu::device_alloc(0, sizeof(float) * 2);
  if (!da.ok() || !db.ok()) return std::fprintf(stderr, "device_alloc failed\n"), 1;
  std::vector<float> out(4);
  typeflow::status st = gpu::copy_async(*s, *da, a.data(), sizeof(float) * 4, gpu::copy_kind::host_to_device);
  st.update(gpu::copy_async(*s, *db, b.data(), sizeof(float) * 2, gpu::copy_kind::host_to_device));
  st.update(gpu::binary(*s, {.op = gpu::binary_op::add, .type = gpu::elem::f32, .a = *da, .a_dims = a_dims, .b = *db,
                             .b_dims = b_dims, .out = *da, .out_dims = a_dims}));
  st.update(gpu::copy_async(*s, out.data(), *da, sizeof(float) * 4, gpu::copy_kind::device_to_host));
  st.update(s->synchronize());
  st.update(gpu::device_free(0, *da));
  st.update(gpu::device_free(0, *db));
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
  if (out != std::vector<float>{11, 22, 13, 24}) return std::fprintf(stderr, "wrong sum\n"), 1;
  std::printf("[[1, 2], [3, 4]] + [10, 20] on GPU:0 = [[%g, %g], [%g, %g]]\n", out[0], out[1], out[2], out[3]);
  return 0;
}
