// SPDX-License-Identifier: Apache-2.0
// The static parallel executor and asynchronous kernels:
//  - the step DAG a static plan gets at compile time (roots, pending counts, expensive steps);
//  - parallel static sessions at 1, 2 and 4 threads give the sequential session's bits, keep
//    reads and assigns of a variable in the plan's order, run from many threads at once (while a
//    variable that products keep packed changes), and allocate nothing per step once sized;
//  - an asynchronous kernel (a test op whose work finishes on another pool) completes through its
//    callback in both parallel executors without holding a thread, is waited for by the
//    sequential ones, and its errors become the step's status naming the node.
// The runtime graphs here use a small registry (the test op and the binary kernels), so this
// translation unit does not instantiate every kernel.
#include "support.hpp"

#include "allocation_counter.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using tf::test::random_tensor;

namespace {

bool same_bits(const tf::tensor& a, const tf::tensor& b) {
  return a.spec() == b.spec() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}
std::vector<float> floats(const tf::tensor& t) {
  const auto v = t.unchecked_values<const float>();
  return {v.begin(), v.end()};
}

// Four branches, each a matmul (expensive) and an activation, summed and normalised.
constexpr auto x = tf::input<"x", float, static_shape<dyn, 8>>;
constexpr auto w0 = tf::variable<"w0", float, static_shape<8, 8>>;
constexpr auto w1 = tf::variable<"w1", float, static_shape<8, 8>>;
constexpr auto w2 = tf::variable<"w2", float, static_shape<8, 8>>;
constexpr auto w3 = tf::variable<"w3", float, static_shape<8, 8>>;
constexpr auto y = tf::softmax(tf::tanh(tf::matmul(x, w0)) + tf::sigmoid(tf::matmul(x, w1)) +
                               tf::relu(tf::matmul(x, w2)) + tf::matmul(x, w3) * 0.5_c);
using wide_graph = decltype(tf::graph(y));

template <class Session>
void initialize_weights(Session& s) {
  std::uint64_t seed = 11;
  for (auto st : {s.initialize(w0, random_tensor<float>(tf::shape{8, 8}, seed++)),
                  s.initialize(w1, random_tensor<float>(tf::shape{8, 8}, seed++)),
                  s.initialize(w2, random_tensor<float>(tf::shape{8, 8}, seed++)),
                  s.initialize(w3, random_tensor<float>(tf::shape{8, 8}, seed++))})
    REQUIRE(st.ok());
}

// ---- an asynchronous test op: deferred_copy(x) copies x on another pool, later -------------------

struct deferred_copy {
  static constexpr std::string_view name = "deferred_copy";
  static constexpr int num_inputs = 1;
  bool fail = false;  // the work reports an error instead
  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const { return in[0]; }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  // Ops compare by value; no test here compares two, and Clang 19 warns of an unused function.
  [[maybe_unused]] friend constexpr bool operator==(const deferred_copy&, const deferred_copy&) = default;
};

}  // namespace

template <>
inline constexpr auto tf::op_attributes<deferred_copy> = std::tuple{tf::attribute<"fail", &deferred_copy::fail>{}};

namespace {

// Where the work runs, and a barrier the test can require: each copy waits until `expected`
// copies have started (or gives up after `patience`), which only happens when the executor does
// not hold a thread per asynchronous kernel.
struct completion_service {
  Eigen::ThreadPool pool{8};
  std::mutex m;
  std::condition_variable cv;
  int started = 0;
  int expected = 1;
  std::chrono::milliseconds patience{10000};

