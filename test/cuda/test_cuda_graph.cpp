// SPDX-License-Identifier: Apache-2.0
// CUDA graphs on GPU:0: the shim's capture, update and replay; static sessions run as CUDA graphs
// (tf::cuda_graph) against the same sessions run step by step on the same GPU, bitwise: the MLP and
// the CNN of examples/models.hpp, a new batch size (captured again), independent branches (on forked
// streams), ops with several outputs, new feeds through the same staging buffers, a graph that
// cannot be captured (a status naming the node), and two jobs sharing the GPU, one paced (Antman's
// op idle time), with a pool limit lowered between runs.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/graph.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>

#include "../../examples/models.hpp"
#include "../unit/support.hpp"
#include "gpu_support.hpp"
#include "tensor_support.hpp"

namespace tf = typeflow;
namespace gpu = tf::gpu;
using Catch::Matchers::Contains;
using gpu_test::value_of;
using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

namespace {

void require_bitwise(const tf::tensor& got, const tf::tensor& want) {
  REQUIRE(got.spec() == want.spec());
  REQUIRE(std::memcmp(got.data(), want.data(), want.bytes()) == 0);
}

} // namespace

TEST_CASE("a capture of two branches replays, takes new addresses by update, and refuses a new topology") {
  const gpu::stream s = value_of(gpu::stream::create(0));
  const gpu::stream side = value_of(gpu::stream::create(0));
  gpu::event fork = value_of(gpu::event::create(0)), join = value_of(gpu::event::create(0));
  gpu_test::device_buffer a(64 * sizeof(float)), b(64 * sizeof(float)), c(64 * sizeof(float));
  const auto capture = [&](void* first, void* second, int extra) {
    REQUIRE_OK(gpu::begin_capture(s));
    CHECK(value_of(gpu::is_capturing(s)));
    REQUIRE_OK(fork.record(s));
    REQUIRE_OK(side.wait(fork));
    REQUIRE_OK(gpu::fill(s, gpu::elem::f32, first, 64, 1.5));
    REQUIRE_OK(gpu::fill(side, gpu::elem::f32, second, 64, -2.0));
    for (int i = 0; i < extra; ++i) REQUIRE_OK(gpu::fill(side, gpu::elem::f32, second, 64, 3.0));
    REQUIRE_OK(join.record(side));
    REQUIRE_OK(s.wait(join));
    return value_of(gpu::end_capture(s));
  };
  gpu::captured_graph g = capture(a.get(), b.get(), 0);
  CHECK_FALSE(value_of(gpu::is_capturing(s)));
  CHECK(value_of(g.num_nodes()) >= 2);
  CHECK(value_of(g.num_root_nodes()) == 2);  // the two fills depend on nothing
  gpu::graph_exec exec = value_of(gpu::graph_exec::instantiate(g));
  REQUIRE_OK(exec.upload(s));
  REQUIRE_OK(exec.launch(s));
  REQUIRE_OK(s.synchronize());
  CHECK(gpu_test::download<float>(s, a, 64) == std::vector<float>(64, 1.5f));
  CHECK(gpu_test::download<float>(s, b, 64) == std::vector<float>(64, -2.0f));

  // The same work into c: an update.
  gpu::captured_graph moved = capture(a.get(), c.get(), 0);
  CHECK(value_of(exec.update(moved)));
  REQUIRE_OK(exec.launch(s));
  REQUIRE_OK(s.synchronize());
  CHECK(gpu_test::download<float>(s, c, 64) == std::vector<float>(64, -2.0f));

  // One node more: CUDA refuses the update.
  gpu::captured_graph bigger = capture(a.get(), b.get(), 1);
  CHECK_FALSE(value_of(exec.update(bigger)));

  // A synchronize during the capture fails, and ending the capture says the capture is invalid.
  REQUIRE_OK(gpu::begin_capture(s));
  REQUIRE_OK(gpu::fill(s, gpu::elem::f32, a.get(), 64, 0.0));
  CHECK_FALSE(s.synchronize().ok());
  auto broken = gpu::end_capture(s);
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(std::string(broken.status().message()), Contains("cudaStreamEndCapture"));
  CHECK_FALSE(value_of(gpu::is_capturing(s)));
}

