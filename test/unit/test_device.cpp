// SPDX-License-Identifier: Apache-2.0
// Device policies and their allocators: basic_cpu and basic_thread_pool over a BFC pool, a tracking
// allocator and allocators written here run the kernels of cpu and thread_pool (one family each) and
// give their results; allocation failures come back from call with a message; tensors keep a
// stateful allocator alive after the policy is gone; sessions, static and runtime, run on them.
#include "support.hpp"

#include <typeflow/device/spin_team.hpp>
#include <typeflow/device/spin_wait.hpp>
#include <typeflow/memory/bfc_allocator.hpp>
#include <typeflow/memory/cpu_allocator.hpp>
#include <typeflow/memory/device_memory.hpp>
#include <typeflow/memory/heap_allocator.hpp>
#include <typeflow/memory/tracking_allocator.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace tf = typeflow;
using namespace tf::literals;

namespace {

using host_bfc = tf::bfc_allocator<tf::host_sub_allocator>;
constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// What a user might write: blocks from the C heap, every live block in a map, counts in the stats,
// and a record of its own destruction (the lifetime tests read it after the policy is gone).
struct allocator_log {
  bool destroyed = false;
  std::size_t bytes_in_use_when_destroyed = 0;
  std::size_t allocations = 0;
};
class logging_allocator {
 public:
  static constexpr std::string_view name = "logging";
  explicit logging_allocator(allocator_log* log = nullptr) : log_(log) {}
  logging_allocator(const logging_allocator&) = delete;
  logging_allocator& operator=(const logging_allocator&) = delete;
  ~logging_allocator() {
    for (auto& [p, n] : live_) std::free(p);
    if (log_ != nullptr) {
      log_->destroyed = true;
      log_->bytes_in_use_when_destroyed = in_use_;
    }
  }

  tf::result<void*> allocate(std::size_t bytes, std::size_t alignment) {
    if (auto st = tf::check_alignment(name, alignment); !st.ok()) return st;
    void* p = std::aligned_alloc(alignment, (bytes + alignment) / alignment * alignment);
    if (p == nullptr) return tf::errors::resource_exhausted(name, ": out of memory");
    std::lock_guard lock(mu_);
    live_[p] = bytes;
    in_use_ += bytes;
    ++allocations_;
    if (log_ != nullptr) ++log_->allocations;
    return p;
  }
  void deallocate(void* p, std::size_t bytes) {
    if (p == nullptr) return;
    std::lock_guard lock(mu_);
    auto it = live_.find(p);
    REQUIRE(it != live_.end());
    REQUIRE(it->second == bytes);
    in_use_ -= bytes;
    live_.erase(it);
    std::free(p);
  }
  tf::allocator_stats stats() const {
    std::lock_guard lock(mu_);
    tf::allocator_stats s;
    s.bytes_in_use = in_use_;
    s.num_allocs = allocations_;
    return s;
  }

 private:
  allocator_log* log_;
  mutable std::mutex mu_;
  std::unordered_map<void*, std::size_t> live_;
  std::size_t in_use_ = 0;
  std::size_t allocations_ = 0;
};

// A stateless user allocator: interchangeable instances, so a policy needs no owner for it.
struct malloc_allocator {
  static constexpr std::string_view name = "malloc";
  static tf::result<void*> allocate(std::size_t bytes, std::size_t alignment) {
    if (auto st = tf::check_alignment(name, alignment); !st.ok()) return st;
    return std::aligned_alloc(alignment, (bytes + alignment) / alignment * alignment);
  }
  static void deallocate(void* p, std::size_t) { std::free(p); }
  static tf::allocator_stats stats() { return {}; }
};

using bfc_cpu = tf::basic_cpu<host_bfc>;
using tracking_cpu = tf::basic_cpu<tf::tracking_allocator<tf::cpu_allocator>>;
using logging_cpu = tf::basic_cpu<logging_allocator>;
using malloc_cpu = tf::basic_cpu<malloc_allocator>;
using bfc_pool = tf::basic_thread_pool<host_bfc>;

// A fresh policy of each kind (the allocator types differ in how they are built).
template <class D>
std::unique_ptr<D> make_policy() {
  if constexpr (std::is_same_v<D, bfc_cpu>) return std::make_unique<D>(std::in_place, tf::bfc_options{.memory_limit = 64 * MiB});
  else if constexpr (std::is_same_v<D, tracking_cpu>) return std::make_unique<D>(std::in_place, std::in_place);
  else if constexpr (std::is_same_v<D, bfc_pool>) return std::make_unique<D>(2, std::in_place, tf::bfc_options{.memory_limit = 64 * MiB});
  else return std::make_unique<D>();
}

// The policy of D's family with the default allocator, whose results D must reproduce.
template <class D>
std::unique_ptr<tf::device_family_t<D>> make_reference() {
  if constexpr (std::is_same_v<tf::device_family_t<D>, tf::thread_pool>) return std::make_unique<tf::thread_pool>(2);
  else return std::make_unique<tf::cpu>();
}

using pooled_policies = std::tuple<bfc_cpu, tracking_cpu, logging_cpu, malloc_cpu, bfc_pool>;

// The calls each policy runs, on fixed random inputs; f32 throughout.
std::vector<tf::tensor> run_kernels(auto& device) {
  const tf::tensor a = tf::test::random_tensor<float>(tf::shape{33, 17}, 1);
  const tf::tensor b = tf::test::random_tensor<float>(tf::shape{17, 9}, 2);
  const tf::tensor row = tf::test::random_tensor<float>(tf::shape{9}, 3);
  const tf::tensor images = tf::test::random_tensor<float>(tf::shape{2, 9, 9, 3}, 4);
  const tf::tensor filter = tf::test::random_tensor<float>(tf::shape{3, 3, 3, 5}, 5);
  std::vector<tf::tensor> out;
  const auto keep = [&](tf::result<tf::tensor> r) {
    INFO("status: " << r.status().to_string());
    REQUIRE(r.ok());
    out.push_back(*r);
    return *r;
  };
  const tf::tensor m = keep(tf::test::call<float>(device, tf::ops::matmul{}, a, b));      // [33, 17] x [17, 9] -> [33, 9]
  const tf::tensor s = keep(tf::test::call<float>(device, tf::ops::add{}, m, row));       // + [9], broadcast
  const tf::tensor r = keep(tf::test::call<float>(device, tf::ops::relu{}, s));
  keep(tf::test::call<float>(device, tf::ops::softmax{}, r));
  keep(tf::test::call<float>(device, tf::ops::reduce_sum{}, r));
  keep(tf::test::call<float>(device, tf::ops::conv2d{}, images, filter));                 // -> [2, 7, 7, 5]
  return out;
}

}  // namespace

