// SPDX-License-Identifier: Apache-2.0
// Heap allocations per step, counted by replacing the C allocation functions in this executable
// (allocation_counter.hpp), so operator new, Eigen's aligned_malloc and every library count.
//
// The claim tested: a step of a static graph on the cpu policy, or on the thread_pool policy with its
// kernels split over the pool's threads, allocates nothing once the first run has sized the state
// (memory plan arena, kernel scratch), for static shapes and for run-time shapes that repeat. The caller drops each step's results before the next, so the fetched
// outputs' buffers are reused.
#include "support.hpp"

#include <cstring>
#include <type_traits>
#include <vector>

#include "allocation_counter.hpp"
#include "../../examples/models.hpp"

namespace tf = typeflow;
using namespace tf::literals;

namespace {

template <class T>
void keep(const T& v) {
  asm volatile("" : : "g"(&v) : "memory");
}

template <class Model, bool PlanMemory, class Device = tf::cpu>
long model_allocations(std::int64_t batch, Device&& device = Device()) {
  tf::session<typename Model::graph, std::remove_cvref_t<Device>, tf::default_registry, true, PlanMemory> s(
      typename Model::graph{}, device);
  const typename Model::weights w;
  REQUIRE(Model::initialize(s, w).ok());
  const tf::tensor x = Model::input(batch);
  bool ok = true;
  // On a pool, which thread takes which block varies from run to run, and a thread's scratch cache
  // grows to the largest block it has worked on: runs enough for each to have had every size.
  if (device.num_threads() > 1)
    for (int i = 0; i < 20; ++i) ok = ok && s.run(tf::feed(Model::x, x), tf::fetch(Model::y)).ok();
  const long n = tf::test::allocations_per_calls(5, [&] {
    auto r = s.run(tf::feed(Model::x, x), tf::fetch(Model::y));
    ok = ok && r.ok();
  });
  REQUIRE(ok);
  return n;
}

}  // namespace

TEST_CASE("the counting hook sees operator new, malloc and Eigen's aligned_malloc", "[allocations]") {
  CHECK(tf::test::allocations_per_calls(3, [] { auto p = std::make_unique<int>(1); keep(p.get()); }) == 3);
  CHECK(tf::test::allocations_per_calls(2, [] { void* p = std::malloc(16); keep(p); std::free(p); }) == 2);
  CHECK(tf::test::allocations_per_calls(1, [] {
          void* p = Eigen::internal::aligned_malloc(1 << 20);
          keep(p);
          Eigen::internal::aligned_free(p);
        }) == 1);
  // A graph run without the memory plan allocates its intermediates' buffers each step when the
  // caller keeps the results; the count proves the hook sees the executor's allocations.
  constexpr auto a = tf::input<"a", float, tf::static_shape<256>>;
  constexpr auto b = tf::exp(a) * 2.0_c;
  using g = decltype(tf::graph(b));
  tf::cpu device;
  tf::session<g, tf::cpu> s(g{}, device);
  const tf::tensor in = *tf::tensor::filled<float>(tf::shape{256}, 1.0f);
  std::vector<tf::tensor> kept;
  kept.reserve(16);
  CHECK(tf::test::allocations_per_calls(4, [&] { kept.push_back(std::get<0>(*s.run(tf::feed(a, in), tf::fetch(b)))); }) >= 4);
}

TEST_CASE("a static-shape graph step allocates nothing", "[allocations]") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<32, 64>>;
  constexpr auto w = tf::variable<"w", float, tf::static_shape<64, 64>>;
  constexpr auto h = tf::relu(tf::matmul(x, w) + 0.5_c);
  constexpr auto y = tf::softmax(tf::matmul(h, w) * 0.25_c) + tf::sigmoid(h);
  using g = decltype(tf::graph(y));
  tf::cpu device;
  tf::session<g, tf::cpu> s(g{}, device);
  REQUIRE(s.initialize(w, 0.01).ok());
  const tf::tensor in = tf::test::random_tensor<float>(tf::shape{32, 64}, 5);
  CHECK(tf::test::allocations_per_calls(10, [&] { auto r = s.run(tf::feed(x, in), tf::fetch(y)); keep(&r); }) == 0);
}

namespace {

// The model's output with and without the memory plan, which must be bitwise equal.
template <class Model>
bool same_with_and_without_plan(std::int64_t batch) {
  tf::cpu device;
  tf::session<typename Model::graph, tf::cpu> planned(typename Model::graph{}, device);
  tf::session<typename Model::graph, tf::cpu, tf::default_registry, true, false> own(typename Model::graph{}, device);
  const typename Model::weights w;
  REQUIRE(Model::initialize(planned, w).ok());
  REQUIRE(Model::initialize(own, w).ok());
  const tf::tensor x = Model::input(batch);
  auto a = planned.run(tf::feed(Model::x, x), tf::fetch(Model::y));
  auto b = own.run(tf::feed(Model::x, x), tf::fetch(Model::y));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const tf::tensor& ta = std::get<0>(*a).untyped();
  const tf::tensor& tb = std::get<0>(*b).untyped();
  return ta.shape() == tb.shape() && std::memcmp(ta.data(), tb.data(), ta.bytes()) == 0;
}

}  // namespace

