// SPDX-License-Identifier: Apache-2.0
// typed_tensor<T>: a tensor whose dtype is known at compile time. Static sessions take feeds and
// give fetches as typed tensors, so a fed dtype that does not match the graph is a compile error
// and a fetched value needs no run-time dtype check.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <span>
#include <utility>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow {

template <element_type T>
class typed_tensor {
 public:
  using value_type = T;

  // A status when `t` does not hold T, or is in memory the host cannot read (its accessors are
  // unchecked).
  static result<typed_tensor> from(tensor t) {
    if (auto st = t.check_type<T>(); !st.ok()) return st;
    if (auto st = t.check_host_access(); !st.ok()) return st;
    return typed_tensor(std::move(t));
  }
  // Precondition: t.dtype() == dtype_of<T> and t is host-readable (asserted).
  static typed_tensor adopt(tensor t) {
    assert(t.dtype() == dtype_of<T>);
    assert(t.space().host_accessible());
    return typed_tensor(std::move(t));
  }

  const tensor& untyped() const noexcept { return t_; }
  operator const tensor&() const noexcept { return t_; }
  const typeflow::shape& shape() const noexcept { return t_.shape(); }
  std::int64_t num_elements() const noexcept { return t_.num_elements(); }
  std::span<const T> values() const noexcept { return t_.unchecked_values<const T>(); }
  T operator[](std::int64_t i) const noexcept { return t_.unchecked_data<const T>()[i]; }
  template <int Rank>
  eigen_const_tensor_map<T, Rank> eigen() const noexcept {
    Eigen::array<Eigen::DenseIndex, Rank> d{};
    for (int i = 0; i < Rank; ++i) d[i] = t_.dim(static_cast<std::size_t>(i));
    return eigen_const_tensor_map<T, Rank>(t_.unchecked_data<const T>(), d);
  }

 private:
  explicit typed_tensor(tensor t) : t_(std::move(t)) {}
  tensor t_;
};

} // namespace typeflow
