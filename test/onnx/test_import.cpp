// SPDX-License-Identifier: Apache-2.0
// The ONNX importer: models built here with ONNX's protobuf classes, imported, run and compared with
// plain references; every refusal (malformed bytes, the checker, an op, attribute, version or dtype
// that cannot be mapped, a bad tensor) is a status naming what was wrong.
#include <typeflow/typeflow.hpp>
#include <typeflow/onnx/import.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace tf = typeflow;

namespace {

void require_error(const tf::status& st, tf::status_code code, std::string_view text) {
  INFO(st.to_string());
  REQUIRE(st.code() == code);
  REQUIRE(st.message().find(text) != std::string_view::npos);
}

// A model of opset `opset` to which a test adds nodes, inputs, outputs and initializers.
struct model_builder {
  onnx::ModelProto m;
  explicit model_builder(int opset = 17) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("g");
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  void value(onnx::ValueInfoProto* v, const std::string& name, int type, std::vector<std::int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto* s = t->mutable_shape();
    for (auto d : dims) {
      if (d < 0) s->add_dim()->set_dim_param("batch");
      else s->add_dim()->set_dim_value(d);
    }
  }
  void input(const std::string& name, std::vector<std::int64_t> dims, int type = onnx::TensorProto::FLOAT) {
    value(g().add_input(), name, type, std::move(dims));
  }
  void output(const std::string& name, std::vector<std::int64_t> dims, int type = onnx::TensorProto::FLOAT) {
    value(g().add_output(), name, type, std::move(dims));
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return *n;
  }
  void floats(const std::string& name, std::vector<std::int64_t> dims, const std::vector<float>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
  }
  void ints(const std::string& name, const std::vector<std::int64_t>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(v.size()));
    for (auto x : v) t->add_int64_data(x);
  }
  tf::result<tf::onnx_model> import() const { return tf::parse_onnx(m.SerializeAsString()); }
};

void set_int(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

tf::result<std::vector<tf::tensor>> run(const tf::onnx_model& m, std::vector<std::pair<std::string, tf::tensor>> feeds,
                                        int threads = 0) {
  auto g = tf::runtime_graph<tf::cpu>::make(m.graph);
  if (!g.ok()) return g.status();
  tf::cpu device;
  tf::runtime_session<tf::cpu> s(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), device, threads);
  return s.run(feeds, m.outputs);
}

}  // namespace

TEST_CASE("an imported MLP computes relu(x W + b) W2, on both executors", "[onnx]") {
  model_builder b;
  const auto w1 = random_floats(4 * 3, 1), b1 = random_floats(3, 2), w2 = random_floats(3 * 2, 3);
  b.input("x", {-1, 4});
  b.floats("w1", {4, 3}, w1);
  b.floats("b1", {3}, b1);
  b.floats("w2", {3, 2}, w2);
  b.node("MatMul", {"x", "w1"}, {"h"});
  b.node("Add", {"h", "b1"}, {"hb"});
  b.node("Relu", {"hb"}, {"r"});
  b.node("MatMul", {"r", "w2"}, {"y:0"});  // a name a graph_def cannot hold
  b.output("y:0", {-1, 2});
  auto m = b.import();
  REQUIRE(m.ok());
  REQUIRE(m->inputs == std::vector<std::string>{"x"});
  REQUIRE(m->outputs == std::vector<std::string>{"y_0"});
  REQUIRE(m->opset == 17);
  const auto x = random_floats(5 * 4, 4);
  std::vector<float> want(5 * 2, 0.0f);
  for (int i = 0; i < 5; ++i) {
    float h[3];
    for (int j = 0; j < 3; ++j) {
      h[j] = b1[j];
      for (int k = 0; k < 4; ++k) h[j] += x[i * 4 + k] * w1[k * 3 + j];
      h[j] = std::max(h[j], 0.0f);
    }
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want[i * 2 + j] += h[k] * w2[k * 2 + j];
  }
  for (int threads : {0, 2}) {
    auto y = run(*m, {{"x", *tf::tensor::from_values<float>(x, tf::shape{5, 4})}}, threads);
    REQUIRE(y.ok());
    REQUIRE((*y)[0].shape() == tf::shape{5, 2});
    for (int i = 0; i < 10; ++i) REQUIRE(static_cast<const float*>((*y)[0].data())[i] == Approx(want[i]).margin(1e-5));
  }
}