TEST_CASE("MLP and CNN give bitwise the same results with and without the memory plan", "[allocations][models]") {
  CHECK(same_with_and_without_plan<models::mlp>(1));
  CHECK(same_with_and_without_plan<models::mlp>(17));
  CHECK(same_with_and_without_plan<models::cnn>(1));
  CHECK(same_with_and_without_plan<models::cnn>(3));
}

TEST_CASE("MLP and CNN steps allocate nothing with the memory plan", "[allocations][models]") {
  CHECK(model_allocations<models::mlp, true>(1) == 0);
  CHECK(model_allocations<models::mlp, true>(64) == 0);
  CHECK(model_allocations<models::cnn, true>(1) == 0);
  CHECK(model_allocations<models::cnn, true>(8) == 0);
  // Without the plan every intermediate keeps a buffer of its own in the state, reused from step
  // to step, so the count is zero too: what the plan saves is memory (benchmarks/bench_memory).
  CHECK(model_allocations<models::mlp, false>(64) == 0);
  CHECK(model_allocations<models::cnn, false>(8) == 0);
}

TEST_CASE("thread_pool's parallel_for takes nothing from the heap", "[allocations][threads]") {
  tf::thread_pool pool(2);
  std::vector<float> v(1 << 16, 1.0f);
  CHECK(tf::test::allocations_per_calls(20, [&] {
          pool.parallel_for(static_cast<std::int64_t>(v.size()), 100.0, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t i = first; i < last; ++i) v[static_cast<std::size_t>(i)] *= 1.0001f;
          });
        }) == 0);
}

TEST_CASE("MLP and CNN steps on a thread pool allocate nothing", "[allocations][models][threads]") {
  // Batches large enough for every kernel to split its work over both threads: the split takes
  // nothing from the heap (device/parallel_for.hpp), where Eigen's ThreadPoolDevice allocated its
  // task closures on every call.
  CHECK(model_allocations<models::mlp, true>(64, tf::thread_pool(2)) == 0);
  CHECK(model_allocations<models::cnn, true>(16, tf::thread_pool(2)) == 0);
  CHECK(model_allocations<models::mlp, true>(1, tf::thread_pool(2)) == 0);
}

TEST_CASE("a tensor from the cpu policy costs what tensor::allocate costs: one block and one buffer", "[allocations][device]") {
  tf::cpu device;
  const long by_policy = tf::test::allocations_per_calls(10, [&] {
    auto t = device.allocate(tf::dtype::f32, tf::shape{64, 64});
    keep(&t);
  });
  const long by_tensor = tf::test::allocations_per_calls(10, [&] {
    auto t = tf::tensor::allocate(tf::dtype::f32, tf::shape{64, 64});
    keep(&t);
  });
  CHECK(by_policy == 20);
  CHECK(by_tensor == 20);
}

TEST_CASE("a BFC pool serves tensors without the heap once it holds a region", "[allocations][device][bfc]") {
  // The buffer object of each tensor still comes from operator new; the block does not.
  tf::basic_cpu<tf::bfc_allocator<tf::host_sub_allocator>> device(std::in_place, tf::bfc_options{.memory_limit = 1 << 24});
  CHECK(tf::test::allocations_per_calls(10, [&] {
          auto a = device.allocate(tf::dtype::f32, tf::shape{64, 64});
          auto b = device.allocate(tf::dtype::f32, tf::shape{100});
          keep(&a);
          keep(&b);
        }) == 20);
  // A static-shape step on the pool allocates nothing: its arena and fetched output stay allocated.
  constexpr auto x = tf::input<"x", float, tf::static_shape<32, 64>>;
  constexpr auto w = tf::variable<"w", float, tf::static_shape<64, 64>>;
  constexpr auto y = tf::softmax(tf::relu(tf::matmul(x, w)) * 0.25_c);
  tf::session s(tf::graph(y), device);
  REQUIRE(s.initialize(w, 0.01).ok());
  const tf::tensor in = tf::test::random_tensor<float>(tf::shape{32, 64}, 5);
  CHECK(tf::test::allocations_per_calls(10, [&] { auto r = s.run(tf::feed(x, in), tf::fetch(y)); keep(&r); }) == 0);
  CHECK(device.allocator().stats().bytes_in_use > 0);
}
