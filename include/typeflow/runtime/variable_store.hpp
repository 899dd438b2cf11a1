// SPDX-License-Identifier: Apache-2.0
// variable_store: the values of a session's variables. A run reads a variable once, when its node
// runs, and an assign replaces the stored tensor (never writes into it), so a run that read the
// old value keeps a consistent one while another run assigns.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow {

class variable_store {
 public:
  explicit variable_store(std::size_t count) : values_(count), set_(count, false) {}

  // failed_precondition naming the variable when it has no value yet.
  status read(std::size_t index, std::string_view name, tensor& out) const {
    std::lock_guard lock(mutex_);
    if (!set_[index])
      return errors::failed_precondition("variable '", name,
                                         "' is read before it has a value: initialise it with session::initialize "
                                         "or run an assign to it first");
    out = values_[index];
    return ok_status();
  }

  void write(std::size_t index, tensor value) {
    std::lock_guard lock(mutex_);
    values_[index] = std::move(value);
    set_[index] = true;
  }

  bool has_value(std::size_t index) const {
    std::lock_guard lock(mutex_);
    return set_[index];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<tensor> values_;
  std::vector<bool> set_;
};

} // namespace typeflow
