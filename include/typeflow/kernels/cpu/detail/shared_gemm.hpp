// SPDX-License-Identifier: Apache-2.0
// shared_gemm(device, m, n, k, a, b, c, blocks): c[m, n] = a[m, k] x b[k, n] (row-major, contiguous)
// over the policy's threads, with b packed once and shared by them. matmul runs it for f32 and f64
// when a tall product's rows are split over several threads (kernels/cpu/linalg.hpp).
//
// Splitting the rows over threads and calling a one-thread GEMM per range (what the kernels do for
// the other dtypes and backends) packs all of b in every thread. On the MLP at batch 64 (64 rows,
// b up to 1024 x 1024), packing b was 32% of the CPU samples on one thread and 44% on two, where
// the packing doubled; sharing it took the two-thread run's CPU and elapsed time down by 14%.
// shared_fma_gemm does the same for f32 on fma_gemm (detail/fma_gemm.hpp), which matmul takes where
// the processor has AVX2 and FMA. shared_gemm's work is Eigen's own blocked GEMM, on its packing
// routines and micro-kernel (gemm_pack_lhs,
// gemm_pack_rhs, gebp_kernel: Eigen 3.4's internal API, which its BLAS and products use), in one
// parallel pass (a second would be a second region for the helper threads): each thread takes chunks of b's
// blocks to pack until none is left, waits for the chunks others took, then computes its range of
// c's rows (for fma_gemm, of b's panels where fma_gemm_split_by_panels says so). Eigen's OpenMP GEMM shares its packed operand between threads the same way; Eigen is
// built here without OpenMP, and its Tensor contraction on a ThreadPoolDevice, which also shares
// its packed blocks, allocates its tasks from the heap on every call.
//
// In Eigen's column-major terms c^T[n, m] = b^T[n, k] x a^T[k, m]: b^T is the "lhs", packed in
// mr-row panels, a^T the "rhs", packed in nr-column panels. The gebp kernel loads the lhs panels
// with aligned loads, so every packed block starts on default_alignment. Scratch memory comes from
// the threads' scratch caches (no heap allocation once they are warm): the packed b from the
// caller's (k_blocks x n_blocks blocks of kc x mc elements, rounded up to the alignment: up to about
// twice n x k when the last blocks are short), each thread's packed rows of a (kc x nc) from its own.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>

#include <typeflow/core/buffer.hpp>  // default_alignment
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/parallel_for.hpp>  // parallel_threads
#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/detail/fma_gemm.hpp>

namespace typeflow::cpu_kernels::detail {

template <class T>
inline constexpr bool shared_gemm_dtype = std::is_same_v<T, float> || std::is_same_v<T, double>;

// Packed b larger than this goes through the per-thread GEMMs instead (the scratch caches keep
// their largest blocks).
inline constexpr std::size_t shared_gemm_max_packed_bytes = std::size_t{64} << 20;

// The block sizes of one product and where each packed block of b lies in the shared buffer.
struct shared_gemm_blocks {
  std::int64_t kc = 0, mc = 0, nc = 0;  // depth, b^T rows (c's columns), a^T columns (c's rows)
  std::int64_t k_blocks = 0, n_blocks = 0;
  std::int64_t block_stride = 0;  // elements from one packed block to the next (aligned)

