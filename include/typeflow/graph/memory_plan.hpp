// SPDX-License-Identifier: Apache-2.0
// static_memory_plan<Plan>: where each intermediate tensor of a static plan lives, decided at
// compile time. An intermediate is the output of a step that computes an op, is not fetched and
// is not read by an assign (a variable keeps what it is given). Its lifetime runs from its step
// to the last step that reads it; every intermediate gets an offset in one arena
// (memory/arena_plan.hpp), which a run's state allocates once. When every intermediate has a
// static shape the offsets are compile-time constants; otherwise the lifetimes still are, and a
// run computes the offsets from its input shapes with the same constexpr functions (a state keeps
// the plan until the shapes fed to it change).
//
// Forwarding (TensorFlow's buffer forwarding, decided here at compile time): an elementwise step
// (a fused group, or an elementwise op running alone) writes into the buffer of an intermediate
// input of the same dtype and shape that no later step reads, so the two share one buffer.
// Elementwise kernels read element i before they write element i, which makes this safe.
//
// What is not planned keeps its own buffer in the state, reused while its shape is unchanged and
// the caller holds no result sharing it: fetched tensors (they leave the run), assigned values,
// the outputs of an op with several (split, top_k), nodes placed on a device (the arena is the
// session's first device's) and values a transfer reads (it may share them with another device).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <string>

#include <typeflow/core/buffer.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/plan.hpp>
#include <typeflow/memory/arena_plan.hpp>

namespace typeflow {

template <class Plan>
struct static_memory_plan {
  using graph = typename Plan::graph_type;
  static constexpr std::size_t size = graph::size;
  static constexpr std::size_t alignment = default_alignment;
  static constexpr std::size_t not_planned = size;

  // The step that computes each node (Plan::num_steps for nodes that do not run).
  static constexpr std::array<std::size_t, size> step_of = [] {
    std::array<std::size_t, size> s{};
    s.fill(Plan::num_steps);
    for (std::size_t k = 0; k < Plan::num_steps; ++k) s[Plan::steps[k]] = k;
    return s;
  }();

  // Calls f(q) for each node that step position p reads (a fused group reads its leaves).
  template <class F>
  static constexpr void for_each_read(std::size_t p, F&& f) {
    if (Plan::is_fused_root(p)) {
      const auto leaves = Plan::leaves_of(p);
      for (std::size_t k = 0; k < leaves.count; ++k) f(leaves.positions[k]);
    } else {
      for (std::size_t j = 0; j < graph::num_inputs[p]; ++j) f(graph::input(p, j));
    }
  }

  // The last step that reads each node; its own step when nothing reads it.
  static constexpr std::array<std::size_t, size> last_read = [] {
    std::array<std::size_t, size> last = step_of;
    for (std::size_t k = 0; k < Plan::num_steps; ++k)
      for_each_read(Plan::steps[k], [&](std::size_t q) { if (k > last[q] || last[q] == Plan::num_steps) last[q] = k; });
    return last;
  }();

  // Nodes that live in the arena when their size is not zero.
  static constexpr std::array<bool, size> plannable = [] {
    std::array<bool, size> kept{};  // read by an assign (kept by the variable) or a transfer (may be shared)
    for (std::size_t p : Plan::steps)
      if (graph::kinds[p] == node_kind::assign || graph::kinds[p] == node_kind::transfer) kept[graph::input(p, 0)] = true;
    std::array<bool, size> a{};
    for (std::size_t p : Plan::steps)
      a[p] = graph::kinds[p] == node_kind::op && !graph::placed[p] && !graph::multi_output[p] && !Plan::fetched[p] &&
             !kept[p];
    return a;
  }();
  static constexpr std::size_t num_plannable = [] {
    std::size_t n = 0;
    for (bool b : plannable) n += b;
    return n;
  }();
  // Every intermediate's shape is known at compile time, so is the whole plan; otherwise it is
  // made at run time from the shapes of a run's inputs (the same functions).
  static constexpr bool is_static = [] {
    for (std::size_t p = 0; p < size; ++p)
      if (plannable[p] && !graph::specs[p].dims.is_fully_defined()) return false;
    return true;
  }();

  // A step that may write over an input it is the last reader of.
  static constexpr bool in_place(std::size_t p) {
    return Plan::is_fused_root(p) || (Plan::elementwise[p] && Plan::groups.ops[p] < 2);
  }

