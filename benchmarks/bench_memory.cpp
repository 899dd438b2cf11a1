// SPDX-License-Identifier: Apache-2.0
// Memory (BENCHMARKS.md):
//  - BFC vs malloc/free on allocation traces of MLP and CNN steps as a runtime without a memory
//    plan makes them (each output allocated at its step, freed after its last reader: TensorFlow's
//    executor), and on a random trace; fragmentation of the BFC pool after the random trace;
//  - peak bytes of a step with the memory plan vs all intermediates side by side vs the max-live
//    lower bound;
//  - heap allocations per step of a static graph (counted with an interposed malloc).
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../examples/models.hpp"
#include "../test/unit/allocation_counter.hpp"
#include "harness.hpp"

namespace tf = typeflow;
using tf::bench::keep;

namespace {

struct event {
  bool allocate;
  std::size_t bytes;
  std::size_t alignment;
  std::size_t id;  // which live block
};

struct trace {
  std::vector<event> events;
  std::size_t blocks = 0;  // ids in use
};

template <class Model>
using plan_of = tf::static_plan<typename Model::graph, true, Model::graph::template position<decltype(Model::y)>()>;

// The node shapes of a step of Model at this batch size.
template <class Model>
std::array<tf::shape, Model::graph::size> step_shapes(std::int64_t batch) {
  using executor = tf::static_executor<plan_of<Model>, tf::cpu, tf::default_registry>;
  const tf::tensor x = Model::input(batch);
  std::array<const tf::tensor*, Model::graph::num_input_nodes + 1> feeds{};
  feeds[0] = &x;
  tf::variable_store vars(Model::graph::num_variables);
  std::array<tf::shape, Model::graph::size> sh{};
  if (!executor::infer_shapes(tf::static_environment{feeds, &vars}, sh).ok()) std::abort();
  return sh;
}

// A step's allocations as TensorFlow's executor makes them: every op's output when its step runs,
// freed after the last step that reads it (the fetched output at the end of the step).
template <class Model>
trace step_trace(std::int64_t batch, int steps) {
  using plan = plan_of<Model>;
  using memory = tf::static_memory_plan<plan>;
  using graph = typename Model::graph;
  const auto sh = step_shapes<Model>(batch);
  trace t;
  t.blocks = graph::size;
  for (int s = 0; s < steps; ++s) {
    for (std::size_t k = 0; k < plan::num_steps; ++k) {
      const std::size_t p = plan::steps[k];
      if (graph::kinds[p] == tf::node_kind::op)
        t.events.push_back({true, static_cast<std::size_t>(sh[p].num_elements()) * 4, 64, p});
      for (std::size_t q = 0; q < graph::size; ++q)
        if (memory::plannable[q] && memory::last_read[q] == k) t.events.push_back({false, 0, 64, q});
    }
    for (std::size_t p : plan::fetches) t.events.push_back({false, 0, 64, p});
  }
  return t;
}

// Random sizes from 1 B to 1 MiB (uniform in log2), alignments of 16 to 256 bytes, and a live set
// that drifts around `live` blocks.
trace random_trace(std::size_t count, std::size_t live) {
  std::mt19937_64 rng(42);
  trace t;
  t.blocks = 2 * live;
  std::vector<std::size_t> free_ids, used;
  for (std::size_t i = 0; i < t.blocks; ++i) free_ids.push_back(i);
  for (std::size_t i = 0; i < count; ++i) {
    const bool grow = used.empty() || (!free_ids.empty() && rng() % (2 * live) >= used.size());
    if (grow) {
      const std::size_t id = free_ids.back();
      free_ids.pop_back();
      used.push_back(id);
      const double log_size = std::uniform_real_distribution<double>(0.0, 20.0)(rng);
      t.events.push_back({true, static_cast<std::size_t>(std::exp2(log_size)), std::size_t{16} << (rng() % 5), id});
    } else {
      const std::size_t k = rng() % used.size();
      t.events.push_back({false, 0, 0, used[k]});
      free_ids.push_back(used[k]);
      used[k] = used.back();
      used.pop_back();
    }
  }
  return t;
}

// Replays a trace; blocks still live at the end stay live (the caller frees them).
struct replay_state {
  std::vector<void*> ptr;
  std::vector<std::size_t> bytes;
};

template <class Alloc, class Free>
void replay(const trace& t, replay_state& r, Alloc&& alloc, Free&& release) {
  r.ptr.resize(t.blocks);
  r.bytes.resize(t.blocks);
  for (const event& e : t.events) {
    if (e.allocate) {
      r.ptr[e.id] = alloc(e.bytes, e.alignment);
      r.bytes[e.id] = e.bytes;
      keep(r.ptr[e.id]);
    } else {
      release(r.ptr[e.id], r.bytes[e.id]);
      r.ptr[e.id] = nullptr;
    }
  }
}

using bfc = tf::bfc_allocator<tf::host_sub_allocator>;

void* bfc_alloc(bfc& pool, std::size_t bytes, std::size_t alignment) {
  auto p = pool.allocate(bytes, alignment);
  if (!p.ok()) {
    std::fprintf(stderr, "bfc: %s\n", p.status().to_string().c_str());
    std::abort();
  }
  return *p;
}
void* malloc_alloc(std::size_t bytes, std::size_t alignment) {
  return alignment <= alignof(std::max_align_t) ? std::malloc(bytes)
                                                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

// BFC and malloc replaying the whole trace (everything freed at the end), ns per event.
void compare_trace(tf::bench::harness& h, const std::string& name, const trace& t) {
  bfc pool;
  replay_state a, b;
  auto with_bfc = [&] {
    replay(t, a, [&](std::size_t n, std::size_t al) { return bfc_alloc(pool, n, al); },
           [&](void* p, std::size_t n) { pool.deallocate(p, n); });
    for (std::size_t i = 0; i < a.ptr.size(); ++i)
      if (a.ptr[i]) pool.deallocate(std::exchange(a.ptr[i], nullptr), a.bytes[i]);
  };
  auto with_malloc = [&] {
    replay(t, b, malloc_alloc, [](void* p, std::size_t) { std::free(p); });
    for (void*& p : b.ptr) std::free(std::exchange(p, nullptr));
  };
  h.compare(name, "malloc/free", with_bfc, with_malloc, 11, 0.5, "ns", static_cast<double>(t.events.size()));
}

void bench_traces(tf::bench::harness& h) {
#ifdef __GLIBC__
  // glibc serves blocks above its mmap threshold with one mmap and munmap each, and raises the
  // threshold (up to 32 MiB) only after freeing such a block, so the baseline depended on the
  // process's history: 32-42 ns or 700-1100 ns per event on the CNN batch-64 trace from one run to
  // the next. Fixed thresholds put every block on the heap, as the adapted dynamic ones do.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
  const int steps = h.quick() ? 20 : 200;
  compare_trace(h, "BFC, MLP step trace, batch 1", step_trace<models::mlp>(1, steps));
  compare_trace(h, "BFC, MLP step trace, batch 64", step_trace<models::mlp>(64, steps));
  compare_trace(h, "BFC, CNN step trace, batch 1", step_trace<models::cnn>(1, steps));
  compare_trace(h, "BFC, CNN step trace, batch 64", step_trace<models::cnn>(64, steps));
  const trace random = random_trace(h.quick() ? 20000 : 200000, 500);
  compare_trace(h, "BFC, random trace (1 B-1 MiB)", random);

  // Fragmentation once the random trace has run, its last live blocks still allocated:
  // 1 - largest free chunk / free bytes of the pool (TensorFlow's measure).
  bfc pool;
  replay_state r;
  replay(random, r, [&](std::size_t n, std::size_t al) { return bfc_alloc(pool, n, al); },
         [&](void* p, std::size_t n) { pool.deallocate(p, n); });
  const tf::allocator_stats s = pool.stats();
  const double free_bytes = static_cast<double>(s.bytes_reserved - s.bytes_in_use);
  const double fragmentation = free_bytes == 0 ? 0.0 : 1.0 - static_cast<double>(s.largest_free_block) / free_bytes;
  h.add({"memory", "BFC fragmentation, random trace", "fragmentation", "%", "all free bytes in pieces (100 %)",
         100 * fragmentation, 100.0, fragmentation});
  const double in_use = static_cast<double>(s.bytes_in_use) / static_cast<double>(s.bytes_reserved);
  h.add({"memory", "BFC bytes in use / reserved, random", "utilisation", "%", "all reserved bytes in use (100 %)",
         100 * in_use, 100.0, in_use});
  for (std::size_t i = 0; i < r.ptr.size(); ++i)
    if (r.ptr[i]) pool.deallocate(r.ptr[i], r.bytes[i]);
}

// Peak bytes of a step's intermediates: the plan's arena vs the max-live lower bound, and all
// intermediates side by side (what a runtime keeping every output needs) vs the same bound.
template <class Model>
void bench_peak(tf::bench::harness& h, std::int64_t batch) {
  using memory = tf::static_memory_plan<plan_of<Model>>;
  const auto l = memory::plan_for(step_shapes<Model>(batch));
  const std::string name = std::string(Model::name) + " batch " + std::to_string(batch);
  const double bound = static_cast<double>(l.max_live_bytes) / 1024;
  h.add({"memory", name + ", plan arena", "peak bytes", "KiB", "max-live lower bound",
         static_cast<double>(l.arena.arena_bytes) / 1024, bound, static_cast<double>(l.arena.arena_bytes) / 1024 / bound});
  h.add({"memory", name + ", no reuse", "peak bytes", "KiB", "max-live lower bound",
         static_cast<double>(l.intermediate_bytes) / 1024, bound, static_cast<double>(l.intermediate_bytes) / 1024 / bound});
}

// Heap allocations per step, with the plan, against one per op output (TensorFlow's executor).
template <class Model, class Device>
void bench_allocations(tf::bench::harness& h, Device& device, const std::string& device_name, std::int64_t batch) {
  tf::session<typename Model::graph, Device> s(typename Model::graph{}, device);
  const typename Model::weights w;
  if (!Model::initialize(s, w).ok()) std::abort();
  const tf::tensor x = Model::input(batch);
  const long count = tf::test::allocations_per_calls(20, [&] { keep(s.run(tf::feed(Model::x, x), tf::fetch(Model::y))); });
  using plan = plan_of<Model>;
  std::size_t outputs = 0;
  for (std::size_t p : plan::steps) outputs += Model::graph::kinds[p] == tf::node_kind::op;
  const double per_step = static_cast<double>(count) / 20;
  h.add({"memory", std::string(Model::name) + " batch " + std::to_string(batch) + ", " + device_name,
         "allocations per step", "n", "one per op output", per_step, static_cast<double>(outputs),
         per_step / static_cast<double>(outputs)});
}

}  // namespace

int main(int argc, char** argv) {
  tf::bench::harness h("memory", argc, argv);
  bench_traces(h);
  for (std::int64_t batch : {1, 64}) {
    bench_peak<models::mlp>(h, batch);
    bench_peak<models::cnn>(h, batch);
  }
  tf::cpu cpu;
  tf::thread_pool pool(2);
  bench_allocations<models::mlp>(h, cpu, "cpu", 64);
  bench_allocations<models::cnn>(h, cpu, "cpu", 8);
  bench_allocations<models::mlp>(h, pool, "2 threads", 64);
  bench_allocations<models::cnn>(h, pool, "2 threads", 8);
  return 0;
}