  // Eigen's blocking for this product (computeProductBlockingSizes, from the caches' sizes).
  template <class T>
  static shared_gemm_blocks of(std::int64_t m, std::int64_t n, std::int64_t k) {
    Eigen::Index kc = std::max<std::int64_t>(k, 1), mc = std::max<std::int64_t>(n, 1), nc = std::max<std::int64_t>(m, 1);
    Eigen::internal::computeProductBlockingSizes<T, T, 1>(kc, mc, nc, Eigen::Index{1});
    return with<T>(m, n, k, kc, mc, nc);
  }
  // Chosen sizes (tests use small ones to cross every block edge with small matrices).
  template <class T>
  static shared_gemm_blocks with(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t kc, std::int64_t mc,
                                 std::int64_t nc) {
    shared_gemm_blocks s;
    s.kc = std::max<std::int64_t>(kc, 1);
    s.mc = std::max<std::int64_t>(mc, 1);
    s.nc = std::max<std::int64_t>(nc, 1);
    s.k_blocks = (k + s.kc - 1) / s.kc;
    s.n_blocks = (n + s.mc - 1) / s.mc;
    constexpr std::int64_t per_alignment = static_cast<std::int64_t>(default_alignment / sizeof(T));
    s.block_stride = (s.kc * s.mc + per_alignment - 1) / per_alignment * per_alignment;
    (void)m;
    return s;
  }
  std::int64_t packed_elements() const { return k_blocks * n_blocks * block_stride; }
  // Offset of the packed block (k block kb, row block nb of b^T) in the shared buffer.
  std::int64_t offset(std::int64_t kb, std::int64_t nb) const { return (kb * n_blocks + nb) * block_stride; }
};

// The cost of a range of c's rows, and how many threads the policy's parallel_for gives this
// product: 1 when the work is too small for more, or when the caller is itself one of the pool's
// threads or parallel_for's helpers (parallel_for then runs every range inline).
inline double shared_gemm_part_cost(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t parts) {
  return static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(m / parts);
}
template <class T, class Device>
int shared_gemm_threads(Device& device, std::int64_t m, std::int64_t n, std::int64_t k) {
  using traits = Eigen::internal::gebp_traits<T, T>;
  if constexpr (requires { device.pool().CurrentThreadId(); })
    if (device.pool().CurrentThreadId() >= 0 || typeflow::detail::on_spin_team_helper) return 1;
  const std::int64_t most = std::clamp<std::int64_t>(m / traits::nr, 1, std::max(1, device.num_threads()));
  return typeflow::detail::parallel_threads(most, shared_gemm_part_cost(m, n, k, most), static_cast<int>(most));
}

// Eigen's packing routines and micro-kernel for T, in the column-major terms above.
template <class T>
struct gemm_parts {
  using Index = Eigen::Index;
  using traits = Eigen::internal::gebp_traits<T, T>;
  using mapper = Eigen::internal::const_blas_data_mapper<T, Index, Eigen::ColMajor>;
  using res_mapper = Eigen::internal::blas_data_mapper<T, Index, Eigen::ColMajor>;
  using pack_lhs = Eigen::internal::gemm_pack_lhs<T, Index, mapper, traits::mr, traits::LhsProgress,
                                                  typename traits::LhsPacket4Packing, Eigen::ColMajor>;
  using pack_rhs = Eigen::internal::gemm_pack_rhs<T, Index, mapper, traits::nr, Eigen::ColMajor>;
  using gebp = Eigen::internal::gebp_kernel<T, T, Index, res_mapper, traits::mr, traits::nr, false, false>;
};

// Packs all of b [k, n] into `packed` (blocks.packed_elements(), aligned to default_alignment), on
// the calling thread, in the layout shared_gemm's threads pack it in.
template <class T>
  requires shared_gemm_dtype<T>
void pack_b(std::int64_t n, std::int64_t k, const T* b, T* packed, const shared_gemm_blocks& blocks) noexcept {
  using gemm = gemm_parts<T>;
  typename gemm::pack_lhs pack_lhs;
  const typename gemm::mapper lhs(b, n);
  for (std::int64_t kb = 0; kb < blocks.k_blocks; ++kb)
    for (std::int64_t nb = 0; nb < blocks.n_blocks; ++nb) {
      const std::int64_t k0 = kb * blocks.kc, j0 = nb * blocks.mc;
      pack_lhs(packed + blocks.offset(kb, nb), lhs.getSubMapper(j0, k0), std::min(blocks.kc, k - k0),
               std::min(blocks.mc, n - j0));
    }
}

// Rows first..last of c [m, n] = a [m, k] x b, with b packed (pack_b's layout, blocks' kc and mc);
// a's rows packed blocks.nc at a time into the calling thread's scratch.
template <class T>
  requires shared_gemm_dtype<T>
void gemm_rows(std::int64_t first, std::int64_t last, std::int64_t n, std::int64_t k, const T* a, const T* packed_b,
               T* c, const shared_gemm_blocks& blocks) {
  using gemm = gemm_parts<T>;
  typename gemm::pack_rhs pack_rhs;
  typename gemm::gebp gebp;
  const typename gemm::mapper rhs(a, k);   // a^T [k, m]: element (p, i) is a[i][p]
  const typename gemm::res_mapper res(c, n);  // c^T [n, m]
  for (std::int64_t i = first; i < last; ++i) std::fill_n(c + i * n, n, T(0));  // gebp adds to c
  const scratch_buffer<T> packed_a(static_cast<std::size_t>(blocks.kc * blocks.nc));
  for (std::int64_t kb = 0; kb < blocks.k_blocks; ++kb) {
    const std::int64_t k0 = kb * blocks.kc, depth = std::min(blocks.kc, k - k0);
    for (std::int64_t i0 = first; i0 < last; i0 += blocks.nc) {
      const std::int64_t rows = std::min(blocks.nc, last - i0);
      pack_rhs(packed_a.data(), rhs.getSubMapper(k0, i0), depth, rows);
      for (std::int64_t nb = 0; nb < blocks.n_blocks; ++nb) {
        const std::int64_t j0 = nb * blocks.mc;
        gebp(res.getSubMapper(j0, i0), packed_b + blocks.offset(kb, nb), packed_a.data(), std::min(blocks.mc, n - j0),
             depth, rows, T(1));
      }
    }
  }
}

// One parallel pass over `parts` ranges of m (c's rows, or b's panels) (a second would be a second
// region for the helper threads). Each thread that starts
//  1. takes chunks of b to pack (pack_chunk(t), t < chunks) until none is left, then waits for the
//     chunks other threads took, which they are already packing;
//  2. computes its range: rows(first, last).
// A thread that starts late finds every chunk taken, so no thread waits on one that has not started
// (the caller alone runs every range when it is itself one of the pool's threads). pack_chunk must
// not throw: a thread that threw before packing every chunk it took would leave the others waiting.
template <class Device, class PackChunk, class Rows>
void pack_shared_then_multiply(Device& device, std::int64_t m, std::int64_t parts, double part_cost,
                               std::int64_t chunks, const PackChunk& pack_chunk, const Rows& rows) {
  static_assert(noexcept(pack_chunk(std::int64_t{0})));
  std::atomic<std::int64_t> next_chunk{0}, packed_chunks{0};
  device.parallel_for(parts, part_cost, [&](std::int64_t first_part, std::int64_t last_part) {
    for (std::int64_t t = next_chunk.fetch_add(1, std::memory_order_relaxed); t < chunks;
         t = next_chunk.fetch_add(1, std::memory_order_relaxed)) {
      pack_chunk(t);
      packed_chunks.fetch_add(1, std::memory_order_release);
    }
    while (packed_chunks.load(std::memory_order_acquire) < chunks) std::this_thread::yield();
    rows(m * first_part / parts, m * last_part / parts);
  });
}

template <class T, class Device>
  requires shared_gemm_dtype<T>
void shared_gemm(Device& device, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
                 const shared_gemm_blocks& blocks) {
  using traits = Eigen::internal::gebp_traits<T, T>;
  using gemm = gemm_parts<T>;
  typename gemm::pack_lhs pack_lhs;
  const typename gemm::mapper lhs(b, n);  // b^T [n, k]: element (j, p) is b[p][j]
  const scratch_buffer<T> packed_b(static_cast<std::size_t>(blocks.packed_elements()));

  // Chunks of a few mr-row panels of b's blocks (a run of whole panels packed alone lies where
  // packing its block would put it, panel p at p * mr * depth); each range of rows is then its rows
  // of a packed kc x nc at a time, times every packed block of b.
  constexpr std::int64_t chunk_rows = 4 * traits::mr;
  const std::int64_t chunks_per_block = (blocks.mc + chunk_rows - 1) / chunk_rows;
  auto pack_chunk = [&](std::int64_t t) noexcept {
    const std::int64_t kb = t / (blocks.n_blocks * chunks_per_block), nb = t / chunks_per_block % blocks.n_blocks;
    const std::int64_t k0 = kb * blocks.kc, depth = std::min(blocks.kc, k - k0);
    const std::int64_t j0 = nb * blocks.mc, block_rows = std::min(blocks.mc, n - j0);
    const std::int64_t r0 = t % chunks_per_block * chunk_rows;
    if (r0 < block_rows)
      pack_lhs(packed_b.data() + blocks.offset(kb, nb) + r0 * depth, lhs.getSubMapper(j0 + r0, k0), depth,
               std::min(chunk_rows, block_rows - r0));
  };
  // One range of rows a thread that parallel_for will start (more ranges than threads would split
  // the rows unevenly between them).
  const std::int64_t parts = shared_gemm_threads<T>(device, m, n, k);
  pack_shared_then_multiply(device, m, parts, shared_gemm_part_cost(m, n, k, parts),
                            blocks.k_blocks * blocks.n_blocks * chunks_per_block, pack_chunk,
                            [&](std::int64_t first, std::int64_t last) {
                              gemm_rows(first, last, n, k, a, packed_b.data(), c, blocks);
                            });
}

// Whether `parts` threads split a product on fma_gemm by b's panels of 16 columns (each thread all
// of c's rows, its own columns) rather than by c's rows: when each thread's rows fit in one row block
// of a (fewer than mc), a split by rows has every thread stream all of b for a few rows, and rows
// that are not a multiple of 6 waste a part of the micro-kernel. The kernel alone on a packed b, 2
// threads against 1, this machine: [64, 1024] x [1024, 1024] 2.12x split by panels, 1.69x by rows;
// [16, 1024] x [1024, 1024] 1.96x against 1.50x; from 256 rows on within 5% either way.
inline bool fma_gemm_split_by_panels(std::int64_t m, std::int64_t n, std::int64_t parts) {
  return m < parts * fma_gemm::mc && fma_gemm::panels(n) >= 2 * parts;
}

// The same for f32 on fma_gemm (requires fma_gemm::available()): chunks of four 16-column panels of
// one depth block of b; split by panels (fma_gemm_split_by_panels) or by rows.
template <class Device>
void shared_fma_gemm(Device& device, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b,
                     float* c) {
  const scratch_buffer<float> packed_b(static_cast<std::size_t>(std::max<std::int64_t>(fma_gemm::packed_b_size(k, n), 1)));
  constexpr std::int64_t chunk_panels = 4;
  const std::int64_t chunks_per_block = (fma_gemm::panels(n) + chunk_panels - 1) / chunk_panels;
  auto pack_chunk = [&](std::int64_t t) noexcept {
    const std::int64_t first = t % chunks_per_block * chunk_panels;
    fma_gemm::pack_b_panels({b, n, 1}, k, n, t / chunks_per_block * fma_gemm::kc, first,
                            std::min(first + chunk_panels, fma_gemm::panels(n)), packed_b.data());
  };
  const std::int64_t parts = shared_gemm_threads<float>(device, m, n, k);
  const std::int64_t chunks = fma_gemm::depth_blocks(k) * chunks_per_block;
  const double part_cost = shared_gemm_part_cost(m, n, k, parts);
  if (fma_gemm_split_by_panels(m, n, parts))
    return pack_shared_then_multiply(device, fma_gemm::panels(n), parts, part_cost, chunks, pack_chunk,
                                     [&](std::int64_t first, std::int64_t last) {
                                       fma_gemm::multiply({a, k, 1}, 0, m, n, k, packed_b.data(), first, last, c, n);
                                     });
  pack_shared_then_multiply(device, m, parts, part_cost, chunks, pack_chunk, [&](std::int64_t first, std::int64_t last) {
    fma_gemm::multiply({a, k, 1}, first, last, n, k, packed_b.data(), c, n);
  });
}

// b [k, n] packed once and kept, for products with many a's: a static session keeps one for a
// matmul whose b is a variable (kernels/packed_operand.hpp), so that a run packs only a's rows.
// f32 is packed for fma_gemm where the processor runs it (on the MLP's products, [64, 784] x [784,
// 1024] and [64, 1024] x [1024, 1024], one thread, weights hot in the cache: 0.65 and 0.61-0.70 of
// Eigen's matrix product, which packs b on every call); f64, and f32 elsewhere, in pack_b's layout
// for Eigen's micro-kernel (0.78 and 0.73 of it). Its size is b's rounded up to whole panels of 16
// columns (fma_gemm), or to whole blocks (kc x mc each; 2% more for the MLP's [784, 1024]).
template <class T>
  requires shared_gemm_dtype<T>
class packed_matrix {
 public:
  // b packed for `rows` rows of a: for fma_gemm (f32, where available), else with the blocking Eigen
  // chooses; or for Eigen with the blocks given. nullptr when the packed b would be larger than
  // shared_gemm_max_packed_bytes, or memory is short.
  static std::shared_ptr<const packed_matrix> pack(std::int64_t rows, std::int64_t n, std::int64_t k, const T* b) {
    if constexpr (std::is_same_v<T, float>)
      if (fma_gemm::available()) return make(true, shared_gemm_blocks{}, n, k, b);
    return pack(shared_gemm_blocks::of<T>(rows, n, k), n, k, b);
  }
  static std::shared_ptr<const packed_matrix> pack(const shared_gemm_blocks& blocks, std::int64_t n, std::int64_t k,
                                                   const T* b) {
    return make(false, blocks, n, k, b);
  }
  packed_matrix(const packed_matrix&) = delete;
  packed_matrix& operator=(const packed_matrix&) = delete;
  ~packed_matrix() { ::operator delete(data_, std::align_val_t{default_alignment}); }