TEST_CASE("policies name their allocator and belong to a family", "[device][concept]") {
  STATIC_REQUIRE(tf::device_policy<tf::cpu>);
  STATIC_REQUIRE(tf::device_policy<tf::thread_pool>);
  STATIC_REQUIRE(tf::device_policy<bfc_cpu>);
  STATIC_REQUIRE(tf::device_policy<tracking_cpu>);
  STATIC_REQUIRE(tf::device_policy<logging_cpu>);
  STATIC_REQUIRE(tf::device_policy<bfc_pool>);
  STATIC_REQUIRE_FALSE(tf::device_policy<Eigen::DefaultDevice>);
  STATIC_REQUIRE(std::is_same_v<tf::cpu::allocator_type, tf::heap_allocator>);
  STATIC_REQUIRE(std::is_same_v<bfc_cpu::allocator_type, host_bfc>);

  STATIC_REQUIRE(std::is_same_v<tf::device_family_t<bfc_cpu>, tf::cpu>);
  STATIC_REQUIRE(std::is_same_v<tf::device_family_t<tf::cpu>, tf::cpu>);
  STATIC_REQUIRE(std::is_same_v<tf::device_family_t<bfc_pool>, tf::thread_pool>);
  STATIC_REQUIRE(std::is_same_v<tf::device_family_t<Eigen::DefaultDevice>, Eigen::DefaultDevice>);
  // A kernel family for cpu serves every basic_cpu; one for a single policy serves that one alone.
  STATIC_REQUIRE(tf::devices<tf::cpu>::contains<bfc_cpu>);
  STATIC_REQUIRE(tf::devices<tf::cpu, tf::thread_pool>::contains<bfc_pool>);
  STATIC_REQUIRE_FALSE(tf::devices<tf::cpu>::contains<bfc_pool>);
  STATIC_REQUIRE(tf::devices<bfc_cpu>::contains<bfc_cpu>);
  STATIC_REQUIRE_FALSE(tf::devices<bfc_cpu>::contains<tf::cpu>);
  STATIC_REQUIRE_FALSE(tf::devices<bfc_cpu>::contains<logging_cpu>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::matmul, bfc_cpu, float>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::conv2d, bfc_pool, double>);
  STATIC_REQUIRE_FALSE(tf::default_registry::has_kernel<tf::ops::exp, bfc_cpu, bool>);

  // Stateless allocators need no owner; the others are shared by the policy and its buffers.
  STATIC_REQUIRE(tf::is_stateless_allocator<tf::heap_allocator>);
  STATIC_REQUIRE(tf::is_stateless_allocator<malloc_allocator>);
  STATIC_REQUIRE_FALSE(tf::is_stateless_allocator<tf::cpu_allocator>);
  STATIC_REQUIRE_FALSE(tf::is_stateless_allocator<host_bfc>);
  STATIC_REQUIRE(sizeof(tf::cpu) == sizeof(tf::basic_cpu<malloc_allocator>));
  STATIC_REQUIRE(sizeof(tf::device_memory<tf::heap_allocator>) == 1);
}

