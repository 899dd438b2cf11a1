// SPDX-License-Identifier: Apache-2.0
// The example networks (examples/models.hpp) as static graphs against the same networks written by
// hand against Eigen, checked for agreement: MLP 784-1024-1024-10 and the small CNN, batch 1 and
// 64, on 1 and 2 threads.
#include <typeflow/typeflow.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "../examples/models.hpp"
#include "harness.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using tf::bench::keep;
using tf::static_shape;

namespace {

template <class Model, class Device>
void bench_model(tf::bench::harness& h, Device& device, std::int64_t batch, const std::string& label) {
  const typename Model::weights w;
  tf::session s(tf::graph(Model::y), device);
  (void)Model::initialize(s, w);
  const tf::tensor in = Model::input(batch);
  typename Model::eigen_forward reference(batch);
  auto r = s.run(tf::feed(Model::x, in), tf::fetch(Model::y));
  if (!r.ok() || models::max_abs_diff(std::get<0>(*r).untyped(), reference(device.eigen(), in, w)) > 1e-4)
    std::printf("!! %s disagrees with Eigen\n", label.c_str());
  h.compare(label, "hand-written Eigen", [&] { auto y = s.run(tf::feed(Model::x, in), tf::fetch(Model::y)); keep(y); },
            [&] { keep(reference(device.eigen(), in, w)); }, 11, 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("models", argc, argv);
  {
    tf::cpu device;
    bench_model<models::mlp>(h, device, 1, "MLP batch 1, 1 thread");
    bench_model<models::mlp>(h, device, 64, "MLP batch 64, 1 thread");
    bench_model<models::cnn>(h, device, 1, "CNN batch 1, 1 thread");
    bench_model<models::cnn>(h, device, 64, "CNN batch 64, 1 thread");
  }
  {
    tf::thread_pool device(2);
    bench_model<models::mlp>(h, device, 1, "MLP batch 1, 2 threads");
    bench_model<models::mlp>(h, device, 64, "MLP batch 64, 2 threads");
    bench_model<models::cnn>(h, device, 1, "CNN batch 1, 2 threads");
    bench_model<models::cnn>(h, device, 64, "CNN batch 64, 2 threads");
  }
  return 0;
}
