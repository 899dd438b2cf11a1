// SPDX-License-Identifier: Apache-2.0
// device_memory<Allocator>: where a device policy's tensors live. The policy (device/) says where
// kernels run; this holds the allocator it names and turns its blocks into tensors, with a lifetime
// rule under which no tensor can outlive the allocator its memory came from.
#pragma once

#include <typeflow/fwd.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/core/buffer.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/memory/allocator.hpp>

namespace typeflow {

// The lifetime rule: every buffer keeps the allocator it came from alive.
//  - A stateless allocator (is_stateless_allocator: heap_allocator) is held by value and a buffer
//    gives its block back through a fresh instance, so nothing has to outlive anything. This is the
//    default policies' path and costs what tensor::allocate costs: one block and one buffer object.
//  - Any other allocator (bfc_allocator, cpu_allocator, tracking_allocator, a user's pool) is built
//    once in a reference-counted box; the device_memory holds one reference and every buffer from
//    it holds one more, so a tensor fetched from a session stays valid after the policy (and the
//    session) are gone, and the allocator is destroyed, with its regions, after the last of them.
//    Cost: one relaxed increment when a tensor is allocated and one decrement when its buffer is
//    released, on a counter owned by this allocator.
// Copies of a device_memory (and so of a policy) share the allocator.
//
// An allocator that refers to another (tracking_allocator<A&>, guard_allocator<A&>) is kept alive
// like any other, but the object it refers to is not: hold the inner allocator by value
// (tracking_allocator<A> built with std::in_place) unless that object outlives every tensor.
//
// allocate(dtype, shape, device) returns the allocator's status with what was being allocated and
// where put in front: "cannot allocate f32[1024, 1024] (4194304 bytes) on /job:...: bfc: out of
// memory allocating ...". Thread-safe when the allocator is.
template <class Allocator>
class device_memory {
  static_assert(std::is_object_v<Allocator> && !std::is_const_v<Allocator>,
                "device_memory<Allocator> (a device policy's allocator_type) requires Allocator to be an allocator "
                "type held by value, not a reference: a reference could dangle under a tensor that outlives it");
  static_assert(allocator<Allocator>,
                "device_memory<Allocator> (a device policy's allocator_type) requires Allocator to satisfy "
                "typeflow::allocator: allocate(bytes, alignment) -> result<void*>, deallocate(void*, bytes), "
                "stats() and a constant name");

 public:
  using allocator_type = Allocator;
  static constexpr bool stateless = is_stateless_allocator<Allocator>;

  device_memory() requires std::default_initializable<Allocator> : device_memory(std::in_place) {}
  // The allocator built from `allocator_args`.
  template <class... Args>
    requires stateless
  explicit device_memory(std::in_place_t, Args&&... allocator_args) : allocator_(std::forward<Args>(allocator_args)...) {}
  template <class... Args>
    requires(!stateless)
  explicit device_memory(std::in_place_t, Args&&... allocator_args)
      : box_(new shared_box(std::forward<Args>(allocator_args)...)) {}
  device_memory(const device_memory& other) noexcept : box_(other.box_) {
    if constexpr (!stateless) box_->retain();
  }
  device_memory& operator=(const device_memory& other) noexcept {
    if constexpr (!stateless) {
      other.box_->retain();
      box_->release();
      box_ = other.box_;
    }
    return *this;
  }
  ~device_memory() {
    if constexpr (!stateless) box_->release();
  }

  Allocator& allocator() noexcept {
    if constexpr (stateless) return allocator_;
    else return box_->allocator;
  }
  const Allocator& allocator() const noexcept {
    if constexpr (stateless) return allocator_;
    else return box_->allocator;
  }

  // An uninitialised tensor from the allocator, 64-byte aligned, marked as living in `space`.
  result<tensor> allocate(dtype type, const shape& s, std::string_view device_name,
                          memory_space space = memory_space::host()) {
    return tensor::allocate_from(
        [&](std::size_t bytes) -> result<buffer*> {
          auto p = allocator().allocate(bytes, default_alignment);
          if (!p.ok())
            return status(p.status().code(), detail::cat("cannot allocate ", name_of(type), s, " (", bytes,
                                                          " bytes) on ", device_name, ": ", p.status().message()));
          if constexpr (stateless) {
            return buffer::adopt(*p, bytes, {[](void*, void* d, std::size_t n) { Allocator{}.deallocate(d, n); }, nullptr});
          } else {
            box_->retain();
            return buffer::adopt(*p, bytes, {[](void* box, void* d, std::size_t n) {
                                               auto* b = static_cast<shared_box*>(box);
                                               b->allocator.deallocate(d, n);
                                               b->release();
                                             },
                                             box_});
          }
        },
        type, s, space);
  }

  // How many owners the allocator has: this device_memory, its copies and every live buffer from it
  // (1 for a stateless allocator, which needs no owner). For tests of the lifetime rule.
  long owners() const noexcept {
    if constexpr (stateless) return 1;
    else return box_->refs.load(std::memory_order_acquire);
  }

 private:
  struct shared_box {
    template <class... Args>
    explicit shared_box(Args&&... args) : allocator(std::forward<Args>(args)...) {}
    void retain() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
      if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    Allocator allocator;
    std::atomic<long> refs{1};
  };
  struct no_box {};

  [[no_unique_address]] std::conditional_t<stateless, Allocator, no_box> allocator_{};
  [[no_unique_address]] std::conditional_t<stateless, no_box, shared_box*> box_{};
};

} // namespace typeflow
