// SPDX-License-Identifier: Apache-2.0
// The body of the model examples: build the session, load the deterministic weights, run the
// graph 11 times, and print the top-1 classes, the difference from the hand-written Eigen network
// and the median latency. Exits 1 when the two disagree by more than 1e-4.
// With --device gpu (a build with libtypeflow_cuda), the whole graph runs on cuda<0>: weights kept on
// the GPU, the input copied in and the output copied back by the session; exits 77 without a GPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models.hpp"

#ifdef TYPEFLOW_HAVE_CUDA
#include <typeflow/kernels/cuda/kernel_list.hpp>
#endif

namespace models {

// Runs the model on `device` (through `Registry`'s kernels) and checks it against the Eigen network
// run on `host` (an Eigen device).
template <class Model, class Registry = tf::default_registry, class Device, class Host>
int run(Device& device, const Host& host, std::int64_t batch, const std::string& where) {
  const typename Model::weights w;
  using graph = decltype(tf::graph(Model::y));
  tf::session<graph, Device, Registry> s(graph{}, device);
  if (auto st = Model::initialize(s, w); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  const tf::tensor x = Model::input(batch);
  typename Model::eigen_forward reference(batch);

  std::vector<double> micros;
  tf::tensor y;
  for (int i = 0; i < 11; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = s.run(tf::feed(Model::x, x), tf::fetch(Model::y));
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().to_string().c_str());
      return 1;
    }
    y = std::get<0>(*r).untyped();
    micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(micros.begin(), micros.end());
  const double diff = max_abs_diff(y, reference(host.eigen(), x, w));

  std::printf("top-1:");
  for (int c : top1(y)) std::printf(" %d", c);
  std::printf("\nmax |typeflow - Eigen| = %.3g\nlatency: %.1f us (median of %zu runs, batch %lld, %s)\n", diff,
              micros[micros.size() / 2], micros.size(), static_cast<long long>(batch), where.c_str());
  return diff <= 1e-4 ? 0 : 1;
}

// --device gpu: the graph on cuda<0>, the reference on the host.
template <class Model>
int run_on_gpu([[maybe_unused]] std::int64_t batch) {
#ifdef TYPEFLOW_HAVE_CUDA
  tf::cuda<0> gpu;
  if (auto st = gpu.available(); !st.ok()) {
    std::printf("%s --device gpu: skipped: %s\n", Model::name, st.to_string().c_str());
    return 77;
  }
  tf::cpu host;
  return run<Model, tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>>(gpu, host, batch, std::string(gpu.name()));
#else
  std::fprintf(stderr, "%s: --device gpu: this build has no libtypeflow_cuda (nvcc was not found)\n", Model::name);
  return 2;
#endif
}

// The example's command line: [BATCH] [--threads N] [--device cpu|gpu].
template <class Model>
int example_main(int argc, char** argv) {
  std::int64_t batch = 4;
  int threads = 1;
  std::string device = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--device" && i + 1 < argc) device = argv[++i];
    else if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos) batch = std::atoll(a.c_str());
    else {
      std::fprintf(stderr, "usage: %s [BATCH] [--threads N] [--device cpu|gpu]\n", Model::name);
      return 2;
    }
  }
  if (batch < 1 || threads < 1) {
    std::fprintf(stderr, "%s: BATCH and N must be at least 1\n", Model::name);
    return 2;
  }
  if (device != "cpu" && device != "gpu") {
    std::fprintf(stderr, "%s: --device is cpu or gpu, not '%s'\n", Model::name, device.c_str());
    return 2;
  }
  if (device == "gpu") return run_on_gpu<Model>(batch);
  if (threads == 1) {
    tf::cpu host;
    return run<Model>(host, host, batch, "1 thread");
  }
  tf::thread_pool pool(threads);
  return run<Model>(pool, pool, batch, std::to_string(threads) + " threads");
}

}  // namespace models