TEST_CASE("a constant read only at import leaves no node in the graph", "[onnx]") {
  model_builder b;
  b.input("x", {2, 6});
  b.ints("shape", {3, -1});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", {3, 4});
  auto m = b.import();
  REQUIRE(m.ok());
  REQUIRE(m->graph.nodes.size() == 2);  // the placeholder and the reshape
  REQUIRE(m->graph.nodes[1].op == "reshape");
  REQUIRE(m->graph.nodes[1].attrs.find("shape")->to_string() == "shape[3, ?]");
}

void set_ints(onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

TEST_CASE("a convolution runs on the NCHW image as it lies, padded as same or explicitly", "[onnx]") {
  for (const auto& [pads, padding] : std::vector<std::pair<std::vector<std::int64_t>, std::string>>{
           {{1, 1, 1, 1}, "same"}, {{0, 0, 1, 1}, "explicit"}, {{2, 2, 2, 2}, "explicit"}, {{0, 0, 0, 0}, "valid"}}) {
    model_builder b;
    b.input("x", {-1, 2, 6, 6});
    b.floats("w", {3, 2, 3, 3}, random_floats(54, 5));
    set_ints(b.node("Conv", {"x", "w"}, {"y"}), "pads", pads);
    const std::int64_t out = 6 + pads[0] + pads[2] - 2;
    b.output("y", {-1, 3, out, out});
    auto m = b.import();
    REQUIRE(m.ok());
    // No pad or transpose node: one conv2d in NCHW with the padding.
    int convs = 0;
    for (const auto& n : m->graph.nodes) {
      REQUIRE(n.op != "pad");
      REQUIRE(n.op != "transpose");
      if (n.op != "conv2d") continue;
      ++convs;
      REQUIRE(n.attrs.find("padding")->to_string() == "\"" + padding + "\"");
      REQUIRE(n.attrs.find("data_format")->to_string() == "\"NCHW\"");
    }
    REQUIRE(convs == 1);
    // Against a direct convolution of the zero-padded NCHW image.
    const auto x = random_floats(2 * 6 * 6, 6), w = random_floats(54, 5);
    auto y = run(*m, {{"x", *tf::tensor::from_values<float>(x, tf::shape{1, 2, 6, 6})}});
    REQUIRE(y.ok());
    REQUIRE((*y)[0].shape() == tf::shape{1, 3, out, out});
    const float* got = static_cast<const float*>((*y)[0].data());
    for (std::int64_t o = 0; o < 3; ++o)
      for (std::int64_t i = 0; i < out; ++i)
        for (std::int64_t j = 0; j < out; ++j) {
          double want = 0;
          for (std::int64_t ch = 0; ch < 2; ++ch)
            for (std::int64_t di = 0; di < 3; ++di)
              for (std::int64_t dj = 0; dj < 3; ++dj) {
                const std::int64_t r = i + di - pads[0], q = j + dj - pads[1];
                if (r >= 0 && r < 6 && q >= 0 && q < 6) want += x[(ch * 6 + r) * 6 + q] * w[((o * 2 + ch) * 3 + di) * 3 + dj];
              }
          REQUIRE(got[(o * out + i) * out + j] == Approx(want).margin(1e-4));
        }
  }
}

void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

TEST_CASE("an imported Resize is one resize in NCHW, by scales or by sizes", "[onnx]") {
  // ONNX's upsample_scales_linear: [[1, 2], [3, 4]] to 4x4, bilinear with half-pixel centres.
  const std::vector<float> want = {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4};
  for (const bool by_sizes : {false, true}) {
    model_builder b;
    b.input("x", {1, 1, 2, 2});
    if (by_sizes) b.ints("sizes", {1, 1, 4, 4});
    else b.floats("scales", {4}, {1, 1, 2, 2});
    set_string(b.node("Resize", by_sizes ? std::vector<std::string>{"x", "", "", "sizes"} : std::vector<std::string>{"x", "", "scales"},
                      {"y"}),
               "mode", "linear");
    b.output("y", {1, 1, 4, 4});
    auto m = b.import();
    REQUIRE(m.ok());
    REQUIRE(m->graph.nodes.size() == 2);  // the placeholder and the resize
    const auto& n = m->graph.nodes[1];
    REQUIRE(n.op == "resize");
    REQUIRE(n.attrs.find("data_format")->to_string() == "\"NCHW\"");
    REQUIRE(n.attrs.find("method")->to_string() == "\"bilinear\"");
    REQUIRE(n.attrs.find(by_sizes ? "height" : "scale_h")->to_string() == (by_sizes ? "4" : "2.0"));
    auto y = run(*m, {{"x", *tf::tensor::from_values<float>(std::vector<float>{1, 2, 3, 4}, tf::shape{1, 1, 2, 2})}});
    REQUIRE(y.ok());
    REQUIRE((*y)[0].shape() == tf::shape{1, 1, 4, 4});
    for (int i = 0; i < 16; ++i) REQUIRE(static_cast<const float*>((*y)[0].data())[i] == Approx(want[i]).margin(1e-6));
  }
}

TEST_CASE("malformed files and models are invalid_argument with the reason", "[onnx][errors]") {
  require_error(tf::parse_onnx("\x0a\xff\xff\xff\xff\x0f garbage").status(), tf::status_code::invalid_argument,
                "not a serialized ONNX model");
  model_builder b;
  b.input("x", {2});
  b.node("Relu", {"missing"}, {"y"});
  b.output("y", {2});
  require_error(b.import().status(), tf::status_code::invalid_argument, "the ONNX checker refused the model: ");
  const auto dir = std::filesystem::temp_directory_path();
  require_error(tf::import_onnx(dir.string()).status(), tf::status_code::invalid_argument, "is a directory");
  require_error(tf::import_onnx((dir / "no-such-model.onnx").string()).status(), tf::status_code::not_found,
                "cannot open ONNX model");
}

TEST_CASE("what cannot be mapped is unimplemented, naming the node, its op and what is missing", "[onnx][errors]") {
  {
    model_builder b;
    b.input("x", {2, 2});
    b.node("Trilu", {"x"}, {"y"}, "upper");
    b.output("y", {2, 2});
    require_error(b.import().status(), tf::status_code::unimplemented, "ONNX node 'upper' (Trilu): op type Trilu is not supported");
  }
  {
    model_builder b;
    b.input("x", {1, 4, 5, 5});
    b.floats("w", {4, 2, 3, 3}, random_floats(72, 1));
    set_int(b.node("Conv", {"x", "w"}, {"y"}), "group", 2);
    b.output("y", {1, 4, 3, 3});
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "ONNX node of output 'y' (Conv): group 2 (grouped and depthwise convolution)");
  }
  {
    model_builder b(11);
    b.input("x", {1, 3});
    auto& n = b.node("Squeeze", {"x"}, {"y"});
    auto* a = n.add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(0);
    b.output("y", {3});
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "version 11 of Squeeze (opset 11) predates opset 13; typeflow imports the versions of opsets 13 to 17");
  }
  {
    model_builder b(18);
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"});
    b.output("y", {2});
    require_error(b.import().status(), tf::status_code::unimplemented, "the model uses opset 18; typeflow imports opsets 13 to 17");
  }
  {
    model_builder b;
    b.input("x", {2}, onnx::TensorProto::UINT16);
    b.node("Identity", {"x"}, {"y"});
    b.output("y", {2}, onnx::TensorProto::UINT16);
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "ONNX graph input 'x': element type UINT16 has no typeflow dtype");
  }
  {
    model_builder b;
    b.input("x", {6});
    b.ints("sizes", {2, 2});
    b.node("Split", {"x", "sizes"}, {"a", "b"});
    b.output("a", {2});
    b.output("b", {2});
    require_error(b.import().status(), tf::status_code::invalid_argument,
                  "(Split): split sizes add up to 4; axis 0 of input shape [6] has 6");
  }
  {
    model_builder b;
    b.input("x", {2, 6});
    b.ints("shape", {-2, 3});
    b.node("Reshape", {"x", "shape"}, {"y"});
    b.output("y", {4, 3});
    require_error(b.import().status(), tf::status_code::invalid_argument, "shape entry 0 is -2; only -1 may be negative");
  }
  {
    model_builder b;
    b.input("x", {1, 1, 4, 4});
    set_ints(b.node("MaxPool", {"x"}, {"y"}), "kernel_shape", {0, 2});
    b.output("y", {1, 1, 4, 2});
    require_error(b.import().status(), tf::status_code::invalid_argument,
                  "kernel_shape, strides and dilations must be >= 1, got 0");
  }
  {
    model_builder b;
    b.input("x", {2, 6});
    b.input("shape", {2}, onnx::TensorProto::INT64);
    b.node("Reshape", {"x", "shape"}, {"y"});
    b.output("y", {3, 4});
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "input 1 (shape, 'shape') must be known when the model is imported");
  }
  // Resize: what typeflow's resize cannot do.
  const auto resize_error = [](const std::string& mode, const std::string& transform, std::vector<float> scales,
                               std::int64_t exclude_outside = 0) {
    model_builder b;
    b.input("x", {1, 2, 4, 4});
    b.floats("scales", {static_cast<std::int64_t>(scales.size())}, scales);
    auto& n = b.node("Resize", {"x", "", "scales"}, {"y"}, "up");
    set_string(n, "mode", mode);
    set_string(n, "coordinate_transformation_mode", transform);
    if (exclude_outside != 0) set_int(n, "exclude_outside", exclude_outside);
    b.output("y", {1, 2, 8, 8});
    return b.import().status();
  };
  require_error(resize_error("cubic", "half_pixel", {1, 1, 2, 2}), tf::status_code::unimplemented,
                "ONNX node 'up' (Resize): mode 'cubic' (typeflow resizes by nearest and linear)");
  require_error(resize_error("linear", "tf_crop_and_resize", {1, 1, 2, 2}), tf::status_code::unimplemented,
                "coordinate_transformation_mode 'tf_crop_and_resize' (half_pixel, pytorch_half_pixel, align_corners and "
                "asymmetric are mapped)");
  require_error(resize_error("nearest", "tf_half_pixel_for_nn", {1, 1, 2, 2}), tf::status_code::unimplemented,
                "coordinate_transformation_mode 'tf_half_pixel_for_nn'");
  require_error(resize_error("linear", "half_pixel", {1, 2, 2, 2}), tf::status_code::unimplemented,
                "scales [1, 2, 2, 2] resize the batch or the channels (typeflow resizes height and width)");
  require_error(resize_error("linear", "half_pixel", {1, 1, 2, 2}, 1), tf::status_code::unimplemented, "exclude_outside 1");
  require_error(resize_error("linear", "half_pixel", {}), tf::status_code::invalid_argument,
                "neither scales nor sizes is given; Resize takes one of them");
  {
    model_builder b;
    b.input("x", {-1, 3, 4, 4});
    b.ints("sizes", {1, 3, 8, 8});
    b.node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.output("y", {-1, 3, 8, 8});
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "sizes with the input's batch or channels unknown at import (input shape [?, 3, 4, 4])");
  }
  {
    model_builder b;
    b.input("x", {1, 3, 4, 4});
    b.input("scales", {4});
    b.node("Resize", {"x", "", "scales"}, {"y"});
    b.output("y", {1, 3, 8, 8});
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "input 2 (scales, 'scales') must be known when the model is imported");
  }
  {
    model_builder b;
    b.input("x", {1, 3, 4});
    b.floats("scales", {3}, {1, 1, 2});
    b.node("Resize", {"x", "", "scales"}, {"y"});
    b.output("y", {1, 3, 8});
    require_error(b.import().status(), tf::status_code::unimplemented,
                  "a rank-3 input (typeflow resizes the height and width of NCHW images, rank 4)");
  }
}