  std::int64_t n() const { return n_; }
  std::int64_t k() const { return k_; }
  // Whether b is packed for fma_gemm (else for Eigen, with blocks()).
  bool for_fma() const { return fma_; }
  const shared_gemm_blocks& blocks() const { return blocks_; }

  // c [m, n] = a [m, k] x b over the policy's threads, each a range of c's rows (for Eigen, a's rows
  // packed in blocks Eigen chooses for m; b's depth and column blocks are the packed ones), or for
  // fma_gemm a range of b's panels where fma_gemm_split_by_panels says so.
  template <class Device>
  void multiply(Device& device, std::int64_t m, const T* a, T* c) const {
    shared_gemm_blocks blocks = blocks_;
    if (!fma_) blocks.nc = shared_gemm_blocks::of<T>(m, n_, k_).nc;
    auto rows = [&](std::int64_t first, std::int64_t last) {
      if constexpr (std::is_same_v<T, float>)
        if (fma_) return fma_gemm::multiply({a, k_, 1}, first, last, n_, k_, data_, c, n_);
      gemm_rows(first, last, n_, k_, a, data_, c, blocks);
    };
    const std::int64_t parts = shared_gemm_threads<T>(device, m, n_, k_);
    if (parts <= 1) return rows(0, m);
    const bool by_panels = fma_ && fma_gemm_split_by_panels(m, n_, parts);
    const std::int64_t ranges = by_panels ? fma_gemm::panels(n_) : m;
    device.parallel_for(parts, shared_gemm_part_cost(m, n_, k_, parts), [&](std::int64_t first, std::int64_t last) {
      if constexpr (std::is_same_v<T, float>)
        if (by_panels)
          return fma_gemm::multiply({a, k_, 1}, 0, m, n_, k_, data_, ranges * first / parts, ranges * last / parts, c, n_);
      rows(ranges * first / parts, ranges * last / parts);
    });
  }

