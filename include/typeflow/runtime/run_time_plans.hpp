// SPDX-License-Identifier: Apache-2.0
// run_time_plans<Memory>: the memory plans a static graph with run-time dimensions has made, one
// per distinct set of fed input shapes, shared by every session and state that runs the plan (a
// plan is a pure function of the plan type and those shapes). A run whose input shapes were seen
// before binds the cached layout: no inference, no planning, no heap allocation.
// Bounded (capacity), thread-safe: detail::plan_cache.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <utility>

#include <typeflow/core/shape.hpp>
#include <typeflow/runtime/detail/plan_cache.hpp>

namespace typeflow {

template <class Memory>
class run_time_plans {
 public:
  static constexpr std::size_t capacity = 64;
  using key_type = std::array<shape, Memory::graph::num_input_nodes>;
  struct entry {
    key_type fed;                                      // the input shapes
    std::array<shape, Memory::size> shapes;            // every node's shape for them
    typename Memory::layout_t layout;                  // and the plan
  };

  // The plan for these input shapes, or null when none was made yet.
  static std::shared_ptr<const entry> find(const key_type& fed) {
    return cache().find([&](const entry& e) { return e.fed == fed; });
  }

  // Adds a plan (another thread may have added the same one: both are equal).
  static std::shared_ptr<const entry> add(std::shared_ptr<const entry> e) { return cache().add(std::move(e)); }

  // How many plans were made (for tests and benchmarks), and how many are held.
  static std::size_t made() { return cache().made(); }
  static std::size_t size() { return cache().size(); }

 private:
  static detail::plan_cache<entry>& cache() {
    static detail::plan_cache<entry> c(capacity);
    return c;
  }
};

}  // namespace typeflow