TEMPLATE_LIST_TEST_CASE("a policy over any allocator runs its family's kernels with the same results",
                        "[device][kernels]", pooled_policies) {
  auto device = make_policy<TestType>();
  auto reference = make_reference<TestType>();
  const auto got = run_kernels(*device);
  const auto expected = run_kernels(*reference);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("call " << i);
    CHECK(got[i].owns_buffer());
    CHECK(reinterpret_cast<std::uintptr_t>(got[i].data()) % tf::default_alignment == 0);
    // The same kernel on the same inputs: bitwise equal.
    REQUIRE(got[i].spec() == expected[i].spec());
    CHECK(std::memcmp(got[i].data(), expected[i].data(), got[i].bytes()) == 0);
  }
  if constexpr (!tf::is_stateless_allocator<typename TestType::allocator_type>) {
    CHECK(device->allocator().stats().num_allocs == got.size());
    CHECK(device->memory().owners() == 1 + static_cast<long>(got.size()));
  }
}

TEST_CASE("a BFC policy's stats show its tensors' bytes", "[device][bfc]") {
  bfc_cpu device(std::in_place, tf::bfc_options{.memory_limit = 16 * MiB, .initial_region_bytes = 1 * MiB});
  {
    const auto tensors = run_kernels(device);
    std::size_t chunk_bytes = 0;
    for (const auto& t : tensors) {
      CHECK(*device.allocator().requested_size(t.data()) == t.bytes());
      chunk_bytes += *device.allocator().allocated_size(t.data());
    }
    const auto s = device.allocator().stats();
    CHECK(s.num_allocs == tensors.size());
    CHECK(s.bytes_in_use == chunk_bytes);
    CHECK(s.bytes_reserved == 1 * MiB);
    const auto ok = device.allocator().check_invariants();
    INFO(ok.to_string());
    CHECK(ok.ok());
  }
  CHECK(device.allocator().stats().bytes_in_use == 0);
  CHECK(device.memory().owners() == 1);
}

TEST_CASE("a full allocator makes call return resource_exhausted, naming what and where", "[device][bfc][limit]") {
  bfc_cpu device(std::in_place, tf::bfc_options{.memory_limit = 64 * KiB});
  const tf::tensor a = tf::test::random_tensor<float>(tf::shape{256, 16}, 1);
  const tf::tensor b = tf::test::random_tensor<float>(tf::shape{16, 256}, 2);
  // [256, 16] x [16, 256] -> [256, 256]: 256 KiB under a limit of 64 KiB.
  const auto y = tf::test::call<float>(device, tf::ops::matmul{}, a, b);
  tf::test::require_error(y, tf::status_code::resource_exhausted,
                          "cannot allocate f32[256, 256] (262144 bytes) on /job:localhost/replica:0/task:0/device:CPU:0: bfc: ");
  tf::test::require_error(y, tf::status_code::resource_exhausted, "bytes_limit=65536");
  // Smaller outputs still fit: the failure left the pool as it was.
  const auto small = tf::test::call<float>(device, tf::ops::matmul{}, tf::test::random_tensor<float>(tf::shape{4, 16}, 3), b);
  REQUIRE(small.ok());
  CHECK(device.allocator().stats().bytes_in_use == 4 * 256 * 4);

  // A run-time shape that the allocator cannot hold fails the same way through device.allocate.
  tf::test::require_error(device.allocate(tf::dtype::f64, tf::shape{1024, 1024}), tf::status_code::resource_exhausted,
                          "cannot allocate f64[1024, 1024] (8388608 bytes)");
  // A shape that is no tensor's is refused before the allocator is asked.
  tf::test::require_error(device.allocate(tf::dtype::f32, tf::shape{-1, 4}), tf::status_code::invalid_argument,
                          "a dimension is unknown");
  CHECK(device.allocator().stats().num_allocs == 1);

}

TEST_CASE("a tracking policy records each step's allocations", "[device][tracking]") {
  tracking_cpu device(std::in_place, std::in_place);
  device.allocator().reset_step();
  std::size_t bytes = 0;
  {
    const auto tensors = run_kernels(device);
    for (const auto& t : tensors) bytes += t.bytes();
    const auto step = device.allocator().step_record();
    CHECK(step.num_allocs == tensors.size());
    CHECK(step.bytes_allocated == bytes);
    CHECK(step.bytes_in_use == bytes);
    CHECK(step.num_deallocs == 0);
    CHECK(device.allocator().inner().stats().bytes_in_use == bytes);
  }
  const auto step = device.allocator().reset_step();
  CHECK(step.bytes_deallocated == bytes);
  CHECK(step.bytes_in_use == 0);
  CHECK(step.peak_bytes_in_use == bytes);
}

