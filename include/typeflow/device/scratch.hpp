// SPDX-License-Identifier: Apache-2.0
// Kernel scratch memory that is reused from call to call, so that a step whose tensors are planned
// (graph/memory_plan.hpp) takes nothing from the heap once the first step has sized it:
//  - scratch_cache: each thread keeps the blocks it freed (up to `capacity`, the largest first)
//    and serves a request from the smallest cached block that fits;
//  - scratch_buffer<T>: a kernel's working array from the cache (softmax blocks, im2col patches);
//  - eigen_scratch_device: Eigen's DefaultDevice whose allocations (GEMM packing blocks,
//    temporaries) come from the cache, with eigen_assign(device, out, expr) to evaluate on it.
//    Eigen assigns (and vectorises) only on its own device types, so it is for contractions,
//    whose work happens inside the evaluator, not for elementwise code;
//  - eigen_scratch_allocator: the same for Eigen's ThreadPoolDevice, which takes an allocator.
// TensorFlow gives kernels scratch through the op kernel context's temporary allocations from the
// device allocator; here the cache is per thread because kernels run on the caller's thread or on
// the policy's helper threads (thread_pool's spin_team and Eigen pool), never handing scratch across.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include <typeflow/core/buffer.hpp>  // default_alignment
#include <typeflow/core/detail/eigen.hpp>

namespace typeflow {

class scratch_cache {
 public:
  static constexpr std::size_t capacity = 8;  // cached blocks per thread

  // `bytes` of memory aligned to default_alignment, or nullptr when the system is out of memory.
  static void* allocate(std::size_t bytes) noexcept {
    auto& c = cache();
    std::size_t best = capacity;
    for (std::size_t i = 0; i < c.count; ++i)
      if (size_of(c.blocks[i]) >= bytes && (best == capacity || size_of(c.blocks[i]) < size_of(c.blocks[best])))
        best = i;
    if (best != capacity) {
      void* p = c.blocks[best];
      c.blocks[best] = c.blocks[--c.count];
      return p;
    }
    void* raw = ::operator new(header + bytes, std::align_val_t{default_alignment}, std::nothrow);
    if (raw == nullptr) return nullptr;
    *static_cast<std::size_t*>(raw) = bytes;
    return static_cast<std::byte*>(raw) + header;
  }

  // Gives a block back to this thread's cache; when the cache is full the smallest block, this
  // one or a cached one, goes back to the heap.
  static void deallocate(void* p) noexcept {
    if (p == nullptr) return;
    auto& c = cache();
    if (c.count < capacity) {
      c.blocks[c.count++] = p;
      return;
    }
    std::size_t smallest = 0;
    for (std::size_t i = 1; i < c.count; ++i)
      if (size_of(c.blocks[i]) < size_of(c.blocks[smallest])) smallest = i;
    if (size_of(c.blocks[smallest]) < size_of(p)) std::swap(c.blocks[smallest], p);
    release(p);
  }

  // Bytes this thread's cache holds.
  static std::size_t cached_bytes() noexcept {
    const auto& c = cache();
    std::size_t n = 0;
    for (std::size_t i = 0; i < c.count; ++i) n += size_of(c.blocks[i]);
    return n;
  }

  // Returns this thread's cached blocks to the heap.
  static void trim() noexcept {
    auto& c = cache();
    while (c.count > 0) release(c.blocks[--c.count]);
  }

 private:
  static constexpr std::size_t header = default_alignment;  // holds the block's size

  struct blocks_t {
    std::array<void*, capacity> blocks{};
    std::size_t count = 0;
    ~blocks_t() {
      while (count > 0) release(blocks[--count]);
    }
  };
  static blocks_t& cache() noexcept {
    thread_local blocks_t c;
    return c;
  }
  static std::size_t size_of(void* p) noexcept { return *reinterpret_cast<std::size_t*>(static_cast<std::byte*>(p) - header); }
  static void release(void* p) noexcept {
    ::operator delete(static_cast<std::byte*>(p) - header, std::align_val_t{default_alignment});
  }
};

// A working array of `count` T from the scratch cache, for the lifetime of the object.
template <class T>
class scratch_buffer {
 public:
  explicit scratch_buffer(std::size_t count) : data_(static_cast<T*>(scratch_cache::allocate(count * sizeof(T)))) {
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~scratch_buffer() { scratch_cache::deallocate(data_); }
  scratch_buffer(const scratch_buffer&) = delete;
  scratch_buffer& operator=(const scratch_buffer&) = delete;
  T* data() const noexcept { return data_; }

 private:
  T* data_;
};

// Eigen's single-threaded device with its allocations from the scratch cache.
struct eigen_scratch_device : Eigen::DefaultDevice {
  void* allocate(std::size_t bytes) const {
    void* p = scratch_cache::allocate(bytes);
    if (p == nullptr) throw std::bad_alloc();  // as Eigen's aligned_malloc does
    return p;
  }
  void deallocate(void* p) const { scratch_cache::deallocate(p); }
  void* allocate_temp(std::size_t bytes) const { return allocate(bytes); }
  void deallocate_temp(void* p) const { deallocate(p); }
};

// out = expr on an Eigen device, taking no memory from the heap where Eigen would:
//  - eigen_scratch_device: Eigen's assignment (TensorDevice, TensorExecutor) accepts only its own
//    device types, so the expression's evaluator is driven directly, as TensorExecutor does: a
//    contraction evaluates straight into `out`, anything else asking for it element by element;
//  - Eigen::DefaultDevice: the untiled vectorised executor. The tiled one, which Eigen picks for
//    broadcasts, takes its block buffers from the heap on every call (DefaultDevice has no
//    allocator); for the row and channel broadcasts of the kernels that use this, the untiled
//    evaluator reads the broadcast operand packet by packet with no buffer at all;
//  - other devices (ThreadPoolDevice, whose allocator is the scratch cache): as written.
template <class OutMap, class Expr, class EigenDevice>
void eigen_assign(const EigenDevice& device, OutMap&& out, const Expr& expr) {
  using out_type = std::remove_cvref_t<OutMap>;
  if constexpr (std::is_same_v<EigenDevice, eigen_scratch_device>) {
    Eigen::TensorEvaluator<const Expr, eigen_scratch_device> evaluator(expr, device);
    if (evaluator.evalSubExprsIfNeeded(out.data()))
      for (Eigen::Index i = 0; i < out.size(); ++i) out.data()[i] = evaluator.coeff(i);
    evaluator.cleanup();
  } else if constexpr (std::is_same_v<EigenDevice, Eigen::DefaultDevice>) {
    using assign = const Eigen::TensorAssignOp<out_type, const Expr>;
    out_type target = out;
    Eigen::internal::TensorExecutor<assign, Eigen::DefaultDevice,
                                    Eigen::internal::IsVectorizable<Eigen::DefaultDevice, assign>::value,
                                    Eigen::internal::TiledEvaluation::Off>::run(assign(target, expr), device);
  } else {
    out.device(device) = expr;
  }
}

// An Eigen::Allocator over the scratch cache, for Eigen::ThreadPoolDevice.
struct eigen_scratch_allocator final : Eigen::Allocator {
  void* allocate(std::size_t bytes) const override {
    void* p = scratch_cache::allocate(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p) const override { scratch_cache::deallocate(p); }
};

}  // namespace typeflow
