// SPDX-License-Identifier: Apache-2.0
// run_time_plans<Memory>: the memory plans a static graph with run-time dimensions has made, one
// per distinct set of fed input shapes, shared by every session and state that runs the plan (a
// plan is a pure function of the plan type and those shapes). A run whose input shapes were seen
// before binds the cached layout: no inference, no planning, no heap allocation.
// Bounded: the least recently used of `capacity` entries makes room for a new one. Thread-safe.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <typeflow/core/shape.hpp>

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
    auto& c = cache();
    std::lock_guard lock(c.mutex);
    for (std::size_t i = 0; i < c.entries.size(); ++i)
      if (c.entries[i]->fed == fed) {
        std::shared_ptr<const entry> e = c.entries[i];
        for (std::size_t j = i; j > 0; --j) c.entries[j] = std::move(c.entries[j - 1]);  // most recent first
        c.entries[0] = e;
        return e;
      }
    return nullptr;
  }

  // Adds a plan (another thread may have added the same one: both are equal).
  static std::shared_ptr<const entry> add(std::shared_ptr<const entry> e) {
    auto& c = cache();
    std::lock_guard lock(c.mutex);
    if (c.entries.size() == capacity) c.entries.pop_back();
    c.entries.insert(c.entries.begin(), e);
    ++c.made;
    return e;
  }

  // How many plans were made (for tests and benchmarks), and how many are held.
  static std::size_t made() {
    auto& c = cache();
    std::lock_guard lock(c.mutex);
    return c.made;
  }
  static std::size_t size() {
    auto& c = cache();
    std::lock_guard lock(c.mutex);
    return c.entries.size();
  }

 private:
  struct store {
    std::mutex mutex;
    std::vector<std::shared_ptr<const entry>> entries;  // most recently used first
    std::size_t made = 0;
  };
  static store& cache() {
    static store s;
    return s;
  }
};

}  // namespace typeflow