TEST_CASE("tensors keep a stateful allocator alive after the policy is gone", "[device][lifetime]") {
  SECTION("a user's allocator is destroyed after its last buffer, with nothing in use") {
    allocator_log log;
    tf::tensor kept;
    {
      logging_cpu device(std::in_place, &log);
      const auto x = tf::tensor::from_values<float>({-1, 2, -3, 4}, tf::shape{2, 2});
      auto y = tf::test::call<float>(device, tf::ops::relu{}, *x);
      REQUIRE(y.ok());
      kept = *y;
      auto copy = device;  // copies of a policy share its allocator
      auto z = tf::test::call<float>(copy, tf::ops::neg{}, *x);
      REQUIRE(z.ok());
      CHECK(device.allocator().stats().num_allocs == 2);
      CHECK(device.memory().owners() == 4);  // device, copy, y's and z's buffers
    }
    CHECK_FALSE(log.destroyed);
    CHECK(log.allocations == 2);
    CHECK(std::vector<float>(kept.unchecked_values<float>().begin(), kept.unchecked_values<float>().end()) ==
          std::vector<float>{0, 2, 0, 4});
    tf::tensor shared = kept;
    kept = tf::tensor();
    CHECK_FALSE(log.destroyed);
    shared = tf::tensor();
    CHECK(log.destroyed);
    CHECK(log.bytes_in_use_when_destroyed == 0);
  }
  SECTION("a BFC pool outlives its policy and a static session fetched from it") {
    constexpr auto x = tf::input<"x", float, tf::static_shape<4, 8>>;
    constexpr auto y = tf::sigmoid(x * 2.0_c) + x;
    tf::tensor kept;
    const tf::tensor in = tf::test::random_tensor<float>(tf::shape{4, 8}, 9);
    {
      bfc_cpu device(std::in_place, tf::bfc_options{.memory_limit = 1 * MiB});
      tf::session s(tf::graph(y), device);
      auto r = s.run(tf::feed(x, in), tf::fetch(y));
      REQUIRE(r.ok());
      kept = std::get<0>(*r);
      CHECK(device.allocator().stats().bytes_in_use > 0);
    }
    tf::cpu cpu;
    tf::session s(tf::graph(y), cpu);
    auto expected = s.run(tf::feed(x, in), tf::fetch(y));
    REQUIRE(expected.ok());
    const tf::tensor& e = std::get<0>(*expected);
    REQUIRE(kept.spec() == e.spec());
    CHECK(std::memcmp(kept.data(), e.data(), e.bytes()) == 0);
  }
}

TEST_CASE("threads allocating from one policy share its allocator and its count of owners", "[device][threads]") {
  bfc_cpu device(std::in_place, tf::bfc_options{.memory_limit = 64 * MiB, .initial_region_bytes = 1 * MiB});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<tf::tensor> live;
      for (int i = 0; i < 500; ++i) {
        auto made = device.allocate(tf::dtype::f32, tf::shape{1 + (i * 7 + t) % 300});
        if (!made.ok()) ++failures;
        else live.push_back(*made);
        if (live.size() > 8) live.erase(live.begin() + (i % 8));
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(device.memory().owners() == 1);
  CHECK(device.allocator().stats().bytes_in_use == 0);
  CHECK(device.allocator().stats().num_allocs == 2000);
  CHECK(device.allocator().check_invariants().ok());
}

namespace {

// Only the kernels the runtime graphs below use, f32 only: a runtime graph's dispatch table
// instantiates every kernel of its registry, for every policy it runs on.
template <class Op, template <class, class, class> class Kernel>
using f32_family = tf::kernel_family<Kernel, Op, tf::cpu_kernels::host_devices, tf::dtypes<float>>;
using runtime_test_registry = tf::registry<tf::kernel_list<
    f32_family<tf::ops::matmul, tf::cpu_kernels::eigen_matmul_kernel>, f32_family<tf::ops::add, tf::cpu_kernels::eigen_binary_kernel>,
    f32_family<tf::ops::mul, tf::cpu_kernels::eigen_binary_kernel>, f32_family<tf::ops::maximum, tf::cpu_kernels::eigen_binary_kernel>,
    f32_family<tf::ops::exp, tf::cpu_kernels::eigen_unary_kernel>, f32_family<tf::ops::neg, tf::cpu_kernels::eigen_unary_kernel>>>;

}  // namespace

TEST_CASE("static and runtime sessions run on a BFC policy", "[device][session]") {
  bfc_cpu device(std::in_place, tf::bfc_options{.memory_limit = 8 * MiB, .initial_region_bytes = 1 * MiB});
  tf::cpu cpu;
  SECTION("static session") {
    constexpr auto x = tf::input<"x", float, tf::static_shape<tf::dyn, 16>>;
    constexpr auto w = tf::variable<"w", float, tf::static_shape<16, 8>>;
    constexpr auto y = tf::softmax(tf::relu(tf::matmul(x, w)) * 0.5_c);
    const tf::tensor w0 = tf::test::random_tensor<float>(tf::shape{16, 8}, 3);
    const tf::tensor in = tf::test::random_tensor<float>(tf::shape{5, 16}, 4);
    tf::session pooled(tf::graph(y), device);
    tf::session plain(tf::graph(y), cpu);
    REQUIRE(pooled.initialize(w, w0).ok());
    REQUIRE(plain.initialize(w, w0).ok());
    for (int run = 0; run < 3; ++run) {
      auto a = pooled.run(tf::feed(x, in), tf::fetch(y));
      auto b = plain.run(tf::feed(x, in), tf::fetch(y));
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      const tf::tensor& ta = std::get<0>(*a);
      const tf::tensor& tb = std::get<0>(*b);
      REQUIRE(ta.spec() == tb.spec());
      CHECK(std::memcmp(ta.data(), tb.data(), tb.bytes()) == 0);
      CHECK(device.allocator().requested_size(ta.data()).ok());  // the fetched output is the pool's
    }
    CHECK(device.allocator().stats().bytes_in_use > 0);  // the arena and the fetched output, kept for the next run
  }
  SECTION("runtime session") {
    using registry = runtime_test_registry;
    constexpr std::string_view text = R"(
x  = placeholder() dtype=f32 shape=shape[?, 4]
w1 = const() dtype=f32 shape=shape[4, 3] value=[0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2]
b1 = const() dtype=f32 shape=shape[3] value=0.5
h  = matmul(x, w1)
hb = add(h, b1)
a  = maximum(hb, b1)
y  = mul(a, hb)
)";
    const auto run_on = [&](auto& policy) {
      using policy_type = std::remove_cvref_t<decltype(policy)>;
      using graph = tf::runtime_graph<policy_type, registry>;
      auto def = tf::parse_graph(text);
      REQUIRE(def.ok());
      auto g = graph::make(std::move(*def));
      INFO(g.status().to_string());
      REQUIRE(g.ok());
      tf::runtime_session<policy_type, registry> s(std::make_shared<const graph>(std::move(*g)), policy, 2);
      auto out = s.run({{"x", tf::test::random_tensor<float>(tf::shape{6, 4}, 7)}}, {"y:0", "a:0"});
      INFO(out.status().to_string());
      REQUIRE(out.ok());
      return *out;
    };
    const auto got = run_on(device);
    CHECK(device.allocator().stats().num_allocs >= 2);
    CHECK(device.allocator().requested_size(got[0].data()).ok());
    const auto expected = run_on(cpu);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i].spec() == expected[i].spec());
      CHECK(std::memcmp(got[i].data(), expected[i].data(), got[i].bytes()) == 0);
    }
  }
  const auto st = device.allocator().check_invariants();
  INFO(st.to_string());
  CHECK(st.ok());
}

