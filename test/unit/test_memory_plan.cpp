// SPDX-License-Identifier: Apache-2.0
// The memory plan: the arena placement algorithm on random lifetimes (checked by writing and
// verifying patterns, independently of the plan's own check), the compile-time plans of static
// graphs (reuse, forwarding, what stays out of the arena), run-time plans for run-time shapes, and
// sessions with and without the plan giving bitwise the same results.
#include "support.hpp"

#include <cstring>
#include <random>
#include <span>
#include <vector>

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;

namespace {

constexpr std::array<tf::buffer_lifetime, 4> chain_buffers{{{100, 0, 1}, {100, 1, 2}, {100, 2, 3}, {3000, 3, 4}}};
constexpr auto chain_layout = tf::plan_arena(chain_buffers, 64);
// The 3000-byte buffer goes first; buffer 0 shares its offset, 1 and 2 go above it.
static_assert(chain_layout.arena_bytes == 3008 + 128);
static_assert(chain_layout.lower_bound == 3008 + 128);
static_assert(chain_layout.total_bytes == 3008 + 3 * 128);
static_assert(tf::is_valid_layout(chain_buffers, chain_layout, 64));
static_assert(chain_layout.offset[0] == 0 && chain_layout.offset[3] == 0);  // never live together

// Random buffers, then a simulation of the steps: each buffer is filled with its own pattern at
// its first step and must still hold it at every later step of its lifetime.
template <std::size_t N>
void check_random_layouts(std::uint64_t seed, std::size_t alignment, double& worst) {
  std::mt19937_64 rng(seed);
  std::array<tf::buffer_lifetime, N> b{};
  const std::size_t steps = 1 + rng() % 40;
  for (auto& x : b) {
    x.bytes = rng() % 4 == 0 ? 0 : 1 + rng() % (rng() % 2 ? 300 : 200000);
    x.first = rng() % steps;
    x.last = x.first + rng() % (steps - x.first);
  }
  const auto l = tf::plan_arena(b, alignment);
  REQUIRE(tf::is_valid_layout(b, l, alignment));
  // The run-time placement (the runtime executor's) is the same algorithm on vectors.
  const std::vector<tf::buffer_lifetime> v(b.begin(), b.end());
  const auto r = tf::plan_arena(std::span<const tf::buffer_lifetime>(v), alignment);
  REQUIRE(r.arena_bytes == l.arena_bytes);
  for (std::size_t i = 0; i < N; ++i)
    if (b[i].bytes != 0) REQUIRE(r.offset[i] == l.offset[i]);
  REQUIRE(l.arena_bytes >= l.lower_bound);
  REQUIRE(l.arena_bytes <= l.total_bytes);
  if (l.lower_bound != 0) worst = std::max(worst, double(l.arena_bytes) / double(l.lower_bound));

  std::vector<unsigned char> arena(l.arena_bytes + 1);
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < N; ++i)
      if (b[i].bytes != 0 && b[i].first == s) std::memset(arena.data() + l.offset[i], int(i + 1), b[i].bytes);
    for (std::size_t i = 0; i < N; ++i) {
      if (b[i].bytes == 0 || s < b[i].first || s > b[i].last) continue;
      bool intact = arena[l.offset[i] + b[i].bytes - 1] == static_cast<unsigned char>(i + 1);
      for (std::size_t k = 0; k < b[i].bytes; k += 61) intact = intact && arena[l.offset[i] + k] == static_cast<unsigned char>(i + 1);
      REQUIRE(intact);
    }
  }
}

}  // namespace

TEST_CASE("plan_arena: random lifetimes never share memory while live", "[plan][arena]") {
  double worst = 1.0;
  for (std::uint64_t seed = 0; seed < 150; ++seed) {
    check_random_layouts<7>(seed, 64, worst);
    check_random_layouts<40>(seed + 1000, seed % 2 ? 64 : 256, worst);
  }
  INFO("largest arena / max-live ratio: " << worst);
  CHECK(worst < 2.0);
}

TEST_CASE("plan_arena: no buffers, and buffers of zero bytes, take no room", "[plan][arena]") {
  constexpr std::array<tf::buffer_lifetime, 3> none{};
  constexpr auto l = tf::plan_arena(none, 64);
  STATIC_REQUIRE(l.arena_bytes == 0);
  STATIC_REQUIRE(l.lower_bound == 0);
}

