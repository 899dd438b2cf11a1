// SPDX-License-Identifier: Apache-2.0
// plan_cache<Entry>: the plans an executor has made for the sets of fed shapes it has seen (a
// static graph's memory plans, run_time_plans.hpp; a runtime graph's specs and arena,
// runtime_executor.hpp), most recently used first. Bounded: the least recently used entry makes
// room for a new one. Thread-safe: runs on many threads look up and add plans at once; an entry is
// immutable once added, and a run holds its shared_ptr while it uses it.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace typeflow::detail {

template <class Entry>
class plan_cache {
 public:
  explicit plan_cache(std::size_t capacity) : capacity_(capacity) {}

  // The entry e for which matches(e) holds, moved to the front; null when there is none.
  template <class Matches>
  std::shared_ptr<const Entry> find(Matches&& matches) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (matches(*entries_[i])) {
        std::shared_ptr<const Entry> e = entries_[i];
        for (std::size_t j = i; j > 0; --j) entries_[j] = std::move(entries_[j - 1]);
        entries_[0] = e;
        return e;
      }
    return nullptr;
  }

  // Adds a plan (another thread may have added an equal one meanwhile: both serve).
  std::shared_ptr<const Entry> add(std::shared_ptr<const Entry> e) {
    std::lock_guard lock(mutex_);
    if (entries_.size() == capacity_) entries_.pop_back();
    entries_.insert(entries_.begin(), e);
    ++made_;
    return e;
  }

  // How many plans were made (for tests and benchmarks), and how many are held.
  std::size_t made() const {
    std::lock_guard lock(mutex_);
    return made_;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const Entry>> entries_;  // most recently used first
  std::size_t made_ = 0;
};

}  // namespace typeflow::detail