TEST_CASE("a planned runtime step needs no more memory than forwarding did", "[device][tracking][runtime]") {
  using registry = runtime_test_registry;
  using graph = tf::runtime_graph<tracking_cpu, registry>;
  // b and c write over a and b ([4, 8] floats, 128 bytes): one buffer for the chain, one for y.
  auto def = tf::parse_graph(R"(
x = placeholder() dtype=f32 shape=shape[4, 8]
w = const() dtype=f32 shape=shape[8, 8] value=0.5
a = exp(x)
b = neg(a)
c = exp(b)
y = matmul(c, w)
)");
  REQUIRE(def.ok());
  auto g = graph::make(std::move(*def));
  REQUIRE(g.ok());
  tracking_cpu device(std::in_place, std::in_place);
  tf::runtime_session<tracking_cpu, registry> s(std::make_shared<const graph>(std::move(*g)), device);
  tf::run_options options;
  options.trace = tf::trace_level::full;
  std::vector<float> first;
  for (int run = 0; run < 4; ++run) {  // seen, recorded, planned, planned
    tf::run_metadata metadata;
    auto out = s.run({{"x", tf::test::random_tensor<float>(tf::shape{4, 8}, 3)}}, {"y"}, {}, options, &metadata);
    REQUIRE(out.ok());
    REQUIRE(metadata.memory.has_value());
    CHECK(metadata.memory->num_allocs == 2);
    CHECK(metadata.memory->bytes_allocated == 2 * 128);
    const auto y = (*out)[0].unchecked_values<const float>();
    if (run == 0) first.assign(y.begin(), y.end());
    else CHECK(std::vector<float>(y.begin(), y.end()) == first);
  }
}

TEST_CASE("a tracking policy's step memory reaches run_metadata", "[device][tracking][runtime]") {
  using registry = runtime_test_registry;
  using graph = tf::runtime_graph<tracking_cpu, registry>;
  // Three outputs of [4, 8] floats (128 bytes each); y writes over e, its only reader's input.
  auto def = tf::parse_graph(R"(
x = placeholder() dtype=f32 shape=shape[4, 8]
e = exp(x)
n = neg(x)
y = add(e, n)
)");
  REQUIRE(def.ok());
  auto g = graph::make(std::move(*def));
  REQUIRE(g.ok());
  tracking_cpu device(std::in_place, std::in_place);
  const auto shared = std::make_shared<const graph>(std::move(*g));
  for (int threads : {0, 2}) {
    tf::runtime_session<tracking_cpu, registry> s(shared, device, threads);
    tf::run_options options;
    options.trace = tf::trace_level::full;
    for (int run = 0; run < 3; ++run) {
      tf::run_metadata metadata;
      auto out = s.run({{"x", tf::test::random_tensor<float>(tf::shape{4, 8}, 3)}}, {"y"}, {}, options, &metadata);
      REQUIRE(out.ok());
      REQUIRE(metadata.memory.has_value());
      CHECK(metadata.memory->num_allocs == 2);  // e and n; y took e's buffer
      CHECK(metadata.memory->bytes_allocated == 2 * 128);
      CHECK(metadata.memory->num_deallocs == 1);  // n, after y; e's buffer leaves as the output
      CHECK(metadata.memory->peak_bytes_in_use >= 2 * 128);
    }
    tf::run_metadata untraced;
    REQUIRE(s.run({{"x", tf::test::random_tensor<float>(tf::shape{4, 8}, 3)}}, {"y"}, {}, {}, &untraced).ok());
    CHECK(!untraced.memory.has_value());
  }
}