namespace {

constexpr auto x = tf::input<"x", float, static_shape<4, 16>>;
constexpr auto w = tf::variable<"w", float, static_shape<16, 16>>;
constexpr auto h1 = tf::relu(tf::matmul(x, w) + 0.5_c);       // matmul, then a fused group
constexpr auto h2 = tf::matmul(h1, w);
constexpr auto y = tf::tanh(h2) * 2.0_c - tf::sigmoid(h1);     // reads h1 again: h1 lives until here
using graph = decltype(tf::graph(y));
using plan = tf::static_plan<graph, true, graph::position<decltype(y)>()>;
using memory = tf::static_memory_plan<plan>;

constexpr std::size_t p_mm1 = graph::position<decltype(tf::matmul(x, w))>();
constexpr std::size_t p_h1 = graph::position<decltype(h1)>();
constexpr std::size_t p_h2 = graph::position<decltype(h2)>();
constexpr std::size_t p_y = graph::position<decltype(y)>();

}  // namespace

TEST_CASE("a static graph's plan is made at compile time", "[plan][static]") {
  STATIC_REQUIRE(memory::is_static);
  constexpr auto& l = memory::static_layout;
  // Intermediates: the two matmuls and the fused relu group; the fetched y is not in the arena.
  STATIC_REQUIRE(l.num_planned == 3);
  STATIC_REQUIRE(l.planned[p_mm1] && l.planned[p_h1] && l.planned[p_h2]);
  STATIC_REQUIRE(!l.planned[p_y]);
  STATIC_REQUIRE(!l.planned[graph::position<decltype(x)>()] && !l.planned[graph::position<decltype(w)>()]);
  // The fused relu group writes over the first matmul's output, which nothing else reads.
  STATIC_REQUIRE(l.forwarded == 1);
  STATIC_REQUIRE(l.offset(p_h1) == l.offset(p_mm1));
  // h1 is read by the last step, so h1 and h2 are live together: 2 x 256 bytes.
  STATIC_REQUIRE(l.arena.arena_bytes == 512);
  STATIC_REQUIRE(l.max_live_bytes == 512);
  STATIC_REQUIRE(l.intermediate_bytes == 768);
  const std::string d = memory::describe();
  CHECK_THAT(d, Catch::Contains("arena 512 bytes for 3 intermediates (1 forwarded"));
  CHECK_THAT(d, Catch::Contains("node 5 (relu) f32[4, 16]: steps 3-5, offset 0"));
}

TEMPLATE_LIST_TEST_CASE("sessions with and without the memory plan agree bitwise", "[plan][session]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  tf::session<graph, TestType> planned(graph{}, device);
  tf::session<graph, TestType, tf::default_registry, true, false> own(graph{}, device);
  const tf::tensor w0 = tf::test::random_tensor<float>(tf::shape{16, 16}, 7, -0.3, 0.3);
  REQUIRE(planned.initialize(w, w0).ok());
  REQUIRE(own.initialize(w, w0).ok());
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const tf::tensor in = tf::test::random_tensor<float>(tf::shape{4, 16}, seed);
    auto a = planned.run(tf::feed(x, in), tf::fetch(y));
    auto b = own.run(tf::feed(x, in), tf::fetch(y));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    const tf::tensor& ta = std::get<0>(*a);
    const tf::tensor& tb = std::get<0>(*b);
    CHECK(std::memcmp(ta.data(), tb.data(), ta.bytes()) == 0);
  }
  CHECK_THAT(decltype(planned)::describe_memory(tf::fetch(y)), Catch::Contains("arena 512 bytes"));
}

TEST_CASE("fetched tensors stay out of the arena and stay valid after later runs", "[plan][session]") {
  tf::cpu device;
  tf::session<graph, tf::cpu> s(graph{}, device);
  REQUIRE(s.initialize(w, 0.25).ok());
  const tf::tensor in1 = tf::test::random_tensor<float>(tf::shape{4, 16}, 1);
  const tf::tensor in2 = tf::test::random_tensor<float>(tf::shape{4, 16}, 2);
  auto first = s.run(tf::feed(x, in1), tf::fetch(h1), tf::fetch(y));
  REQUIRE(first.ok());
  const std::vector<double> h1_first = tf::test::as_doubles<float>(std::get<0>(*first));
  const std::vector<double> y_first = tf::test::as_doubles<float>(std::get<1>(*first));
  // Runs with other fetch sets (other plans, other arena offsets) and other inputs in between.
  for (int i = 0; i < 3; ++i) {
    REQUIRE(s.run(tf::feed(x, in2), tf::fetch(y)).ok());
    REQUIRE(s.run(tf::feed(x, in2), tf::fetch(h2)).ok());
  }
  CHECK(tf::test::as_doubles<float>(std::get<0>(*first)) == h1_first);
  CHECK(tf::test::as_doubles<float>(std::get<1>(*first)) == y_first);
  auto again = s.run(tf::feed(x, in1), tf::fetch(y));
  REQUIRE(again.ok());
  CHECK(tf::test::as_doubles<float>(std::get<0>(*again)) == y_first);
}