namespace {

// Runs Model at `batch` as a CUDA graph and step by step, `runs` times with new inputs, bitwise.
template <class Model>
void replay_matches_steps(std::int64_t batch, int runs) {
  tf::cuda<0> g;
  const typename Model::weights w;
  using graph = typename Model::graph;
  tf::session<graph, tf::cuda<0>, registry> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry> replayed(graph{}, g, tf::cuda_graph{});
  REQUIRE(Model::initialize(steps, w).ok());
  REQUIRE(Model::initialize(replayed, w).ok());
  for (int run = 0; run < runs; ++run) {
    const tf::tensor x = tf::test::random_tensor<float>(Model::input(batch).shape(), 100 + run, 0.0, 1.0);
    auto want = steps.run(tf::feed(Model::x, x), tf::fetch(Model::y));
    tf::run_metadata md;
    auto got = replayed.run(md, tf::feed(Model::x, x), tf::fetch(Model::y));
    INFO(got.status().to_string());
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    CHECK(md.replay == (run == 0 ? tf::graph_replay::captured : tf::graph_replay::replayed));
    require_bitwise(std::get<0>(*got).untyped(), std::get<0>(*want).untyped());
  }
}

} // namespace

TEST_CASE("the MLP replayed as a CUDA graph gives the step-by-step run's outputs, bitwise, at batch 1 and 64") {
  replay_matches_steps<models::mlp>(1, 4);
  replay_matches_steps<models::mlp>(64, 3);
}

TEST_CASE("the CNN replayed as a CUDA graph (cuDNN convolutions in the capture) gives the step-by-step run's outputs") {
  replay_matches_steps<models::cnn>(1, 3);
  replay_matches_steps<models::cnn>(16, 2);
}

TEST_CASE("a new batch size captures again; the executable graph is updated or made anew, and says which") {
  using model = models::mlp;
  using graph = model::graph;
  tf::cuda<0> g;
  const model::weights w;
  tf::session<graph, tf::cuda<0>, registry> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry> replayed(graph{}, g, tf::cuda_graph{});
  REQUIRE(model::initialize(steps, w).ok());
  REQUIRE(model::initialize(replayed, w).ok());
  const std::int64_t batches[] = {2, 2, 5, 5, 2};
  std::vector<tf::graph_replay> seen;
  for (std::int64_t batch : batches) {
    const tf::tensor x = model::input(batch);
    tf::run_metadata md;
    auto got = replayed.run(md, tf::feed(model::x, x), tf::fetch(model::y));
    auto want = steps.run(tf::feed(model::x, x), tf::fetch(model::y));
    INFO(got.status().to_string());
    REQUIRE(got.ok());
    REQUIRE(want.ok());
    require_bitwise(std::get<0>(*got).untyped(), std::get<0>(*want).untyped());
    seen.push_back(md.replay);
  }
  CHECK(seen[0] == tf::graph_replay::captured);
  CHECK(seen[1] == tf::graph_replay::replayed);
  CHECK((seen[2] == tf::graph_replay::updated || seen[2] == tf::graph_replay::reinstantiated));
  CHECK(seen[3] == tf::graph_replay::replayed);
  CHECK(seen[4] != tf::graph_replay::replayed);  // back to batch 2: new addresses in the arena

  // A variable given a new value has a new buffer: the next run captures again, with the new value.
  REQUIRE(replayed.initialize(model::b3, 0.25f).ok());
  REQUIRE(steps.initialize(model::b3, 0.25f).ok());
  tf::run_metadata md;
  auto got = replayed.run(md, tf::feed(model::x, model::input(2)), tf::fetch(model::y));
  auto want = steps.run(tf::feed(model::x, model::input(2)), tf::fetch(model::y));
  REQUIRE(got.ok());
  REQUIRE(want.ok());
  CHECK(md.replay != tf::graph_replay::replayed);
  require_bitwise(std::get<0>(*got).untyped(), std::get<0>(*want).untyped());
}