 private:
  packed_matrix(bool fma, std::int64_t n, std::int64_t k, const shared_gemm_blocks& blocks, T* data)
      : fma_(fma), n_(n), k_(k), blocks_(blocks), data_(data) {}

  static std::shared_ptr<const packed_matrix> make(bool fma, const shared_gemm_blocks& blocks, std::int64_t n,
                                                   std::int64_t k, const T* b) {
    const auto elements =
        static_cast<std::size_t>(std::max<std::int64_t>(fma ? fma_gemm::packed_b_size(k, n) : blocks.packed_elements(), 1));
    if (elements * sizeof(T) > shared_gemm_max_packed_bytes) return nullptr;
    auto* data = static_cast<T*>(::operator new(elements * sizeof(T), std::align_val_t{default_alignment}, std::nothrow));
    if (data == nullptr) return nullptr;
    auto* p = new (std::nothrow) packed_matrix(fma, n, k, blocks, data);
    if (p == nullptr) {
      ::operator delete(data, std::align_val_t{default_alignment});
      return nullptr;
    }
    if constexpr (std::is_same_v<T, float>)
      if (fma) fma_gemm::pack_b({b, n, 1}, k, n, data);
    if (!fma) pack_b(n, k, b, data, blocks);
    try {
      return std::shared_ptr<const packed_matrix>(p);  // its control block may not fit either
    } catch (const std::bad_alloc&) {  // the constructor deleted p
      return nullptr;
    }
  }

  bool fma_;
  std::int64_t n_, k_;
  shared_gemm_blocks blocks_;
  T* data_;
};

}  // namespace typeflow::cpu_kernels::detail
