// SPDX-License-Identifier: Apache-2.0
// tensor: a dtype, a shape and a reference-counted buffer (or borrowed memory). Copies share the
// buffer, as TensorFlow's Tensor does. Typed access is checked and returns a status on misuse.
// Every tensor knows the memory space its data lives in (core/memory_space.hpp); the host accessors
// (values, at, eigen, clone) refuse one the host cannot read, with failed_precondition.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>

#include <typeflow/core/buffer.hpp>
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/memory_space.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor_spec.hpp>

namespace typeflow {

// Row-major Eigen views of tensor data, as TensorFlow's kernels use them.
template <class T, int Rank>
using eigen_tensor_map = Eigen::TensorMap<Eigen::Tensor<T, Rank, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Aligned>;
template <class T, int Rank>
using eigen_const_tensor_map =
    Eigen::TensorMap<Eigen::Tensor<const T, Rank, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Aligned>;

class tensor {
 public:
  // An empty f32 scalar with no storage; valid() is false.
  tensor() = default;

  // Checks that `s` can be the shape of a tensor holding `type`: defined, and small enough.
  static status check_allocatable(dtype type, const typeflow::shape& s) {
    if (!is_valid(type)) return errors::invalid_argument("invalid dtype code ", static_cast<int>(type));
    if (!s.is_fully_defined())
      return errors::invalid_argument("cannot allocate a tensor of shape ", s, ": a dimension is unknown");
    for (auto d : s)
      if (d < 0) return errors::invalid_argument("cannot allocate a tensor of shape ", s, ": negative dimension");
    if (auto st = s.check_size(); !st.ok()) return st.with_context("cannot allocate a tensor");
    return ok_status();
  }

  // A tensor with fresh, uninitialised, 64-byte aligned storage from the default allocator.
  static result<tensor> allocate(dtype type, const typeflow::shape& s) {
    return allocate_from(
        [&](std::size_t bytes) -> result<buffer*> {
          if (buffer* b = buffer::allocate(bytes)) return b;
          return errors::resource_exhausted("out of memory allocating ", bytes, " bytes for ", name_of(type), s);
        },
        type, s);
  }

  // Storage from an allocator type (memory/): anything with allocate(bytes, alignment) -> result<void*>
  // and deallocate(void*, bytes). The allocator must outlive the tensor (device policies hold theirs
  // so that it does: memory/device_memory.hpp).
  template <class Allocator>
  static result<tensor> allocate(Allocator& allocator, dtype type, const typeflow::shape& s) {
    return allocate_from(
        [&](std::size_t bytes) -> result<buffer*> {
          auto p = allocator.allocate(bytes, default_alignment);
          if (!p.ok()) return std::move(p).take_status();
          return buffer::adopt(*p, bytes,
                               {[](void* ctx, void* d, std::size_t n) { static_cast<Allocator*>(ctx)->deallocate(d, n); },
                                &allocator});
        },
        type, s);
  }

  // How storage becomes a tensor: checks that `s` can hold `type`, then takes the buffer that
  // make_buffer(bytes) -> result<buffer*> returns (a block, 64-byte aligned, adopted by a buffer that
  // knows how to give it back). make_buffer's status is returned as it is.
  // `space` is where the buffer's memory lives.
  template <class MakeBuffer>
  static result<tensor> allocate_from(MakeBuffer&& make_buffer, dtype type, const typeflow::shape& s,
                                      memory_space space = memory_space::host()) {
    if (auto st = check_allocatable(type, s); !st.ok()) return st;
    const std::size_t bytes = static_cast<std::size_t>(s.num_elements()) * size_of(type);
    result<buffer*> b = make_buffer(bytes);
    if (!b.ok()) return std::move(b).take_status();
    return tensor(buffer_ref(*b), (*b)->data(), type, s, space);
  }

  // Alignment that borrowed memory must have: kernels view tensors through Eigen::Aligned maps.
  static constexpr std::size_t borrow_alignment = 16;

  // A tensor over memory it does not own (an arena slot, a user's array). The memory must stay
  // valid while the tensor or any copy of it is used, and be aligned to borrow_alignment. `space`
  // says where it lives (device memory: the host accessors will refuse it).
  static result<tensor> borrow(void* data, dtype type, const typeflow::shape& s,
                               memory_space space = memory_space::host()) {
    if (auto st = check_allocatable(type, s); !st.ok()) return st;
    if (data == nullptr && s.num_elements() != 0)
      return errors::invalid_argument("tensor::borrow: null data for shape ", s);
    if (reinterpret_cast<std::uintptr_t>(data) % borrow_alignment != 0)
      return errors::invalid_argument("tensor::borrow: data is not ", borrow_alignment,
                                      "-byte aligned (address mod ", borrow_alignment, " = ",
                                      reinterpret_cast<std::uintptr_t>(data) % borrow_alignment,
                                      "); copy it into a tensor::allocate'd tensor instead");
    return tensor(buffer_ref(), data, type, s, space);
  }