TEST_CASE("independent steps become parallel branches of the graph") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<32, 64>>;
  constexpr auto w1 = tf::variable<"w1", float, tf::static_shape<64, 64>>;
  constexpr auto w2 = tf::variable<"w2", float, tf::static_shape<64, 64>>;
  constexpr auto w3 = tf::variable<"w3", float, tf::static_shape<64, 64>>;
  constexpr auto w4 = tf::variable<"w4", float, tf::static_shape<64, 64>>;
  constexpr auto a = tf::relu(tf::matmul(tf::tanh(tf::matmul(x, w1)), w2));
  constexpr auto b = tf::relu(tf::matmul(tf::tanh(tf::matmul(x, w3)), w4));
  constexpr auto c = tf::tanh(tf::matmul(x, w2));
  constexpr auto y = a + b * c;
  using graph = decltype(tf::graph(y));
  tf::cuda<0> g;
  tf::session<graph, tf::cuda<0>, registry, false> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry, false> replayed(graph{}, g, tf::cuda_graph{.branches = 3});
  tf::cuda_graph_session<graph, tf::cuda<0>, registry, false> serial(graph{}, g, tf::cuda_graph{.branches = 1});
  std::uint64_t seed = 7;
  for (const char* name : {"w1", "w2", "w3", "w4"}) {
    const tf::tensor t = tf::test::random_tensor<float>(tf::shape{64, 64}, seed++, -0.2, 0.2);
    REQUIRE((steps.initialize(name, t).ok() && replayed.initialize(name, t).ok() && serial.initialize(name, t).ok()));
  }
  for (int run = 0; run < 3; ++run) {
    const tf::tensor xt = tf::test::random_tensor<float>(tf::shape{32, 64}, 50 + run);
    auto want = steps.run(tf::feed(x, xt), tf::fetch(y));
    tf::run_metadata md, md1;
    auto got = replayed.run(md, tf::feed(x, xt), tf::fetch(y));
    auto one = serial.run(md1, tf::feed(x, xt), tf::fetch(y));
    INFO(got.status().to_string());
    REQUIRE((want.ok() && got.ok() && one.ok()));
    require_bitwise(std::get<0>(*got).untyped(), std::get<0>(*want).untyped());
    require_bitwise(std::get<0>(*one).untyped(), std::get<0>(*want).untyped());
    CHECK(md.graph_branches == 3);
    CHECK(md1.graph_branches == 1);
  }
}

TEST_CASE("ops with several outputs replay, and their output nodes are fetched from the graph's buffers") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<6, 8>>;
  constexpr auto w = tf::variable<"w", float, tf::static_shape<4, 4>>;
  auto [left, right] = tf::split<2, 1>(x);                 // two [6, 4] halves
  auto [values, indices] = tf::top_k<2>(tf::matmul(left, w) + right);
  const auto y = tf::tanh(values) * values;
  using graph = decltype(tf::graph(y, indices, left));
  tf::cuda<0> g;
  tf::session<graph, tf::cuda<0>, registry, false> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry, false> replayed(graph{}, g, tf::cuda_graph{});
  const tf::tensor wt = tf::test::random_tensor<float>(tf::shape{4, 4}, 3);
  REQUIRE((steps.initialize(w, wt).ok() && replayed.initialize(w, wt).ok()));
  for (int run = 0; run < 4; ++run) {
    const tf::tensor xt = tf::test::random_tensor<float>(tf::shape{6, 8}, 30 + run);
    auto want = steps.run(tf::feed(x, xt), tf::fetch(y), tf::fetch(indices), tf::fetch(left));
    tf::run_metadata md;
    auto got = replayed.run(md, tf::feed(x, xt), tf::fetch(y), tf::fetch(indices), tf::fetch(left));
    INFO(got.status().to_string());
    REQUIRE((want.ok() && got.ok()));
    CHECK(md.replay == (run == 0 ? tf::graph_replay::captured : tf::graph_replay::replayed));
    require_bitwise(std::get<0>(*got).untyped(), std::get<0>(*want).untyped());
    require_bitwise(std::get<1>(*got).untyped(), std::get<1>(*want).untyped());
    require_bitwise(std::get<2>(*got).untyped(), std::get<2>(*want).untyped());
  }
}