TEST_CASE("thread_pool's parallel_for covers every index once, on the pool's threads when worth it", "[device][threads]") {
  tf::thread_pool pool(3);
  for (const std::int64_t n : {0, 1, 2, 7, 64, 1000, 100003}) {
    for (const double cost : {0.0, 1.0, 1e4, 1e7}) {
      INFO("n " << n << ", cost " << cost);
      // Catch2's assertions are not thread-safe: the blocks only record, the checks come after.
      std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
      std::atomic<bool> bad_range{false};
      std::mutex m;
      std::vector<std::thread::id> threads;
      pool.parallel_for(n, cost, [&](std::int64_t first, std::int64_t last) {
        if (first < 0 || first >= last || last > n) bad_range = true;
        for (std::int64_t i = first; i < std::min(last, n); ++i) seen[static_cast<std::size_t>(i)].fetch_add(1);
        std::lock_guard lock(m);
        threads.push_back(std::this_thread::get_id());
      });
      CHECK_FALSE(bad_range);
      CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& s) { return s.load() == 1; }));
      // Eigen's cost model: 100,000 cycles before a second thread is worth starting.
      const int expected = tf::detail::parallel_threads(n, cost, 3);
      if (static_cast<double>(n) * cost < 1.5e5) CHECK(expected == 1);
      if (n >= 3 && static_cast<double>(n) * cost > 1e6) CHECK(expected == 3);
      if (expected == 1)
        CHECK(std::all_of(threads.begin(), threads.end(), [](auto id) { return id == std::this_thread::get_id(); }));
    }
  }
  CHECK(tf::detail::parallel_threads(100, std::numeric_limits<double>::quiet_NaN(), 3) == 1);
  CHECK(tf::detail::parallel_threads(100, -1.0, 3) == 1);
  // A negative count is no work, never a call with an empty or reversed range.
  bool called = false;
  pool.parallel_for(-5, 1e7, [&](std::int64_t, std::int64_t) { called = true; });
  tf::cpu().parallel_for(-5, 1e7, [&](std::int64_t, std::int64_t) { called = true; });
  CHECK_FALSE(called);
}

TEST_CASE("parallel_for's blocks give every thread an equal share", "[device][threads]") {
  // 28 units on two threads: 4 blocks of 7 (14 each), not 7 blocks of 4 (16 and 12).
  CHECK(tf::detail::parallel_block_size(28, 2) == 7);
  CHECK(tf::detail::parallel_block_size(64, 2) == 8);  // 8 blocks: four a thread when they divide evenly
  for (std::int64_t n = 1; n <= 300; ++n)
    for (int threads = 1; threads <= 6; ++threads) {
      INFO("n " << n << ", threads " << threads);
      const std::int64_t size = tf::detail::parallel_block_size(n, threads);
      REQUIRE(size >= 1);
      REQUIRE(size <= n);
      const std::int64_t blocks = (n + size - 1) / size;
      CHECK(blocks <= 4 * threads);
      // The slowest thread's units: ceil(n / threads), the least possible.
      CHECK((blocks + threads - 1) / threads * size == (n + threads - 1) / threads);
    }
}