TEST_CASE("a bad TensorProto is refused, naming the tensor", "[onnx][errors]") {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(3);
  t.set_raw_data(std::string(20, '\0'));
  require_error(tf::from_onnx_tensor(t, "initializer 'w'").status(), tf::status_code::invalid_argument,
                "initializer 'w': raw_data holds 20 bytes; shape [2, 3] of f32 needs 24");
  t.clear_raw_data();
  t.add_float_data(1.0f);
  require_error(tf::from_onnx_tensor(t, "w").status(), tf::status_code::invalid_argument,
                "float_data holds 1 values; shape [2, 3] has 6 elements");
  t.set_dims(0, -2);
  require_error(tf::from_onnx_tensor(t, "w").status(), tf::status_code::invalid_argument, "dimension 0 is negative (-2)");
  t.set_dims(0, 2);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  require_error(tf::from_onnx_tensor(t, "w").status(), tf::status_code::unimplemented, "external file");
  t.set_data_location(onnx::TensorProto::DEFAULT);
  t.set_data_type(onnx::TensorProto::STRING);
  require_error(tf::from_onnx_tensor(t, "w").status(), tf::status_code::unimplemented, "element type STRING has no typeflow dtype");
  t.set_data_type(99);
  require_error(tf::from_onnx_tensor(t, "w").status(), tf::status_code::invalid_argument, "is not an ONNX data type");

  onnx::TensorProto ok;
  ok.set_data_type(onnx::TensorProto::FLOAT16);
  ok.add_dims(2);
  ok.add_int32_data(0x3c00);  // 1.0
  ok.add_int32_data(0xc000);  // -2.0
  auto h = tf::from_onnx_tensor(ok, "h");
  REQUIRE(h.ok());
  REQUIRE(static_cast<float>(static_cast<const Eigen::half*>(h->data())[1]) == -2.0f);
}