namespace {

// Elementwise ops that run alone (unfused) forward their buffer down the chain.
constexpr auto v = tf::input<"v", float, static_shape<1000>>;
constexpr auto e = tf::sqrt(tf::abs(tf::tanh(tf::exp(-v) + 1.0_c) * v) + 1.0_c);
using chain_graph = decltype(tf::graph(e));
using unfused_memory = tf::static_memory_plan<tf::static_plan<chain_graph, false, chain_graph::position<decltype(e)>()>>;
using fused_memory = tf::static_memory_plan<tf::static_plan<chain_graph, true, chain_graph::position<decltype(e)>()>>;

}  // namespace

TEST_CASE("an unfused elementwise chain runs in one forwarded buffer", "[plan][forwarding]") {
  // neg, exp, add, tanh, mul, abs, add are intermediates; sqrt is fetched. The first writes a
  // buffer and each later one writes over its input.
  STATIC_REQUIRE(unfused_memory::static_layout.num_planned == 7);
  STATIC_REQUIRE(unfused_memory::static_layout.forwarded == 6);
  STATIC_REQUIRE(unfused_memory::static_layout.arena.arena_bytes == 4032);
  // Fused, the whole expression is one step with no intermediate.
  STATIC_REQUIRE(fused_memory::static_layout.num_planned == 0);

  tf::cpu device;
  tf::session<chain_graph, tf::cpu, tf::default_registry, false> unfused(chain_graph{}, device);
  tf::session<chain_graph, tf::cpu, tf::default_registry, false, false> reference(chain_graph{}, device);
  const tf::tensor in = tf::test::random_tensor<float>(tf::shape{1000}, 3);
  auto a = unfused.run(tf::feed(v, in), tf::fetch(e));
  auto b = reference.run(tf::feed(v, in), tf::fetch(e));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(std::memcmp(std::get<0>(*a).untyped().data(), std::get<0>(*b).untyped().data(), 4000) == 0);
}

namespace {

constexpr auto xb = tf::input<"xb", float, static_shape<dyn, 8>>;
constexpr auto wb = tf::variable<"wb", float, static_shape<8, 8>>;
constexpr auto hb = tf::relu(tf::matmul(xb, wb) + 1.0_c);
constexpr auto yb = tf::softmax(tf::matmul(hb, wb) * 0.5_c);
using batch_graph = decltype(tf::graph(yb));
using batch_plan = tf::static_plan<batch_graph, true, batch_graph::position<decltype(yb)>()>;
using batch_memory = tf::static_memory_plan<batch_plan>;

}  // namespace