  void reset(int wait_for, std::chrono::milliseconds give_up) {
    std::lock_guard lock(m);
    started = 0;
    expected = wait_for;
    patience = give_up;
  }
  // Counts a start; true when all expected starts were seen in time.
  bool start_and_wait() {
    std::unique_lock lock(m);
    ++started;
    cv.notify_all();
    return cv.wait_for(lock, patience, [&] { return started >= expected; });
  }
};
completion_service& service() {
  static completion_service s;
  return s;
}

template <class Op, class Device, class T>
struct deferred_copy_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  static void compute_async(const Op& op, tf::kernel_context<Device>& ctx, tf::kernel_done done) {
    service().pool.Schedule([op, &ctx, done = std::move(done)] {
      if (!service().start_and_wait()) return done(tf::errors::deadline_exceeded("the other copies never started"));
      if (op.fail) return done(tf::errors::internal("the copy engine failed"));
      std::memcpy(ctx.outputs[0].data(), ctx.inputs[0].data(), ctx.inputs[0].bytes());
      done(tf::ok_status());
    });
  }
};
static_assert(tf::async_kernel<deferred_copy_kernel<deferred_copy, tf::cpu, float>>);
static_assert(!tf::sync_kernel<deferred_copy_kernel<deferred_copy, tf::cpu, float>>);
static_assert(tf::kernel<deferred_copy_kernel<deferred_copy, tf::cpu, float>>);

using async_kernels =
    tf::kernel_list<tf::kernel_family<deferred_copy_kernel, deferred_copy, tf::devices<tf::cpu>, tf::dtypes<float>>>;
using small_registry = tf::registry<async_kernels, tf::cpu_kernels::binary_kernels>;
using small_graph = tf::runtime_graph<tf::cpu, small_registry>;
using small_session = tf::runtime_session<tf::cpu, small_registry>;
using static_registry = tf::registry<async_kernels, tf::cpu_kernels::unary_kernels, tf::cpu_kernels::binary_kernels,
                                     tf::cpu_kernels::fused_kernels>;

// d0..d7 = deferred_copy(x); their sum.
std::shared_ptr<const small_graph> fan_of_copies(int failing = -1) {
  std::string text = "x = placeholder() dtype=f32 shape=shape[4]\n";
  for (int i = 0; i < 8; ++i)
    text += "d" + std::to_string(i) + " = deferred_copy(x)" + (i == failing ? " fail=true" : "") + "\n";
  text += "s1 = add(d0, d1)\ns2 = add(d2, d3)\ns3 = add(d4, d5)\ns4 = add(d6, d7)\n";
  text += "t1 = add(s1, s2)\nt2 = add(s3, s4)\ns = add(t1, t2)\n";
  auto def = tf::parse_graph(text);
  REQUIRE(def.ok());
  auto g = small_graph::make(std::move(*def));
  INFO(g.status().to_string());
  REQUIRE(g.ok());
  return std::make_shared<const small_graph>(std::move(*g));
}

}  // namespace

TEST_CASE("static parallel executor: the step DAG is computed at compile time", "[parallel][static]") {
  using plan = tf::static_plan<wide_graph, true, wide_graph::position<decltype(y)>()>;
  using exec = tf::static_parallel_executor<plan, tf::cpu, tf::default_registry>;
  // The input is the prologue (run first, its edges not counted); the roots are the four
  // variables; the four matmuls and softmax are expensive.
  STATIC_REQUIRE(exec::arrays.num_prologue == 1);
  STATIC_REQUIRE(exec::dag.roots.size() == 4);
  STATIC_REQUIRE(exec::dag.size() == plan::num_steps);
  constexpr std::size_t expensive = [] {
    std::size_t n = 0;
    for (bool e : exec::dag.expensive) n += e;
    return n;
  }();
  STATIC_REQUIRE(expensive == 5);
  // Every edge goes forward in the plan's order, and each step waits for as many edges as point at it.
  constexpr bool consistent = [] {
    std::array<std::uint32_t, plan::num_steps> in{};
    for (std::uint32_t a = 0; a < plan::num_steps; ++a)
      for (std::uint32_t b : exec::dag.successors_of(a)) {
        if (b <= a) return false;
        ++in[b];
      }
    for (std::size_t b = 0; b < plan::num_steps; ++b)
      if (in[b] != exec::dag.pending[b]) return false;
    return true;
  }();
  STATIC_REQUIRE(consistent);
}

