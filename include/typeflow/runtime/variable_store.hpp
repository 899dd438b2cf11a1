// SPDX-License-Identifier: Apache-2.0
// variable_store: the values of a session's variables. A run reads a variable once, when its node
// runs, and an assign replaces the stored tensor (never writes into it), so a run that read the
// old value keeps a consistent one while another run assigns.
//
// It also keeps what kernels derived from a value (kernels/packed_operand.hpp: matmul's packed b),
// one form per variable and consumer node, tagged with the value it came from: a reference to its
// buffer, so that no other value can take the address while the form is kept. A write drops the
// variable's forms and counts up its generation; a form derived while a write landed (even one that
// stored the same buffer again) is not kept. A consumer first leaves a mark (it has seen this value
// once) and derives its form the second time, so a variable written every run is never packed.
// Writing into a value's buffer in place (through a tensor that shares it) is not a write, and is
// not supported: a run may then read the old values in one kernel and the new in another;
// initialize the variable again instead.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow {

class variable_store {
 public:
  explicit variable_store(std::size_t count) : values_(count), set_(count, false), generations_(count, 0), derived_(count) {}

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
    std::vector<derived_form> dropped;  // released after the lock
    std::lock_guard lock(mutex_);
    values_[index] = std::move(value);
    set_[index] = true;
    ++generations_[index];
    dropped.swap(derived_[index]);
  }

  bool has_value(std::size_t index) const {
    std::lock_guard lock(mutex_);
    return set_[index];
  }

  // What `consumer` keeps from `value` (the variable's value that its run read), when `value` is
  // still the variable's: the form when it has one; else, the first time, a mark (it has seen the
  // value once), and `seen` false; the second time `seen` true (the caller derives the form, and
  // keeps it with `generation`).
  std::shared_ptr<const void> derived(std::size_t index, std::size_t consumer, const tensor& value, bool& seen,
                                      std::uint64_t& generation) {
    std::lock_guard lock(mutex_);
    seen = false;
    generation = generations_[index];
    if (!same_value(values_[index], value)) return nullptr;  // replaced since the run read it
    for (const derived_form& f : derived_[index])
      if (f.consumer == consumer && same_value(f.value, value)) {
        seen = true;
        return f.form;
      }
    derived_[index].push_back(derived_form{consumer, value, nullptr});
    return nullptr;
  }

  // Keeps `form`, derived by `consumer` from `value` after derived() gave `generation`, unless the
  // variable has been written since.
  void keep_derived(std::size_t index, std::size_t consumer, const tensor& value, std::uint64_t generation,
                    std::shared_ptr<const void> form) {
    derived_form replaced;  // released after the lock
    std::lock_guard lock(mutex_);
    if (generation != generations_[index] || !same_value(values_[index], value)) return;
    for (derived_form& f : derived_[index])
      if (f.consumer == consumer) {
        replaced = std::move(f);
        f = derived_form{consumer, value, std::move(form)};
        return;
      }
    derived_[index].push_back(derived_form{consumer, value, std::move(form)});
  }

  // Forms kept (marks not counted).
  std::size_t derived_count() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& forms : derived_)
      for (const derived_form& f : forms) n += f.form != nullptr;
    return n;
  }

 private:
  struct derived_form {
    std::size_t consumer = 0;
    tensor value;  // shares the buffer it was derived from
    std::shared_ptr<const void> form;  // null: a mark
  };
  static bool same_value(const tensor& kept, const tensor& value) {
    return kept.data() == value.data() && kept.dtype() == value.dtype() && kept.shape() == value.shape();
  }

  mutable std::mutex mutex_;
  std::vector<tensor> values_;
  std::vector<bool> set_;
  std::vector<std::uint64_t> generations_;
  std::vector<std::vector<derived_form>> derived_;
};

} // namespace typeflow