TEST_CASE("run-time shapes: a plan per distinct fed shape, cached; the arena only grows", "[plan][dynamic]") {
  STATIC_REQUIRE(!batch_memory::is_static);
  CHECK_THAT(batch_memory::describe(), Catch::Contains("planned at run time"));
  using executor = tf::static_executor<batch_plan, tf::cpu, tf::default_registry, true>;
  using reference = tf::static_executor<batch_plan, tf::cpu, tf::default_registry, false>;
  tf::cpu device;
  tf::variable_store vars(1);
  vars.write(0, tf::test::random_tensor<float>(tf::shape{8, 8}, 11, -0.5, 0.5));
  executor::state s;
  reference::state r;
  std::size_t largest = 0;
  for (std::int64_t batch : {3, 5, 5, 1, 5, 3}) {
    const tf::tensor in = tf::test::random_tensor<float>(tf::shape{batch, 8}, static_cast<std::uint64_t>(batch));
    const tf::tensor* feeds[] = {&in, nullptr};
    const tf::static_environment env{std::span<const tf::tensor* const>(feeds), &vars};
    REQUIRE(executor::run(device, s, env).ok());
    REQUIRE(reference::run(device, r, env).ok());
    const tf::tensor& a = s.slots[batch_graph::position<decltype(yb)>()];
    const tf::tensor& b = r.slots[batch_graph::position<decltype(yb)>()];
    REQUIRE(a.shape() == tf::shape{batch, 8});
    CHECK(std::memcmp(a.data(), b.data(), a.bytes()) == 0);
    // Two [batch, 8] f32 intermediates live at once (the second matmul reads the relu group,
    // which wrote over the first matmul), each rounded up to 64 bytes.
    const std::size_t need = 2 * ((static_cast<std::size_t>(batch) * 32 + 63) / 64 * 64);
    largest = std::max(largest, need);
    CHECK(s.arena.bytes() == largest);
    const tf::tensor& hidden = s.slots[batch_graph::position<decltype(hb)>()];
    CHECK(!hidden.owns_buffer());
    CHECK(hidden.shape() == tf::shape{batch, 8});
    CHECK(s.fed[0] == tf::shape{batch, 8});
    executor::release_leaves(s);
    reference::release_leaves(r);
  }
  // One plan per distinct input shape (3, 5, 1), shared by every state: a second state that runs
  // the shapes seen so far makes none.
  using plans = tf::run_time_plans<batch_memory>;
  CHECK(plans::made() == 3);
  CHECK(plans::size() == 3);
  executor::state other;
  for (std::int64_t batch : {5, 1, 3}) {
    const tf::tensor in = tf::test::random_tensor<float>(tf::shape{batch, 8}, 1);
    const tf::tensor* feeds[] = {&in, nullptr};
    REQUIRE(executor::run(device, other, tf::static_environment{std::span<const tf::tensor* const>(feeds), &vars}).ok());
    executor::release_leaves(other);
  }
  CHECK(plans::made() == 3);
  const tf::tensor in = tf::test::random_tensor<float>(tf::shape{9, 8}, 1);
  const tf::tensor* feeds[] = {&in, nullptr};
  REQUIRE(executor::run(device, other, tf::static_environment{std::span<const tf::tensor* const>(feeds), &vars}).ok());
  CHECK(plans::made() == 4);
}

TEST_CASE("a bad fed shape is reported by the run-time plan with the node's name", "[plan][dynamic]") {
  constexpr auto a = tf::input<"a", float, static_shape<dyn>>;
  constexpr auto b = tf::input<"b", float, static_shape<dyn>>;
  constexpr auto c = tf::exp(a * b) + 1.0_c;
  constexpr auto d = c * c;
  using g = decltype(tf::graph(d));
  tf::cpu device;
  tf::session<g, tf::cpu, tf::default_registry, false> s(g{}, device);
  const tf::tensor ta = tf::test::random_tensor<float>(tf::shape{5}, 1);
  const tf::tensor tb = tf::test::random_tensor<float>(tf::shape{4}, 2);
  auto r = s.run(tf::feed(a, ta), tf::feed(b, tb), tf::fetch(d));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("(mul)"));
  // The session is still usable with good shapes afterwards.
  auto ok = s.run(tf::feed(a, ta), tf::feed(b, ta), tf::fetch(d));
  REQUIRE(ok.ok());
  CHECK(std::get<0>(*ok).shape() == tf::shape{5});
}

TEST_CASE("a value assigned to a variable is not in the arena", "[plan][variables]") {
  constexpr auto in = tf::input<"in", float, static_shape<4>>;
  constexpr auto acc = tf::variable<"acc", float, static_shape<4>>;
  constexpr auto next = tf::assign(acc, acc + in * 2.0_c);
  constexpr auto noise = tf::exp(in) * 3.0_c;  // an intermediate that would reuse memory
  constexpr auto out = next + noise;
  using g = decltype(tf::graph(out));
  tf::cpu device;
  tf::session<g, tf::cpu, tf::default_registry, false> s(g{}, device);
  REQUIRE(s.initialize(acc, 1.0).ok());
  const tf::tensor ones = *tf::tensor::filled<float>(tf::shape{4}, 1.0f);
  for (int i = 0; i < 3; ++i) REQUIRE(s.run(tf::feed(in, ones), tf::fetch(out)).ok());
  auto value = s.value_of(acc);
  REQUIRE(value.ok());
  CHECK(tf::test::as_doubles<float>(*value) == std::vector<double>(4, 7.0));
}
