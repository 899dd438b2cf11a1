// SPDX-License-Identifier: Apache-2.0
// Runtime graphs (graph_defs) on a GPU: a session over the CPU and GPU:0 places unplaced nodes on the
// GPU (its priority is above the CPU's) and runs them there; the same graph placed alternately on the
// two devices runs through partitions, _send/_recv and copies both ways; both against the graph on the
// CPU alone. The errors a user meets: an op with no GPU kernel placed there. A runtime session on
// GPU:0 alone run as CUDA graphs, against its plain runs.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <typeflow/registry/extern_kernels.hpp>
#include <typeflow/runtime/cuda_graph.hpp>

#include "../unit/support.hpp"
#include "gpu_registry.hpp"
#include "tensor_support.hpp"

namespace tf = typeflow;
using Catch::Matchers::Contains;

namespace {

using mixed_session = tf::runtime_session<tf::devices<tf::cpu, tf::cuda<0>>, tf::test::gpu_registry>;

constexpr std::string_view cnn_text = R"(
x  = placeholder() dtype=f32 shape=shape[?, 10, 10, 3]
k1 = const() dtype=f32 shape=shape[3, 3, 3, 4] value=0.05
c1 = conv2d(x, k1) padding="same"
b1 = const() dtype=f32 shape=shape[4] value=[0.1, -0.2, 0.3, -0.4]
ab = add(c1, b1)
a1 = relu(ab)
p1 = max_pool2d(a1)
f  = reshape(p1) shape=[-1, 100]
w2 = const() dtype=f32 shape=shape[100, 6] value=0.01
z  = matmul(f, w2)
y  = softmax(z) axis=-1
s  = reduce_sum(a1) axes=[1, 2] keep_dims=false
)";

tf::graph_def parse(std::string_view text) {
  auto def = tf::parse_graph(text);
  INFO(def.status().to_string());
  REQUIRE(def.ok());
  return std::move(*def);
}


}  // namespace

TEST_CASE("a runtime graph over the CPU and GPU:0 runs on the GPU, placed or not, as on the CPU") {
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{3, 10, 10, 3}, 7);
  tf::cpu alone;
  auto one = tf::runtime_graph<tf::cpu>::make(parse(cnn_text));
  REQUIRE(one.ok());
  tf::runtime_session<tf::cpu> reference(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*one)), alone);
  auto want = reference.run({{"x", x}}, {"y", "s"});
  REQUIRE(want.ok());

  tf::cpu host;
  tf::cuda<0> gpu;
  REQUIRE(gpu.available().ok());
  tf::device_set<tf::cpu, tf::cuda<0>> set;
  set.add(host);
  set.add(gpu);
  // Unplaced: the GPU's priority puts every node with a GPU kernel there. Placed: node k on GPU:0 when
  // k is even (the feed x and the convolution c1 among them), on CPU:0 when odd.
  tf::graph_def alternately = parse(cnn_text);
  for (std::size_t k = 0; k < alternately.nodes.size(); ++k) alternately.nodes[k].device = k % 2 == 0 ? "GPU:0" : "CPU:0";
  for (const tf::graph_def& def : {parse(cnn_text), alternately})
    for (int threads : {0, 2}) {
      auto s = mixed_session::make(def, set, {.inter_op_threads = threads});
      INFO(s.status().to_string());
      REQUIRE(s.ok());
      for (int repeat = 0; repeat < 2; ++repeat) {
        tf::run_metadata meta;
        auto got = (*s)->run({{"x", x}}, {"y", "s"}, {}, {}, &meta);
        INFO(got.status().to_string());
        REQUIRE(got.ok());
        tf::test::require_close((*got)[0], (*want)[0], 1e-4);
        tf::test::require_close((*got)[1], (*want)[1], 1e-4);
        bool on_gpu = false;
        for (const auto& [node, device] : meta.placement)
          if (node == "c1") on_gpu = device == "/job:localhost/replica:0/task:0/device:GPU:0";
        CHECK(on_gpu);
      }
    }
}

TEST_CASE("a runtime graph that places an op with no GPU kernel on the GPU says so") {
  tf::cpu host;
  tf::cuda<0> gpu;
  tf::device_set<tf::cpu, tf::cuda<0>> set;
  set.add(host);
  set.add(gpu);
  const std::string text = "x = const() dtype=f64 shape=shape[1, 3, 3, 1] value=1\n"
                           "f = const() dtype=f64 shape=shape[1, 1, 1, 1] value=2\n"
                           "y = conv2d(x, f) @GPU:0\n";
  auto s = mixed_session::make(parse(text), set);
  const tf::status st = s.ok() ? (*s)->run({}, {"y"}).status() : s.status();
  REQUIRE(!st.ok());
  CHECK_THAT(std::string(st.message()), Contains("node 'y'") && Contains("f64"));
}

TEST_CASE("a runtime session on GPU:0 replays a CUDA graph per executor, bitwise as its plain runs; a new feed shape captures again") {
  using gpu_graph = tf::runtime_graph<tf::cuda<0>, tf::test::gpu_registry>;
  tf::cpu host;
  tf::cuda<0> gpu;
  REQUIRE(gpu.available().ok());
  auto made = gpu_graph::make(parse(cnn_text));
  REQUIRE(made.ok());
  const auto graph = std::make_shared<const gpu_graph>(std::move(*made));
  tf::runtime_session<tf::cuda<0>, tf::test::gpu_registry> plain(graph, gpu);
  tf::cuda_graph_runtime_session<tf::cuda<0>, tf::test::gpu_registry> replayed(graph, gpu, tf::cuda_graph{});
  const auto bitwise = [&](const tf::tensor& got, const tf::tensor& want) {
    const tf::tensor a = tf::test::moved(got, gpu, host), b = tf::test::moved(want, gpu, host);
    REQUIRE(a.spec() == b.spec());
    CHECK(std::memcmp(a.data(), b.data(), a.bytes()) == 0);
  };
  const tf::graph_replay expected[] = {tf::graph_replay::captured, tf::graph_replay::replayed, tf::graph_replay::replayed,
                                       tf::graph_replay::none /* updated or reinstantiated */, tf::graph_replay::replayed};
  std::vector<std::vector<tf::tensor>> kept;
  for (int run = 0; run < 5; ++run) {
    const std::int64_t batch = run < 3 ? 3 : 2;
    const tf::tensor x = tf::test::moved(tf::test::random_tensor<float>(tf::shape{batch, 10, 10, 3}, 40 + run), host, gpu);
    auto want = plain.run({{"x", x}}, {"y", "s"});
    tf::run_metadata md;
    auto got = replayed.run({{"x", x}}, {"y", "s"}, {}, {}, &md);
    INFO(got.status().to_string());
    REQUIRE((want.ok() && got.ok()));
    if (run == 3) CHECK((md.replay == tf::graph_replay::updated || md.replay == tf::graph_replay::reinstantiated));
    else CHECK(md.replay == expected[run]);
    bitwise((*got)[0], (*want)[0]);
    bitwise((*got)[1], (*want)[1]);
    kept.push_back({(*want)[0], (*got)[0]});
  }
  // Each replay's outputs are tensors of their own: a later run does not overwrite them.
  for (const auto& pair : kept) bitwise(pair[1], pair[0]);
  CHECK(replayed.num_executors() == 1);
}