TEST_CASE("a kernel that must wait for the GPU cannot be captured: the run's status names the node") {
  constexpr auto x = tf::input<"x", std::int32_t, tf::static_shape<8>>;
  constexpr auto d = tf::input<"d", std::int32_t, tf::static_shape<8>>;
  constexpr auto y = x / d + x;
  using graph = decltype(tf::graph(y));
  tf::cuda<0> g;
  tf::cuda_graph_session<graph, tf::cuda<0>, registry, false> replayed(graph{}, g, tf::cuda_graph{});
  auto xt = tf::tensor::filled<std::int32_t>(tf::shape{8}, 6);
  auto dt = tf::tensor::filled<std::int32_t>(tf::shape{8}, 3);
  REQUIRE((xt.ok() && dt.ok()));
  tf::run_metadata md;
  auto r = replayed.run(md, tf::feed(x, *xt), tf::feed(d, *dt), tf::fetch(y));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == tf::status_code::failed_precondition);
  CHECK_THAT(std::string(r.status().message()),
             Contains("capturing a CUDA graph") && Contains("div") && Contains("cannot be captured"));
  // The session is still usable (it tries again, and says the same), and a plain session runs it.
  auto again = replayed.run(tf::feed(x, *xt), tf::feed(d, *dt), tf::fetch(y));
  CHECK(again.status().code() == tf::status_code::failed_precondition);
  tf::session<graph, tf::cuda<0>, registry, false> steps(graph{}, g);
  auto ok = steps.run(tf::feed(x, *xt), tf::feed(d, *dt), tf::fetch(y));
  REQUIRE(ok.ok());
  for (std::int32_t v : std::get<0>(*ok).untyped().unchecked_values<std::int32_t>()) CHECK(v == 8);
}

TEST_CASE("two sessions share the GPU, one paced by an op idle time changed while it runs; a pool's limit lowered between runs") {
  using model = models::mlp;
  using graph = model::graph;
  const model::weights w;
  tf::cuda<0> g;
  tf::cuda<0> paced;  // a policy object of its own: its own pool and op idle time
  paced.set_op_idle_time(std::chrono::microseconds(200));
  tf::session<graph, tf::cuda<0>, registry> main_job(graph{}, g);
  tf::session<graph, tf::cuda<0>, registry> side_job(graph{}, paced);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry> side_replayed(graph{}, paced, tf::cuda_graph{});
  REQUIRE((model::initialize(main_job, w).ok() && model::initialize(side_job, w).ok() &&
           model::initialize(side_replayed, w).ok()));
  const tf::tensor x = model::input(16);
  auto want = main_job.run(tf::feed(model::x, x), tf::fetch(model::y));
  REQUIRE(want.ok());
  const tf::tensor expected = std::get<0>(*want).untyped();

  std::atomic<int> failures{0};
  std::thread side([&] {
    for (int run = 0; run < 20; ++run) {
      if (run == 10) paced.set_op_idle_time(std::chrono::microseconds(20));
      auto a = side_job.run(tf::feed(model::x, x), tf::fetch(model::y));
      auto b = side_replayed.run(tf::feed(model::x, x), tf::fetch(model::y));
      if (!a.ok() || !b.ok() || std::memcmp(std::get<0>(*a).untyped().data(), expected.data(), expected.bytes()) != 0 ||
          std::memcmp(std::get<0>(*b).untyped().data(), expected.data(), expected.bytes()) != 0)
        ++failures;
    }
  });
  for (int run = 0; run < 40; ++run) {
    auto r = main_job.run(tf::feed(model::x, x), tf::fetch(model::y));
    REQUIRE(r.ok());
    require_bitwise(std::get<0>(*r).untyped(), expected);
  }
  side.join();
  CHECK(failures.load() == 0);
  paced.set_op_idle_time(std::chrono::nanoseconds(0));

  // Lowered to what is in use: the free regions go back, and the sessions keep running in theirs.
  const auto before = paced.allocator().stats();
  const std::size_t reserved = paced.allocator().set_memory_limit(before.bytes_in_use);
  CHECK(reserved <= before.bytes_reserved);
  auto again = side_job.run(tf::feed(model::x, x), tf::fetch(model::y));
  REQUIRE(again.ok());
  require_bitwise(std::get<0>(*again).untyped(), expected);
  // A new session needs memory the limit no longer gives: a status, not a crash.
  paced.allocator().set_memory_limit(0);
  tf::session<graph, tf::cuda<0>, registry> starved(graph{}, paced);
  const tf::status init = model::initialize(starved, w);
  CHECK(init.code() == tf::status_code::resource_exhausted);
}

