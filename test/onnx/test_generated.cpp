// SPDX-License-Identifier: Apache-2.0
// The models of test/onnx/models as static graphs: headers and weights written by onnx2cpp at
// build time (this directory's meson.build), compiled here, run on the sequential and the parallel
// static executor and compared with ONNX Runtime's outputs and with the runtime import's.
//   test_onnx_generated MODELS_DIR WEIGHTS_DIR
#include "cnn.hpp"
#include "mlp.hpp"
#include "transformer.hpp"

#include <typeflow/onnx/import.hpp>
#include <typeflow/onnx/tensor_proto.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include <catch2/catch.hpp>  // its implementation and runner: test/unit/catch_impl.cpp

#include "../unit/catch_runner.hpp"

#include <cmath>
#include <memory>
#include <string>

namespace tf = typeflow;

namespace {

std::string models_dir, weights_dir;

// ONNX's own tolerance for its tests: |a - b| <= atol + rtol |b|.
void require_close(const tf::tensor& got, const tf::tensor& want) {
  REQUIRE(got.spec() == want.spec());
  const auto a = got.unchecked_values<const float>();
  const auto b = want.unchecked_values<const float>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(a[i] - b[i]) <= 1e-5 + 1e-4 * std::abs(b[i]));
  }
}

tf::tensor runtime_output(const std::string& name, const tf::tensor& x) {
  auto m = tf::load_onnx(models_dir + "/" + name + "/model.onnx");
  REQUIRE(m.ok());
  auto g = tf::runtime_graph<tf::cpu>::make(m->graph);
  REQUIRE(g.ok());
  tf::cpu device;
  tf::runtime_session<tf::cpu> s(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), device);
  auto y = s.run({{m->inputs[0], x}}, m->outputs);
  REQUIRE(y.ok());
  return (*y)[0];
}

template <class Model>
void check_model(const std::string& name) {
  auto x = tf::load_onnx_tensor(models_dir + "/" + name + "/test_data_set_0/input_0.pb");
  auto want = tf::load_onnx_tensor(models_dir + "/" + name + "/test_data_set_0/output_0.pb");
  REQUIRE(x.ok());
  REQUIRE(want.ok());
  const tf::tensor from_runtime = runtime_output(name, *x);
  const std::string weights = weights_dir + "/" + name + ".safetensors";
  SECTION("sequential") {
    tf::cpu device;
    tf::session s(typename Model::graph{}, device);
    REQUIRE(Model::load_weights(s, weights).ok());
    auto y = s.run(tf::feed(std::get<0>(Model::inputs), *x), tf::fetch(std::get<0>(Model::outputs)));
    REQUIRE(y.ok());
    require_close(std::get<0>(*y).untyped(), *want);
    require_close(std::get<0>(*y).untyped(), from_runtime);
  }
  SECTION("parallel, 2 threads") {
    tf::thread_pool device(2);
    tf::session s(typename Model::graph{}, device, tf::parallel{2});
    REQUIRE(Model::load_weights(s, weights).ok());
    auto y = s.run(tf::feed(std::get<0>(Model::inputs), *x), tf::fetch(std::get<0>(Model::outputs)));
    REQUIRE(y.ok());
    require_close(std::get<0>(*y).untyped(), *want);
  }
}

}  // namespace

TEST_CASE("the generated MLP agrees with ONNX Runtime and the runtime import", "[onnx][generated]") {
  STATIC_REQUIRE(onnx_models::mlp::input_names[0] == "x");
  check_model<onnx_models::mlp>("mlp");
}

TEST_CASE("the generated CNN agrees with ONNX Runtime and the runtime import", "[onnx][generated]") {
  check_model<onnx_models::cnn>("cnn");
}

TEST_CASE("the generated transformer agrees with ONNX Runtime and the runtime import", "[onnx][generated]") {
  check_model<onnx_models::transformer>("transformer");
}

TEST_CASE("load_weights: a missing file or tensor, or a tensor of another shape, is an error naming it", "[onnx][generated][errors]") {
  using model = onnx_models::mlp;
  tf::cpu device;
  tf::session s(model::graph{}, device);
  auto st = model::load_weights(s, weights_dir + "/no-such.safetensors");
  REQUIRE(st.code() == tf::status_code::not_found);
  REQUIRE(st.message().find("no-such.safetensors") != std::string_view::npos);

  auto file = tf::load_safetensors(weights_dir + "/mlp.safetensors");
  REQUIRE(file.ok());
  const std::string missing_name = file->tensors.front().name;
  file->tensors.erase(file->tensors.begin());
  const std::string partial = weights_dir + "/mlp-partial.safetensors";
  REQUIRE(tf::save_safetensors(partial, *file).ok());
  st = model::load_weights(s, partial);
  REQUIRE(st.code() == tf::status_code::not_found);
  REQUIRE(st.message() == "variable '" + missing_name + "' is not in safetensors file '" + partial + "'");

  REQUIRE(file->tensors.front().value.rank() >= 1);
  file->tensors.front().value = *tf::tensor::allocate(tf::dtype::f32, tf::shape{3});
  file->tensors.insert(file->tensors.begin(), {missing_name, *tf::tensor::allocate(tf::dtype::f32, tf::shape{1})});
  REQUIRE(tf::save_safetensors(partial, *file).ok());
  st = model::load_weights(s, partial);
  REQUIRE(st.code() == tf::status_code::invalid_argument);
  REQUIRE(st.message().find("variable '" + missing_name + "': initial value is f32[1]") != std::string_view::npos);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: test_onnx_generated MODELS_DIR WEIGHTS_DIR [catch options]\n");
    return 2;
  }
  models_dir = argv[1];
  weights_dir = argv[2];
  argv[2] = argv[0];
  return tf::test::run_catch(argc - 2, argv + 2);
}