  // Which intermediates are in the arena, the buffer each lives in (buffers are numbered by the
  // node that first writes them), each buffer's lifetime, and the arena layout.
  struct layout_t {
    std::array<bool, size> planned{};
    std::array<std::size_t, size> buffer_of{};
    std::array<buffer_lifetime, size> lifetime{};
    std::size_t forwarded = 0;           // steps that write into an input's buffer
    std::size_t num_planned = 0;
    std::size_t intermediate_bytes = 0;  // every planned intermediate side by side (no reuse)
    std::size_t max_live_bytes = 0;      // most bytes live at one step without forwarding
    arena_layout<size> arena{};

    constexpr std::size_t offset(std::size_t p) const { return arena.offset[buffer_of[p]]; }
  };

  // The plan for these node shapes (the static shapes, or those a run computes).
  static constexpr layout_t plan_for(const std::array<shape, size>& shapes) {
    layout_t l{};
    l.buffer_of.fill(not_planned);
    std::array<std::size_t, size> bytes{};
    std::array<buffer_lifetime, size> own{};
    for (std::size_t p = 0; p < size; ++p) {
      if (!plannable[p]) continue;
      bytes[p] = static_cast<std::size_t>(shapes[p].num_elements()) * size_of(graph::specs[p].type);
      l.planned[p] = bytes[p] != 0;
      if (!l.planned[p]) continue;
      ++l.num_planned;
      l.intermediate_bytes += detail::round_up(bytes[p], alignment);
      own[p] = buffer_lifetime{bytes[p], step_of[p], last_read[p]};
    }
    for (std::size_t k = 0; k < Plan::num_steps; ++k) {
      const std::size_t p = Plan::steps[k];
      if (!l.planned[p]) continue;
      std::size_t reuse = not_planned;
      if (in_place(p))
        for_each_read(p, [&](std::size_t q) {
          if (reuse == not_planned && l.planned[q] && last_read[q] == k &&
              graph::specs[q].type == graph::specs[p].type && shapes[q] == shapes[p])
            reuse = l.buffer_of[q];
        });
      if (reuse != not_planned) {
        l.buffer_of[p] = reuse;
        l.lifetime[reuse].last = last_read[p];
        ++l.forwarded;
      } else {
        l.buffer_of[p] = p;
        l.lifetime[p] = own[p];
      }
    }
    l.arena = plan_arena(l.lifetime, alignment);
    l.max_live_bytes = max_live_bytes(own, alignment);
    return l;
  }

  static constexpr std::array<shape, size> static_shapes = [] {
    std::array<shape, size> s{};
    for (std::size_t p = 0; p < size; ++p) s[p] = graph::specs[p].dims;
    return s;
  }();
  // The compile-time plan; empty when the shapes are known only at run time.
  static constexpr layout_t static_layout = is_static ? plan_for(static_shapes) : layout_t{};
  static_assert(is_valid_layout(static_layout.lifetime, static_layout.arena, alignment),
                "typeflow: internal error: the memory plan overlaps two live buffers");

  // "arena 12288 bytes for 5 intermediates (1 forwarded; 20480 bytes without reuse, max live 12288)"
  // then one line per intermediate: "  node 4 (matmul) f32[2,1024]: steps 1-2, offset 0".
  static std::string describe(const layout_t& l = static_layout, const std::array<shape, size>& shapes = static_shapes) {
    detail::text t;
    if (!is_static && &l == &static_layout)
      return "planned at run time: the intermediates' shapes depend on the inputs\n";
    detail::append(t, detail::cat("arena ", l.arena.arena_bytes, " bytes for ", l.num_planned, " intermediates (",
                                  l.forwarded, " forwarded; ", l.intermediate_bytes, " bytes without reuse, max live ",
                                  l.max_live_bytes, ")\n"));
    for (std::size_t p = 0; p < size; ++p) {
      if (!l.planned[p]) continue;
      detail::append(t, detail::cat("  node ", p, " (", graph::names[p], ") ", name_of(graph::specs[p].type), shapes[p],
                                    ": steps ", step_of[p], "-", last_read[p], ", offset ", l.offset(p), "\n"));
    }
    return t.str();
  }

  // A state remembers which plan its arena slots are bound to by this address.
  static constexpr char tag = 0;
};

}  // namespace typeflow
