// SPDX-License-Identifier: Apache-2.0
// The body of the model examples: build the session, load the deterministic weights, run the
// graph 11 times, and print the top-1 classes, the difference from the hand-written Eigen network
// and the median latency. Exits 1 when the two disagree by more than 1e-4.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models.hpp"

namespace models {

template <class Model, class Device>
int run(Device& device, std::int64_t batch) {
  const typename Model::weights w;
  tf::session s(tf::graph(Model::y), device);
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
  const double diff = max_abs_diff(y, reference(device.eigen(), x, w));

  std::printf("top-1:");
  for (int c : top1(y)) std::printf(" %d", c);
  std::printf("\nmax |typeflow - Eigen| = %.3g\nlatency: %.1f us (median of %zu runs, batch %lld, %d thread%s)\n", diff,
              micros[micros.size() / 2], micros.size(), static_cast<long long>(batch), device.num_threads(),
              device.num_threads() == 1 ? "" : "s");
  return diff <= 1e-4 ? 0 : 1;
}

// The example's command line: [BATCH] [--threads N].
template <class Model>
int example_main(int argc, char** argv) {
  std::int64_t batch = 4;
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos) batch = std::atoll(a.c_str());
    else {
      std::fprintf(stderr, "usage: %s [BATCH] [--threads N]\n", Model::name);
      return 2;
    }
  }
  if (batch < 1 || threads < 1) {
    std::fprintf(stderr, "%s: BATCH and N must be at least 1\n", Model::name);
    return 2;
  }
  if (threads == 1) {
    tf::cpu device;
    return run<Model>(device, batch);
  }
  tf::thread_pool device(threads);
  return run<Model>(device, batch);
}

}  // namespace models