TEMPLATE_TEST_CASE("static parallel executor: 1, 2 and 4 threads give the sequential session's bits", "[parallel][static]",
                   tf::cpu, tf::thread_pool) {
  TestType device;
  tf::session sequential(tf::graph(y), device);
  initialize_weights(sequential);
  for (int threads : {1, 2, 4}) {
    tf::session parallel(tf::graph(y), device, tf::parallel{threads});
    initialize_weights(parallel);
    for (std::int64_t rows : {1, 3, 17}) {
      const tf::tensor xt = random_tensor<float>(tf::shape{rows, 8}, static_cast<std::uint64_t>(rows));
      auto want = sequential.run(tf::feed(x, xt), tf::fetch(y));
      auto got = parallel.run(tf::feed(x, xt), tf::fetch(y));
      REQUIRE(want.ok());
      REQUIRE(got.ok());
      CHECK(same_bits(std::get<0>(*got), std::get<0>(*want)));
    }
  }
}

namespace {
// Small elementwise nodes of one static shape, several read twice (steps of their own), fetched
// intermediates, and softmaxes (expensive: run by the pool's threads, which then run the cheap
// steps they make ready): the parallel executor runs the elementwise ones on their buffers' data.
constexpr auto sx = tf::input<"sx", float, static_shape<5>>;
constexpr auto s1 = sx * 2.0_c + sx;
constexpr auto s2 = tf::relu(sx - 0.25_c);
constexpr auto s3 = s1 * s2 + s1;
constexpr auto s4 = tf::maximum(s3, s2) - tf::exp(s1) * s2;
constexpr auto s5 = tf::softmax(s1) * s2 + tf::softmax(s3);
}  // namespace

TEMPLATE_TEST_CASE("static parallel executor: small elementwise steps run on bare data, with the sequential session's bits",
                   "[parallel][static][elementwise]", std::false_type, std::true_type) {
  constexpr bool fuse = TestType::value;
  using graph = decltype(tf::graph(s4, s5));
  using plan = tf::static_plan<graph, fuse, graph::position<decltype(s4)>(), graph::position<decltype(s3)>(),
                               graph::position<decltype(s5)>()>;
  using steps = typename tf::static_parallel_executor<plan, tf::cpu, tf::default_registry>::steps;
  // Every op or fused step has one output of 5 elements, and all but these have inputs of as many
  // and a kernel that runs on bare data: the two softmaxes, and unfused, sx * 2 and sx - 0.25, which
  // broadcast a scalar constant (fused, a group holds its constants).
  std::size_t ops = 0;
  for (auto kind : steps::step_kinds) ops += kind == tf::static_step_kind::op || kind == tf::static_step_kind::fused;
  const std::size_t bare = ops - 2 - (fuse ? 0 : 2);
  CHECK(tf::test::run_elements_steps<steps>() == bare);

  tf::cpu device;
  tf::session<graph, tf::cpu, tf::default_registry, fuse> sequential(graph{}, device);
  using values_type = std::array<std::vector<float>, 3>;  // s4, s3, s5
  const auto values_of = [](const auto& r) {
    return values_type{floats(std::get<0>(r)), floats(std::get<1>(r)), floats(std::get<2>(r))};
  };
  // The sequential session's values for seeds 0..7.
  std::vector<tf::tensor> inputs;
  std::vector<values_type> want;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    inputs.push_back(random_tensor<float>(tf::shape{5}, seed));
    auto r = sequential.run(tf::feed(sx, inputs.back()), tf::fetch(s4), tf::fetch(s3), tf::fetch(s5));
    REQUIRE(r.ok());
    want.push_back(values_of(*r));
    const auto v = inputs.back().unchecked_values<const float>();
    for (std::size_t i = 0; i < 5; ++i) {
      const double a = 2.0 * v[i] + v[i], b = std::max(double(v[i]) - 0.25, 0.0), c = a * b + a;
      CHECK(want.back()[0][i] == Approx(std::max(c, b) - std::exp(a) * b).epsilon(1e-5).margin(1e-5));
    }
  }
  for (int threads : {1, 2, 4}) {
    tf::session<graph, tf::cpu, tf::default_registry, fuse, true, true> parallel(graph{}, device, tf::parallel{threads});
    // Three callers at once, each holding every fetched value of its runs until the end: a run
    // never writes into a buffer a caller still holds, and each gives the sequential session's bits.
    std::array<bool, 3> all_same{};
    std::vector<std::thread> callers;
    for (std::size_t c = 0; c < 3; ++c)
      callers.emplace_back([&, c] {
        std::vector<std::tuple<tf::typed_tensor<float>, tf::typed_tensor<float>, tf::typed_tensor<float>>> kept;
        bool same = true;
        for (std::size_t run = 0; run < 16; ++run) {
          const std::size_t seed = (run + c) % inputs.size();
          auto r = parallel.run(tf::feed(sx, inputs[seed]), tf::fetch(s4), tf::fetch(s3), tf::fetch(s5));
          if (!r.ok()) {
            same = false;
            break;
          }
          kept.push_back(std::move(*r));
        }
        for (std::size_t run = 0; run < kept.size(); ++run) same = same && values_of(kept[run]) == want[(run + c) % inputs.size()];
        all_same[c] = same;
      });
    for (auto& t : callers) t.join();
    for (bool same : all_same) CHECK(same);
  }
}