TEST_CASE("a loop over batches overlaps its copies and gives each batch's run() results in order; errors name the batch") {
  using model = models::mlp;
  using graph = model::graph;
  const model::weights w;
  tf::cuda<0> g;
  tf::session<graph, tf::cuda<0>, registry> steps(graph{}, g);
  tf::cuda_graph_session<graph, tf::cuda<0>, registry> replayed(graph{}, g, tf::cuda_graph{});
  REQUIRE((model::initialize(steps, w).ok() && model::initialize(replayed, w).ok()));
  std::vector<tf::tensor> batches, want;
  for (int i = 0; i < 12; ++i) {
    // Batch 7 is of another size: its runner captures again for it, and again for batch 9, inside the loop.
    batches.push_back(tf::test::random_tensor<float>(tf::shape{i == 7 ? 5 : 16, 784}, 200 + i, 0.0, 1.0));
    auto r = steps.run(tf::feed(model::x, batches.back()), tf::fetch(model::y));
    REQUIRE(r.ok());
    want.push_back(std::get<0>(*r).untyped());
  }
  const auto feeds_of = [&](std::size_t i) { return std::tuple(tf::feed(model::x, batches[i])); };
  for (int pass = 0; pass < 2; ++pass) {  // the second pass replays the graphs the first captured
    std::vector<std::size_t> order;
    int mismatches = 0;
    const tf::status st = replayed.run_batches(
        batches.size(), feeds_of,
        [&](std::size_t i, auto fetched) {
          order.push_back(i);
          const tf::tensor& got = std::get<0>(fetched).untyped();
          if (got.spec() != want[i].spec() || std::memcmp(got.data(), want[i].data(), got.bytes()) != 0) ++mismatches;
        },
        tf::fetch(model::y));
    REQUIRE_OK(st);
    CHECK(mismatches == 0);
    CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  }

  // A feed of the wrong shape: the loop stops there, naming the batch and the input.
  batches[3] = tf::test::random_tensor<float>(tf::shape{16, 700}, 1);
  std::size_t seen = 0;
  const tf::status bad = replayed.run_batches(batches.size(), feeds_of, [&](std::size_t, auto) { ++seen; }, tf::fetch(model::y));
  CHECK(bad.code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(bad.message()), Contains("run_batches: batch 3") && Contains("input 'x'"));
  CHECK(seen <= 3);

  // done's own error stops the loop with it.
  batches[3] = batches[2];
  const tf::status stopped = replayed.run_batches(
      batches.size(), feeds_of,
      [&](std::size_t i, auto) { return i == 2 ? tf::errors::cancelled("enough") : tf::ok_status(); }, tf::fetch(model::y));
  CHECK(stopped.code() == tf::status_code::cancelled);
  CHECK_THAT(std::string(stopped.message()), Contains("batch 2") && Contains("enough"));
}
