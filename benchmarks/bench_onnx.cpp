// SPDX-License-Identifier: Apache-2.0
// ONNX models two ways: imported (tf::load_onnx) and run by the runtime session, against the same
// model written by onnx2cpp as a static graph and run by the static session, on the same weights
// and inputs (checked to agree first). The CNN (ResNet-style, batch norm folded) and the 2-layer
// transformer encoder of test/onnx/models, batch 1 and 8, 1 and 2 threads (an Eigen thread pool
// for the kernels on both sides; the executors run the steps in order). The ratio is runtime /
// static: what building the graph at run time costs against building it at compile time.
#include "harness.hpp"

#include "cnn.hpp"
#include "transformer.hpp"

#include <typeflow/onnx/import.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

namespace tf = typeflow;
using tf::bench::keep;

namespace {

tf::tensor random_input(const tf::shape& s) {
  auto t = *tf::tensor::allocate(tf::dtype::f32, s);
  std::mt19937 rng(7);
  std::normal_distribution<float> d;
  for (float& v : t.unchecked_values<float>()) v = d(rng);
  return t;
}

template <class Model, class Device>
int run_model(tf::bench::harness& h, const std::string& name, Device& device, int threads, std::int64_t batch) {
  auto m = tf::load_onnx(std::string(TYPEFLOW_ONNX_MODELS_DIR) + "/" + name + "/model.onnx");
  if (!m.ok()) return std::fprintf(stderr, "%s\n", m.status().to_string().c_str()), 1;
  auto g = tf::runtime_graph<Device>::make(m->graph);
  if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().to_string().c_str()), 1;
  tf::runtime_session<Device> runtime(std::make_shared<const tf::runtime_graph<Device>>(std::move(*g)), device);

  tf::session fixed(typename Model::graph{}, device);
  if (auto st = Model::load_weights(fixed, std::string(TYPEFLOW_ONNX_WEIGHTS_DIR) + "/" + name + ".safetensors"); !st.ok())
    return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;

  constexpr auto in_spec = std::remove_cvref_t<decltype(std::get<0>(Model::inputs))>::spec;
  tf::shape s = in_spec.dims;
  s[0] = batch;
  const tf::tensor x = random_input(s);
  const std::vector<std::pair<std::string, tf::tensor>> feeds{{m->inputs[0], x}};
  auto a = runtime.run(feeds, m->outputs);
  auto b = fixed.run(tf::feed(std::get<0>(Model::inputs), x), tf::fetch(std::get<0>(Model::outputs)));
  if (!a.ok() || !b.ok()) return std::fprintf(stderr, "%s: a run failed\n", name.c_str()), 1;
  const auto ya = (*a)[0].template unchecked_values<const float>();
  const auto yb = std::get<0>(*b).untyped().template unchecked_values<const float>();
  for (std::size_t i = 0; i < ya.size(); ++i)
    if (std::abs(ya[i] - yb[i]) > 1e-4f + 1e-4f * std::abs(yb[i]))
      return std::fprintf(stderr, "%s: runtime and static differ at %zu: %g vs %g\n", name.c_str(), i, ya[i], yb[i]), 1;

  const std::string label = name + " batch " + std::to_string(batch) + ", " + std::to_string(threads) + " thread" +
                            (threads == 1 ? "" : "s");
  h.compare(label, "static graph (onnx2cpp)", [&] { auto y = runtime.run(feeds, m->outputs); keep(y); },
            [&] { auto y = fixed.run(tf::feed(std::get<0>(Model::inputs), x), tf::fetch(std::get<0>(Model::outputs))); keep(y); },
            21, 1.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("onnx", argc, argv);
  int failed = 0;
  for (std::int64_t batch : {1, 8}) {
    tf::cpu one;
    failed += run_model<onnx_models::cnn>(h, "cnn", one, 1, batch);
    failed += run_model<onnx_models::transformer>(h, "transformer", one, 1, batch);
    tf::thread_pool two(2);
    failed += run_model<onnx_models::cnn>(h, "cnn", two, 2, batch);
    failed += run_model<onnx_models::transformer>(h, "transformer", two, 2, batch);
  }
  return failed == 0 ? 0 : 1;
}