TEST_CASE("GELU written out with Erf imports as one gelu op; a pattern whose inner value is read elsewhere does not", "[onnx]") {
  const auto x = random_floats(24, 7);
  const auto reference = [&](std::size_t i) {
    const double v = x[i];
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  };
  // 0: x / sqrt2, (1 + erf) * x, * 0.5 (PyTorch's export); 1: x * (1 / sqrt2), 1 + erf, (x * 0.5) * (...);
  // 2: as 0, but the erf is a graph output too: not fused.
  for (int variant = 0; variant < 3; ++variant) {
    INFO("variant " << variant);
    model_builder b;
    b.input("x", {2, 12});
    b.floats("half", {}, {0.5f});
    b.floats("one", {}, {1.0f});
    if (variant == 1) {
      b.floats("inv_sqrt2", {}, {static_cast<float>(1 / std::sqrt(2.0))});
      b.node("Mul", {"inv_sqrt2", "x"}, {"scaled"});
      b.node("Erf", {"scaled"}, {"e"});
      b.node("Add", {"one", "e"}, {"a"});
      b.node("Mul", {"x", "half"}, {"h"});
      b.node("Mul", {"a", "h"}, {"y"});
    } else {
      b.floats("sqrt2", {}, {static_cast<float>(std::sqrt(2.0))});
      b.node("Div", {"x", "sqrt2"}, {"scaled"});
      b.node("Erf", {"scaled"}, {"e"});
      b.node("Add", {"e", "one"}, {"a"});
      b.node("Mul", {"a", "x"}, {"m"});
      b.node("Mul", {"m", "half"}, {"y"});
    }
    b.output("y", {2, 12});
    if (variant == 2) b.output("e", {2, 12});
    auto m = b.import();
    REQUIRE(m.ok());
    int gelus = 0, erfs = 0;
    for (const auto& n : m->graph.nodes) {
      gelus += n.op == "gelu";
      erfs += n.op == "erf";
    }
    CHECK(gelus == (variant == 2 ? 0 : 1));
    CHECK(erfs == (variant == 2 ? 1 : 0));
    auto y = run(*m, {{"x", *tf::tensor::from_values<float>(x, tf::shape{2, 12})}});
    REQUIRE(y.ok());
    const float* got = static_cast<const float*>((*y)[0].data());
    for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(got[i] == Approx(reference(i)).margin(1e-6));
  }
}