TEST_CASE("static parallel executor: reads and assigns of a variable keep the plan's order", "[parallel][static]") {
  // `doubled` reads v before the assign replaces it, in every run, however the steps interleave.
  constexpr auto v = tf::variable<"v", float, static_shape<4>>;
  constexpr auto feed = tf::input<"u", float, static_shape<4>>;
  constexpr auto doubled = v * 2.0_c;
  constexpr auto update = tf::assign(v, tf::exp(feed) + 1.0_c);
  tf::cpu device;
  tf::session sequential(tf::graph(doubled, update), device);
  tf::session parallel(tf::graph(doubled, update), device, tf::parallel{2});
  REQUIRE(sequential.initialize(v, 0.0f).ok());
  REQUIRE(parallel.initialize(v, 0.0f).ok());
  for (int run = 0; run < 200; ++run) {
    const tf::tensor u = *tf::tensor::filled<float>(tf::shape{4}, static_cast<float>(run % 7) * 0.1f);
    auto want = sequential.run(tf::feed(feed, u), tf::fetch(doubled), tf::fetch(update));
    auto got = parallel.run(tf::feed(feed, u), tf::fetch(doubled), tf::fetch(update));
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    REQUIRE(same_bits(std::get<0>(*got), std::get<0>(*want)));
    REQUIRE(same_bits(std::get<1>(*got), std::get<1>(*want)));
  }
}