  // A tensor holding `values` in the given shape (a 1-D shape when none is given).
  template <element_type T>
  static result<tensor> from_values(std::span<const T> values, const typeflow::shape& s) {
    if (!s.is_fully_defined() || s.num_elements() != static_cast<std::int64_t>(values.size()))
      return errors::invalid_argument("tensor::from_values: ", values.size(), " values do not fill shape ", s);
    auto t = allocate(dtype_of<T>, s);
    if (!t.ok()) return t;
    std::copy(values.begin(), values.end(), static_cast<T*>(t->data()));
    return t;
  }
  template <element_type T>
  static result<tensor> from_values(std::initializer_list<T> values, const typeflow::shape& s) {
    return from_values<T>(std::span<const T>(values.begin(), values.size()), s);
  }
  template <element_type T>
  static result<tensor> from_values(std::initializer_list<T> values) {
    return from_values<T>(values, typeflow::shape{static_cast<std::int64_t>(values.size())});
  }
  template <element_type T>
  static result<tensor> scalar(T value) {
    return from_values<T>(std::span<const T>(&value, 1), typeflow::shape{});
  }

  // A tensor filled with `value`.
  template <element_type T>
  static result<tensor> filled(const typeflow::shape& s, T value) {
    auto t = allocate(dtype_of<T>, s);
    if (!t.ok()) return t;
    std::fill_n(static_cast<T*>(t->data()), t->num_elements(), value);
    return t;
  }

  bool valid() const noexcept { return data_ != nullptr || num_elements() == 0; }
  typeflow::dtype dtype() const noexcept { return type_; }
  const typeflow::shape& shape() const noexcept { return shape_; }
  tensor_spec spec() const noexcept { return {type_, shape_}; }
  // Where the data lives.
  const memory_space& space() const noexcept { return space_; }
  // ok when the host may read the data; failed_precondition naming the tensor and its space when not.
  status check_host_access() const {
    if (space_.host_accessible()) return ok_status();
    return errors::failed_precondition("the tensor ", spec(), " is in ", space_,
                                       ": the host cannot read it; copy it to the host first (tf::copy)");
  }
  std::size_t rank() const noexcept { return shape_.rank(); }
  std::int64_t dim(std::size_t i) const noexcept { return shape_[i]; }
  std::int64_t num_elements() const noexcept { return shape_.num_elements(); }
  std::size_t bytes() const noexcept { return static_cast<std::size_t>(num_elements()) * size_of(type_); }
  void* data() const noexcept { return data_; }
  // True when the tensor owns (a share of) its buffer rather than borrowing memory.
  bool owns_buffer() const noexcept { return static_cast<bool>(buffer_); }
  // How many tensors share this buffer (0 for borrowed memory): a kernel may reuse an input's
  // buffer for its output when this is 1.
  long use_count() const noexcept { return buffer_ ? buffer_->use_count() : 0; }

  // A tensor over the same memory that does not keep it alive (no reference count is touched):
  // for passing tensors to kernels within the lifetime of the original.
  tensor view() const noexcept { return tensor(buffer_ref(), data_, type_, shape_, space_); }

  // The bytes [offset, offset + bytes of `s` in `type`) of this tensor's memory as a tensor of that
  // spec, sharing (keeping alive) the buffer when this tensor owns one: a place in an arena.
  // invalid_argument when the part does not lie inside, or the offset breaks borrow_alignment.
  result<tensor> part(std::size_t offset, typeflow::dtype type, const typeflow::shape& s) const {
    if (auto st = check_allocatable(type, s); !st.ok()) return st.with_context("tensor::part");
    const std::size_t n = static_cast<std::size_t>(s.num_elements()) * size_of(type);
    if (offset > bytes() || n > bytes() - offset)
      return errors::invalid_argument("tensor::part: ", n, " bytes at offset ", offset, " do not fit in a tensor of ",
                                      bytes(), " bytes (", spec(), ")");
    if (offset % borrow_alignment != 0)
      return errors::invalid_argument("tensor::part: offset ", offset, " is not a multiple of ", borrow_alignment);
    return tensor(buffer_, static_cast<std::byte*>(data_) + offset, type, s, space_);
  }