TEST_CASE("Slice with steps on a dimension unknown at import clamps at run time; Unsqueeze of several axes", "[onnx]") {
  // x [?, 6]: rows [1, 100) step 2 clamped when the graph runs; columns 5 down to 0 step -2
  // resolved at import (5, 3, 1); then axes 0 and 3 inserted: [1, ?, 3, 1].
  model_builder b;
  b.input("x", {-1, 6});
  b.ints("starts", {1, 5});
  b.ints("ends", {100, 0});
  b.ints("axes", {0, 1});
  b.ints("steps", {2, -2});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
  b.ints("new_axes", {0, 3});
  b.node("Unsqueeze", {"s", "new_axes"}, {"y"});
  b.output("y", {1, -1, 3, 1});
  auto m = b.import();
  REQUIRE(m.ok());
  int expands = 0;
  for (const auto& n : m->graph.nodes) {
    expands += n.op == "expand_dims";
    if (n.op == "slice") CHECK(n.attrs.find("clamp")->to_string() == "true");
  }
  CHECK(expands == 2);
  std::vector<float> x(30);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  auto y = run(*m, {{"x", *tf::tensor::from_values<float>(x, tf::shape{5, 6})}});
  REQUIRE(y.ok());
  REQUIRE((*y)[0].shape() == tf::shape{1, 2, 3, 1});
  const float* got = static_cast<const float*>((*y)[0].data());
  const std::vector<float> want{11, 9, 7, 23, 21, 19};  // rows 1 and 3, columns 5, 3, 1
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
}