TEST_CASE("static parallel executor: many threads share one parallel session", "[parallel][static]") {
  tf::cpu device;
  tf::session sequential(tf::graph(y), device);
  tf::session parallel(tf::graph(y), device, tf::parallel{2});
  initialize_weights(sequential);
  initialize_weights(parallel);
  std::vector<tf::tensor> inputs, expected;
  for (int i = 0; i < 16; ++i) {
    inputs.push_back(random_tensor<float>(tf::shape{1 + i % 5, 8}, static_cast<std::uint64_t>(100 + i)));
    auto r = sequential.run(tf::feed(x, inputs.back()), tf::fetch(y));
    REQUIRE(r.ok());
    expected.push_back(std::get<0>(*r));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::size_t k = static_cast<std::size_t>(t * 7 + i) % inputs.size();
        auto r = parallel.run(tf::feed(x, inputs[k]), tf::fetch(y));
        if (!r.ok() || !same_bits(std::get<0>(*r), expected[k])) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
}

// 16 rows: the four products keep their weights packed (kernels/packed_operand.hpp) from the second
// run on a value. One weight changes between two values while four threads run; each run gives the
// output of one value or the other (the packing of the value it read, or that value as it is),
// never a mixture or a packing of the other value. Compared within a tolerance: a run on a packed
// b and one on b as it is may round differently.
TEST_CASE("static parallel executor: a variable packed for its products changes while threads run", "[parallel][static]") {
  tf::cpu device;
  tf::session sequential(tf::graph(y), device);
  tf::session parallel(tf::graph(y), device, tf::parallel{2});
  initialize_weights(sequential);
  initialize_weights(parallel);
  const tf::tensor values[] = {random_tensor<float>(tf::shape{8, 8}, 21), random_tensor<float>(tf::shape{8, 8}, 22)};
  std::vector<tf::tensor> inputs;
  std::vector<std::vector<float>> expected[2];
  for (int i = 0; i < 4; ++i) inputs.push_back(random_tensor<float>(tf::shape{16, 8}, static_cast<std::uint64_t>(200 + i)));
  for (int v = 0; v < 2; ++v) {
    REQUIRE(sequential.initialize(w0, values[v]).ok());
    for (const auto& in : inputs) {
      auto r = sequential.run(tf::feed(x, in), tf::fetch(y));
      REQUIRE(r.ok());
      expected[v].push_back(floats(std::get<0>(*r)));
    }
  }
  REQUIRE(sequential.derived_forms() == 4);
  auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(std::abs(a[i] - b[i]) <= 1e-5f * (1 + std::abs(b[i])))) return false;
    return true;
  };
  REQUIRE_FALSE(close(expected[0][0], expected[1][0]));
  REQUIRE(parallel.initialize(w0, values[0]).ok());
  std::atomic<int> wrong{0};
  std::atomic<bool> running{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const std::size_t k = static_cast<std::size_t>(t + i) % inputs.size();
        auto r = parallel.run(tf::feed(x, inputs[k]), tf::fetch(y));
        if (!r.ok()) { ++wrong; continue; }
        const auto got = floats(std::get<0>(*r));
        if (!close(got, expected[0][k]) && !close(got, expected[1][k])) ++wrong;
      }
    });
  std::thread writer([&] {
    for (int i = 0; running.load(); ++i) {
      if (!parallel.initialize(w0, values[i % 2]).ok()) ++wrong;
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  running = false;
  writer.join();
  CHECK(wrong.load() == 0);
  // Once the writes stop, the second run packs the value it reads.
  REQUIRE(parallel.initialize(w0, values[1]).ok());
  for (int run = 0; run < 2; ++run) {
    auto r = parallel.run(tf::feed(x, inputs[0]), tf::fetch(y));
    REQUIRE(r.ok());
    CHECK(close(floats(std::get<0>(*r)), expected[1][0]));
  }
  CHECK(parallel.derived_forms() == 4);
}

TEST_CASE("static parallel executor: a thread count outside [1, 4096] is refused, not clamped", "[parallel][static]") {
  tf::cpu device;
  for (int threads : {0, -1, tf::max_pool_threads + 1, 100000}) {
    tf::session s(tf::graph(y), device, tf::parallel{threads});
    CHECK(s.init_status().code() == tf::status_code::invalid_argument);
    CHECK_THAT(std::string(s.init_status().message()),
               Catch::Contains("parallel{threads} is " + std::to_string(threads)) && Catch::Contains("1 to 4096"));
    initialize_weights(s);
    auto r = s.run(tf::feed(x, random_tensor<float>(tf::shape{2, 8}, 1)), tf::fetch(y));
    REQUIRE(!r.ok());
    CHECK(r.status() == s.init_status());
  }
  tf::session one(tf::graph(y), device, tf::parallel{1});
  CHECK(one.init_status().ok());
}

TEST_CASE("static parallel executor: no heap allocation per step once sized", "[parallel][static][allocations]") {
  tf::cpu device;
  tf::session parallel(tf::graph(y), device, tf::parallel{2});
  initialize_weights(parallel);
  const tf::tensor xt = random_tensor<float>(tf::shape{4, 8}, 5);
  auto step = [&] {
    auto r = parallel.run(tf::feed(x, xt), tf::fetch(y));
    if (!r.ok()) std::abort();
  };
  // Each pool thread sizes its kernel scratch cache the first time it runs a matmul; by then
  // every thread has.
  for (int i = 0; i < 200; ++i) step();
  const long allocations = tf::test::allocations_per_calls(50, step);
  if (tf::test::counting_available) CHECK(allocations == 0);
  else WARN("allocations are not counted under a sanitizer");
}

TEST_CASE("async kernels: the parallel runtime executor does not hold a thread while a kernel works", "[parallel][async]") {
  auto g = fan_of_copies();
  tf::cpu device;
  const tf::tensor xv = *tf::tensor::from_values<float>({1, 2, 3, 4}, tf::shape{4});
  for (int threads : {1, 2}) {
    // Each copy finishes only once all eight have started: one inter-op thread (and the caller)
    // can start them all only if none is waited for.
    service().reset(8, std::chrono::milliseconds(10000));
    small_session s(g, device, threads);
    auto out = s.run({{"x", xv}}, {"s"});
    INFO(out.status().to_string());
    REQUIRE(out.ok());
    CHECK(floats((*out)[0]) == std::vector<float>{8, 16, 24, 32});
  }
  // The sequential executor waits for each kernel in turn: the first copy gives up, and its error
  // is the step's status, naming the node.
  service().reset(8, std::chrono::milliseconds(50));
  small_session sequential(g, device, 0);
  auto out = sequential.run({{"x", xv}}, {"s"});
  tf::test::require_error(out, tf::status_code::deadline_exceeded, "node 'd0' (deferred_copy): the other copies never started");
  // Without the barrier, both executors agree.
  for (int threads : {0, 1, 2}) {
    service().reset(1, std::chrono::milliseconds(10000));
    small_session s(g, device, threads);
    for (int run = 0; run < 20; ++run) {
      auto r = s.run({{"x", xv}}, {"s", "d3"});
      REQUIRE(r.ok());
      CHECK(floats((*r)[0]) == std::vector<float>{8, 16, 24, 32});
      CHECK(floats((*r)[1]) == std::vector<float>{1, 2, 3, 4});
    }
  }
}

TEST_CASE("async kernels: an error reported through the callback ends the step", "[parallel][async]") {
  auto g = fan_of_copies(5);
  tf::cpu device;
  const tf::tensor xv = *tf::tensor::from_values<float>({1, 2, 3, 4}, tf::shape{4});
  service().reset(1, std::chrono::milliseconds(10000));
  for (int threads : {0, 1, 2}) {
    small_session s(g, device, threads);
    for (int run = 0; run < 5; ++run)
      tf::test::require_error(s.run({{"x", xv}}, {"s"}), tf::status_code::internal,
                              "node 'd5' (deferred_copy): the copy engine failed");
    auto ok = s.run({{"x", xv}}, {"d4"});  // a run that does not reach d5
    REQUIRE(ok.ok());
    CHECK(floats((*ok)[0]) == std::vector<float>{1, 2, 3, 4});
  }
}

TEST_CASE("async kernels in static graphs: parallel and sequential sessions", "[parallel][async][static]") {
  constexpr auto in = tf::input<"in", float, static_shape<4>>;
  constexpr auto copied = tf::apply<deferred_copy{}>(in) + tf::apply<deferred_copy{}>(tf::exp(in));
  constexpr auto broken = tf::apply<deferred_copy{.fail = true}>(in);
  using graph = decltype(tf::graph(copied, broken));
  tf::cpu device;
  tf::session<graph, tf::cpu, static_registry> sequential(tf::graph(copied, broken), device);
  tf::session<graph, tf::cpu, static_registry, true, true, true> parallel(
      tf::graph(copied, broken), device, tf::parallel{2});
  service().reset(1, std::chrono::milliseconds(10000));
  const tf::tensor v = *tf::tensor::from_values<float>({0, 1, -1, 2}, tf::shape{4});
  std::vector<float> want;
  for (float e : {0.f, 1.f, -1.f, 2.f}) want.push_back(e + std::exp(e));
  for (int run = 0; run < 10; ++run) {
    auto a = sequential.run(tf::feed(in, v), tf::fetch(copied));
    auto b = parallel.run(tf::feed(in, v), tf::fetch(copied));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(same_bits(std::get<0>(*a), std::get<0>(*b)));
    const auto got = std::get<0>(*b).values();
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-6));
  }
  tf::test::require_error(parallel.run(tf::feed(in, v), tf::fetch(broken)), tf::status_code::internal,
                          "(deferred_copy): the copy engine failed");
  tf::test::require_error(sequential.run(tf::feed(in, v), tf::fetch(broken)), tf::status_code::internal,
                          "(deferred_copy): the copy engine failed");
}