  // The same data under another shape with the same number of elements (no copy).
  result<tensor> reshaped(const typeflow::shape& s) const {
    if (!s.is_fully_defined() || s.num_elements() != num_elements())
      return errors::invalid_argument("cannot reshape a tensor of shape ", shape_, " (", num_elements(),
                                      " elements) to ", s);
    tensor t = *this;
    t.shape_ = s;
    return t;
  }

  // Checked typed access: a status when T is not the tensor's dtype.
  template <element_type T>
  status check_type() const {
    if (dtype_of<T> != type_)
      return errors::invalid_argument("tensor holds ", name_of(type_), ", accessed as ", name_of(dtype_of<T>));
    return ok_status();
  }
  template <element_type T>
  result<std::span<T>> values() const {
    if (auto st = check_type<T>(); !st.ok()) return st;
    if (auto st = check_host_access(); !st.ok()) return st;
    return std::span<T>(static_cast<T*>(data_), static_cast<std::size_t>(num_elements()));
  }
  // Checked access to element i in flat, row-major order.
  template <element_type T>
  result<T> at(std::int64_t i) const {
    if (auto st = check_type<T>(); !st.ok()) return st;
    if (auto st = check_host_access(); !st.ok()) return st;
    if (i < 0 || i >= num_elements())
      return errors::out_of_range("element ", i, " of a tensor of shape ", shape_, " (", num_elements(), " elements)");
    return static_cast<const T*>(data_)[i];
  }
  // Checked Eigen view with the given rank.
  template <element_type T, int Rank>
  result<eigen_tensor_map<T, Rank>> eigen() const {
    if (auto st = check_type<T>(); !st.ok()) return st;
    if (auto st = check_host_access(); !st.ok()) return st;
    if (static_cast<int>(rank()) != Rank)
      return errors::invalid_argument("tensor of shape ", shape_, " has rank ", rank(), ", accessed with rank ", Rank);
    return unchecked_eigen<T, Rank>();
  }

  // Unchecked access, for kernels whose inputs were checked by shape inference.
  template <class T>
  T* unchecked_data() const noexcept { return static_cast<T*>(data_); }
  template <class T>
  std::span<T> unchecked_values() const noexcept {
    return {static_cast<T*>(data_), static_cast<std::size_t>(num_elements())};
  }
  template <class T, int Rank>
  eigen_tensor_map<T, Rank> unchecked_eigen() const noexcept {
    Eigen::array<Eigen::DenseIndex, Rank> d{};
    for (int i = 0; i < Rank; ++i) d[i] = shape_[static_cast<std::size_t>(i)];
    return eigen_tensor_map<T, Rank>(static_cast<T*>(data_), d);
  }
  // The tensor as a flat 1-D Eigen map of all its elements.
  template <class T>
  eigen_tensor_map<T, 1> unchecked_flat() const noexcept {
    return eigen_tensor_map<T, 1>(static_cast<T*>(data_), num_elements());
  }
  // The tensor as [product of dims before `axis`, product of dims from `axis`].
  template <class T>
  eigen_tensor_map<T, 2> unchecked_flat_outer(std::size_t axis) const noexcept {
    return eigen_tensor_map<T, 2>(static_cast<T*>(data_), shape_.product(0, axis), shape_.product(axis, rank()));
  }

  // A deep copy in host memory with its own buffer (device memory: tf::copy, device/copy.hpp).
  result<tensor> clone() const {
    if (auto st = check_host_access(); !st.ok()) return st;
    auto t = allocate(type_, shape_);
    if (!t.ok()) return t;
    if (bytes() != 0) std::memcpy(t->data(), data_, bytes());
    return t;
  }

  // "f32[2, 3]"
  std::string to_string() const { return spec().to_string(); }
  void append_to(detail::text& out) const { spec().append_to(out); }

 private:
  tensor(buffer_ref b, void* data, typeflow::dtype type, const typeflow::shape& s,
         memory_space space = memory_space::host())
      : buffer_(std::move(b)), data_(data), type_(type), shape_(s), space_(space) {}

  buffer_ref buffer_;
  void* data_ = nullptr;
  typeflow::dtype type_ = typeflow::dtype::f32;
  typeflow::shape shape_{};
  memory_space space_{};
};

} // namespace typeflow