TEST_CASE("Slice, Conv and pool attributes that cannot be imported say why", "[onnx][errors]") {
  const auto slice_error = [](std::vector<std::int64_t> starts, std::vector<std::int64_t> ends,
                              std::vector<std::int64_t> steps) {
    model_builder b;
    b.input("x", {-1, 6});
    b.ints("starts", starts);
    b.ints("ends", ends);
    b.ints("axes", {0});
    b.ints("steps", steps);
    b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "cut");
    b.output("y", {-1, 6});
    return b.import().status();
  };
  require_error(slice_error({0}, {3}, {0}), tf::status_code::invalid_argument, "ONNX node 'cut' (Slice): step 0 on axis 0");
  require_error(slice_error({-3}, {-1}, {1}), tf::status_code::unimplemented,
                "bounds [-3, -1) in steps of 1 on axis 0 whose size is unknown at import");
  require_error(slice_error({4}, {0}, {-1}), tf::status_code::unimplemented,
                "bounds [4, 0) in steps of -1 on axis 0 whose size is unknown at import");
  {
    model_builder b;
    b.input("x", {1, 2, 6, 6});
    b.floats("w", {3, 2, 3, 3}, random_floats(54, 5));
    b.floats("bias", {3, 1}, {1, 2, 3});
    b.node("Conv", {"x", "w", "bias"}, {"y"}, "conv");
    b.output("y", {1, 3, 4, 4});
    require_error(b.import().status(), tf::status_code::invalid_argument,
                  "ONNX node 'conv' (Conv): the bias must be a vector of one value per output channel, got [3, 1]");
  }
  {
    model_builder b;
    b.input("x", {1, 2, 6, 6});
    set_ints(b.node("MaxPool", {"x"}, {"y"}, "pool"), "kernel_shape", {2, std::int64_t{1} << 40});
    b.output("y", {1, 2, 5, 5});
    require_error(b.import().status(), tf::status_code::invalid_argument,
                  "ONNX node 'pool' (MaxPool): kernel_shape, strides, dilations and pads must be at most 2147483647, "
                  "got 1099511627776");
  }
}