TEST_CASE("thread_pool's parallel_for hands blocks to its helper threads", "[device][threads]") {
  tf::thread_pool pool(2);
  // The caller's blocks wait (up to 10 s) until a helper thread has taken one, so that a caller that
  // would do every block itself fails here instead of passing by being fast.
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> helped{false};
  std::atomic<int> blocks{0};
  pool.parallel_for(64, 1e7, [&](std::int64_t, std::int64_t) {
    blocks.fetch_add(1);
    if (std::this_thread::get_id() != caller) {
      helped = true;
      return;
    }
    for (int i = 0; i < 10000 && !helped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  CHECK(helped);
  CHECK(blocks.load() == 8);  // four blocks a thread
}

TEST_CASE("spin_until reads its condition until it holds or the budget has passed", "[device][threads]") {
  int reads = 0;
  CHECK(tf::detail::spin_until([&] { return ++reads == 3; }, std::chrono::milliseconds(100)));
  CHECK(reads == 3);
  reads = 0;
  CHECK_FALSE(tf::detail::spin_until([&] { return ++reads < 0; }, std::chrono::nanoseconds::zero()));
  CHECK(reads == 1);  // no budget: one read
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(tf::detail::spin_until([] { return false; }, std::chrono::milliseconds(2)));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(2));
}

TEST_CASE("completion waits for every helper, spinning or parked", "[device][threads]") {
  for (const auto spin : {std::chrono::nanoseconds::zero(), std::chrono::nanoseconds(std::chrono::microseconds(200))}) {
    for (const int delay_ms : {0, 5}) {
      INFO("spin " << spin.count() << " ns, helpers arrive after " << delay_ms << " ms");
      tf::detail::completion done(3);
      std::atomic<int> arrived{0};
      std::vector<std::thread> helpers;
      for (int i = 0; i < 3; ++i)
        helpers.emplace_back([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
          arrived.fetch_add(1);
          done.arrive();
        });
      done.wait(spin);
      CHECK(arrived.load() == 3);
      for (auto& t : helpers) t.join();
      tf::detail::completion one(1);
      std::atomic<bool> late_arrived{false};
      std::thread late([&] {
        late_arrived = true;
        one.arrive();
      });
      one.wait(spin);
      CHECK(late_arrived.load());
      late.join();
      // Destroyed as soon as wait() returns, while the helpers may still be leaving arrive():
      // the sanitizer builds catch a helper that touches it after that.
      auto heap = std::make_unique<tf::detail::completion>(2);
      std::vector<std::thread> pair;
      for (int i = 0; i < 2; ++i) pair.emplace_back([c = heap.get()] { c->arrive(); });
      heap->wait(spin);
      heap.reset();
      for (auto& t : pair) t.join();
    }
  }
}

TEST_CASE("spin_team runs a region on every helper and the caller, one region at a time", "[device][threads]") {
  for (const int helpers : {1, 3}) {
    for (const auto spin : {std::chrono::nanoseconds::zero(), std::chrono::nanoseconds(std::chrono::microseconds(200))}) {
      INFO(helpers << " helpers, spin " << spin.count() << " ns");
      tf::detail::spin_team team(helpers, spin);
      CHECK(team.helpers() == helpers);
      CHECK(team.spin() == spin);
      struct region {
        std::mutex m;
        std::vector<std::thread::id> threads;
      };
      for (int round = 0; round < 50; ++round) {
        // Every helper, or (every other round) the first of them only.
        const int taking_part = round % 2 == 0 ? helpers : 1;
        region r;
        bool caller_ran = false, second_refused = false;
        const bool ran = team.try_run(
            taking_part,
            [](void* p) noexcept {
              auto* rp = static_cast<region*>(p);
              std::lock_guard lock(rp->m);
              rp->threads.push_back(std::this_thread::get_id());
            },
            &r, [&]() noexcept {
              caller_ran = true;
              // The team is held: a second region (another caller, or one from inside this one) is refused.
              second_refused = !team.try_run(1, [](void*) noexcept {}, nullptr, []() noexcept {});
            });
        REQUIRE(ran);
        CHECK(caller_ran);
        CHECK(second_refused);
        // Each helper taking part ran once, none of them on the caller's thread, each on a thread of its own.
        REQUIRE(r.threads.size() == static_cast<std::size_t>(taking_part));
        std::sort(r.threads.begin(), r.threads.end());
        CHECK(std::adjacent_find(r.threads.begin(), r.threads.end()) == r.threads.end());
        CHECK(std::find(r.threads.begin(), r.threads.end(), std::this_thread::get_id()) == r.threads.end());
        // Now and then long enough for the helpers to park (spin zero: they always do).
        if (round % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  tf::detail::spin_team none(0, std::chrono::microseconds(200));
  bool called = false;
  CHECK_FALSE(none.try_run(1, [](void*) noexcept {}, nullptr, [&]() noexcept { called = true; }));
  tf::detail::spin_team two(2, std::chrono::microseconds(200));
  CHECK_FALSE(two.try_run(3, [](void*) noexcept {}, nullptr, [&]() noexcept { called = true; }));
  CHECK_FALSE(two.try_run(0, [](void*) noexcept {}, nullptr, [&]() noexcept { called = true; }));
  CHECK_FALSE(called);  // more helpers than the team has, or none, runs nothing
  // More helpers than a region can name: refused before any thread starts.
  CHECK_THROWS_WITH((tf::detail::spin_team(tf::detail::spin_team::max_helpers + 1, std::chrono::microseconds(200))),
                    "spin_team: more than 65535 helpers");
  // Spins longer than a second are a second; negative ones zero.
  two.set_spin(std::chrono::hours(1));
  CHECK(two.spin() == tf::detail::spin_team::max_spin);
  two.set_spin(std::chrono::nanoseconds(-5));
  CHECK(two.spin() == std::chrono::nanoseconds::zero());
  two.set_spin(std::chrono::microseconds(250));
  CHECK(two.spin() == std::chrono::microseconds(250));
  two.set_spin(std::chrono::milliseconds(1500));
  CHECK(two.spin() == tf::detail::spin_team::max_spin);
}

TEST_CASE("thread_pool's parallel_for from several threads at once, and from inside its own blocks", "[device][threads]") {
  tf::thread_pool pool(3);
  CHECK(pool.spin_wait() == tf::thread_pool::default_spin_wait);
  pool.set_spin_wait(std::chrono::microseconds::max());  // no overflow: one second
  CHECK(pool.spin_wait() == std::chrono::seconds(1));
  pool.set_spin_wait(std::chrono::microseconds::min());  // nor here: zero
  CHECK(pool.spin_wait() == std::chrono::microseconds::zero());
  for (const auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(200)}) {
    INFO("spin " << spin.count() << " us");
    pool.set_spin_wait(spin);
    CHECK(pool.spin_wait() == spin);
    {
      // One caller: its blocks wait (up to 10 s) until a block has run on a team helper, a thread
      // that is neither the caller nor one of the Eigen pool's.
      const auto caller = std::this_thread::get_id();
      std::atomic<bool> on_helper{false}, on_eigen_pool{false};
      pool.parallel_for(64, 1e7, [&](std::int64_t, std::int64_t) {
        if (std::this_thread::get_id() != caller) {
          (pool.pool().CurrentThreadId() >= 0 ? on_eigen_pool : on_helper) = true;
          return;
        }
        for (int i = 0; i < 10000 && !on_helper; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
      CHECK(on_helper);
      CHECK_FALSE(on_eigen_pool);
    }
    // Four callers share the pool: one holds the spinning helpers, the others go to the Eigen pool.
    constexpr std::int64_t n = 5000;
    std::atomic<int> wrong{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c)
      callers.emplace_back([&] {
        for (int call = 0; call < 40; ++call) {
          std::vector<std::atomic<int>> seen(n);
          pool.parallel_for(n, 1e4, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t i = first; i < last; ++i) seen[static_cast<std::size_t>(i)].fetch_add(1);
          });
          if (!std::all_of(seen.begin(), seen.end(), [](const auto& s) { return s.load() == 1; })) wrong.fetch_add(1);
        }
      });
    for (auto& t : callers) t.join();
    CHECK(wrong.load() == 0);
    // A block that splits its own work: on the caller, the inner region finds the helpers held by
    // the outer one (and goes to the Eigen pool); on a helper, it runs there.
    std::vector<std::atomic<int>> seen(64 * 64);
    std::atomic<int> left_helper{0};
    const auto caller = std::this_thread::get_id();
    pool.parallel_for(64, 1e6, [&](std::int64_t first, std::int64_t last) {
      const auto outer = std::this_thread::get_id();
      const bool on_helper = outer != caller && pool.pool().CurrentThreadId() < 0;
      for (std::int64_t row = first; row < last; ++row)
        pool.parallel_for(64, 1e5, [&](std::int64_t a, std::int64_t b) {
          if (on_helper && std::this_thread::get_id() != outer) left_helper.fetch_add(1);
          for (std::int64_t i = a; i < b; ++i) seen[static_cast<std::size_t>(row * 64 + i)].fetch_add(1);
        });
    });
    CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& s) { return s.load() == 1; }));
    CHECK(left_helper.load() == 0);
    // An inner region's exception (thrown on a helper, its caller, or the Eigen pool) reaches the
    // inner caller, and through the outer region the outer one.
    CHECK_THROWS_WITH(pool.parallel_for(64, 1e6,
                                        [&](std::int64_t first, std::int64_t) {
                                          pool.parallel_for(64, 1e5, [&](std::int64_t a, std::int64_t b) {
                                            if (first > 0 && a <= 40 && 40 < b) throw std::runtime_error("inner block failed");
                                          });
                                        }),
                      "inner block failed");
  }
  // Pools made and dropped with their helpers spinning (at once after a region) or parked.
  for (int i = 0; i < 20; ++i) {
    tf::thread_pool p(2);
    std::atomic<std::int64_t> sum{0};
    p.parallel_for(1000, 1e6, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t k = first; k < last; ++k) sum.fetch_add(k);
    });
    CHECK(sum.load() == 999 * 1000 / 2);
    if (i % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST_CASE("thread_pool's parallel_for from one of its own threads runs there, and passes exceptions on", "[device][threads]") {
  tf::thread_pool pool(2);
  // A kernel run by a task of the same pool: splitting would wait on tasks queued behind itself.
  std::atomic<std::int64_t> sum{0};
  std::atomic<int> elsewhere{0};
  Eigen::Barrier done(2);
  for (int t = 0; t < 2; ++t)
    pool.pool().Schedule([&] {
      const auto task_thread = std::this_thread::get_id();
      pool.parallel_for(1000, 1e6, [&](std::int64_t first, std::int64_t last) {
        if (std::this_thread::get_id() != task_thread) elsewhere.fetch_add(1);
        for (std::int64_t i = first; i < last; ++i) sum.fetch_add(i);
      });
      done.Notify();
    });
  done.Wait();
  CHECK(sum.load() == 2 * 999 * 1000 / 2);
  CHECK(elsewhere.load() == 0);
  // An exception from a block reaches the caller once no thread is in a block any more.
  std::atomic<int> in_block{0};
  CHECK_THROWS_WITH(pool.parallel_for(64, 1e6,
                                      [&](std::int64_t first, std::int64_t) {
                                        in_block.fetch_add(1);
                                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                        in_block.fetch_sub(1);
                                        if (first > 0) throw std::runtime_error("block failed");
                                      }),
                    "block failed");
  CHECK(in_block.load() == 0);
}
