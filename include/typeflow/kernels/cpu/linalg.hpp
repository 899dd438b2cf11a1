// SPDX-License-Identifier: Apache-2.0
// CPU kernel for matmul on a GEMM backend (kernels/cpu/gemm.hpp). The output is cut into ranges of
// rows, or into blocks of columns when there are too few rows for the policy's threads, and each is
// one GEMM of the backend on one of the policy's threads: the split is the policy's parallel_for,
// which takes nothing from the heap, where Eigen's parallel contraction allocates its task closures
// and contexts on every call (and is instantiated again for every dtype). A batch of a against one
// matrix b (a not transposed) is one tall matrix [batch * m, k], so a range of rows crosses batches
// in one GEMM: on one thread, the whole product is one call of the backend (with Eigen, f32 on
// fma_gemm where the processor has AVX2 and FMA, else one tensor contraction as a user would write
// it by hand). On several threads, f32 and f64 tall products on Eigen go through one GEMM that packs
// b once for all the threads (kernels/cpu/detail/shared_gemm.hpp); where b is a variable of a static
// session, b is packed once for all the runs (pack, compute_packed).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/kernels/cpu/gemm.hpp>
#include <typeflow/kernels/cpu/detail/shared_gemm.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/linalg.hpp>

namespace typeflow::cpu_kernels {

namespace detail {

// Where each batch of a broadcast matmul finds its matrices. The output's batch dimensions are
// walked in row-major order; a and b advance by their own strides, 0 along dimensions they
// broadcast (size 1, or absent on the left).
struct matmul_batches {
  std::size_t rank = 0;                          // output batch dimensions
  std::array<std::int64_t, max_rank> dims{};     // output batch dimensions
  std::array<std::int64_t, max_rank> a_step{};   // elements of a between consecutive indices
  std::array<std::int64_t, max_rank> b_step{};

  static matmul_batches of(const shape& a, const shape& b, const shape& c) {
    matmul_batches g;
    g.rank = c.rank() - 2;
    const std::int64_t a_matrix = a[a.rank() - 2] * a[a.rank() - 1];
    const std::int64_t b_matrix = b[b.rank() - 2] * b[b.rank() - 1];
    // Output batch dimension i is dimension i - lead of a or b (absent, so 1, when i < lead).
    const std::size_t a_lead = g.rank - (a.rank() - 2), b_lead = g.rank - (b.rank() - 2);
    std::int64_t a_stride = a_matrix, b_stride = b_matrix;
    for (std::size_t i = g.rank; i-- > 0;) {
      g.dims[i] = c[i];
      const std::int64_t da = i >= a_lead ? a[i - a_lead] : 1;
      const std::int64_t db = i >= b_lead ? b[i - b_lead] : 1;
      g.a_step[i] = da == 1 ? 0 : a_stride;
      g.b_step[i] = db == 1 ? 0 : b_stride;
      a_stride *= da;
      b_stride *= db;
    }
    return g;
  }

  // Offsets (in elements) of the matrices of a and b that output batch `index` multiplies.
  void offsets(std::int64_t index, std::int64_t& a_offset, std::int64_t& b_offset) const {
    a_offset = 0;
    b_offset = 0;
    for (std::size_t i = rank; i-- > 0;) {
      const std::int64_t j = index % dims[i];
      index /= dims[i];
      a_offset += j * a_step[i];
      b_offset += j * b_step[i];
    }
  }
};

}  // namespace detail

template <class Op, class Device, class T, class Gemm>
struct basic_matmul_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& a = ctx.inputs[0];
    const tensor& b = ctx.inputs[1];
    tensor& c = ctx.outputs[0];
    const std::size_t ra = a.rank(), rc = c.rank();
    const std::int64_t m = c.dim(rc - 2), n = c.dim(rc - 1);
    const std::int64_t k = op.transpose_a ? a.dim(ra - 2) : a.dim(ra - 1);
    if (c.num_elements() == 0) return ok_status();
    if (k == 0) {  // every sum is empty
      std::fill_n(c.unchecked_data<T>(), c.num_elements(), T(0));
      return ok_status();
    }
    if (!batched_gemm(op, ctx.device, a, b, c, m, n, k))
      return errors::internal("matmul: ", Gemm::name, "'s GEMM failed on ", a.shape().to_string(), " x ",
                              b.shape().to_string());
    return ok_status();
  }

  // b kept packed across runs when it is a variable of a static session (kernels/packed_operand.hpp):
  // f32 and f64 on the Eigen backend (f32 packed for fma_gemm where the processor runs it), one
  // matrix b, neither operand transposed, at least min_rows_to_split rows of a. Other products run
  // as compute does: with fewer rows Eigen's contraction is a matrix-vector product, which the
  // packed GEMM (on Eigen's micro-kernel) was 1.1-1.3x slower than on the MLP at batch 1.
  static constexpr std::size_t packed_input = 1;
  static bool packable(const Op& op, std::span<const tensor> inputs)
    requires(std::is_same_v<Gemm, eigen_gemm> && detail::shared_gemm_dtype<T>)
  {
    const tensor& a = inputs[0];
    const tensor& b = inputs[1];
    if (op.transpose_a || op.transpose_b || a.rank() < 2 || b.rank() < 2) return false;
    const std::int64_t k = b.dim(b.rank() - 2), n = b.dim(b.rank() - 1);
    return k > 0 && n > 0 && b.num_elements() == k * n && a.dim(a.rank() - 1) == k &&
           a.num_elements() / k >= min_rows_to_split;
  }
  // b packed (nullptr when memory is short, or the packed b would pass shared_gemm_max_packed_bytes).
  static std::shared_ptr<const void> pack(const Op& op, std::span<const tensor> inputs)
    requires(std::is_same_v<Gemm, eigen_gemm> && detail::shared_gemm_dtype<T>)
  {
    if (!packable(op, inputs)) return nullptr;
    const tensor& b = inputs[1];
    const std::int64_t k = b.dim(b.rank() - 2), n = b.dim(b.rank() - 1);
    return detail::packed_matrix<T>::pack(inputs[0].num_elements() / k, n, k, b.unchecked_data<const T>());
  }
  static status compute_packed(const Op& op, kernel_context<Device>& ctx, const void* form)
    requires(std::is_same_v<Gemm, eigen_gemm> && detail::shared_gemm_dtype<T>)
  {
    const auto& packed = *static_cast<const detail::packed_matrix<T>*>(form);
    const tensor& b = ctx.inputs[1];
    // The form was made from a b of this shape; anything else (which the session does not give) as
    // compute does.
    if (!packable(op, ctx.inputs) || b.dim(b.rank() - 2) != packed.k() || b.dim(b.rank() - 1) != packed.n())
      return compute(op, ctx);
    tensor& c = ctx.outputs[0];
    packed.multiply(ctx.device, c.num_elements() / packed.n(), ctx.inputs[0].template unchecked_data<const T>(),
                    c.unchecked_data<T>());
    return ok_status();
  }

 private:
  // c[batch][rows] = a[batch'][rows] x b[batch''] for every output batch, with batch' and batch''
  // the broadcast indices. The batch * m output rows are split over the policy's threads, each range
  // one GEMM per batch it touches (one GEMM when a's batches stack against one matrix b); with fewer
  // than min_rows_per_thread rows a thread, the columns are split instead (every block then reads
  // all of a's rows and its own columns of b); with fewer than min_rows_to_split rows in all,
  // nothing is split but a matrix-vector product (splits_vector). False when the backend failed on a
  // block.
  // Measured with oneDNN on [m, 784] x [784, 1024], 2 threads against 1 (2-core AMD EPYC): m = 1
  // and 4 are 1.5x and 1.3x slower split by columns (a product this thin reads b once, at memory
  // speed, either way), m = 16 is 1.5x faster.
  // The exception is a matrix-vector product (one row of a, neither operand transposed) of f32 or f64
  // on the Eigen backend: its column blocks are Eigen's matrix-vector products on b's rows where they
  // lie (eigen_gemm), and a second core adds memory bandwidth. On a 2-core Xeon (Cascade Lake),
  // [1, 1024] x [1024, 1024] with b from L3, two threads against one: 89-93 against 127-133 us.
  static constexpr std::int64_t min_rows_per_thread = 32;
  static constexpr std::int64_t min_columns_per_block = 64;
  static constexpr std::int64_t min_rows_to_split = 8;
  static constexpr bool splits_vector(const Op& op, std::int64_t m) {
    return std::is_same_v<Gemm, eigen_gemm> && detail::shared_gemm_dtype<T> && m == 1 && !op.transpose_a &&
           !op.transpose_b;
  }

  static bool batched_gemm(const Op& op, Device& device, const tensor& a, const tensor& b, tensor& c, std::int64_t m,
                           std::int64_t n, std::int64_t k) {
    const auto batches = detail::matmul_batches::of(a.shape(), b.shape(), c.shape());
    const std::int64_t rows = c.num_elements() / n;
    // One matrix b (no batch dimensions, or all of them 1): the output's batches are a's, whose rows
    // follow one another, [batch * m, k], unless a is transposed. They are then one batch of all the
    // rows.
    const bool one_b_matrix = b.num_elements() == b.dim(b.rank() - 2) * b.dim(b.rank() - 1);
    if (one_b_matrix && !op.transpose_a) m = rows;
    const T* a_data = a.unchecked_data<const T>();
    const T* b_data = b.unchecked_data<const T>();
    T* c_data = c.unchecked_data<T>();
    const std::int64_t threads = std::max(1, device.num_threads());
    // Rows r0.. (count of them) of one batch's output, columns j0..j0 + width.
    auto block = [&](std::int64_t batch, std::int64_t r0, std::int64_t count, std::int64_t j0, std::int64_t width) {
      std::int64_t a_offset, b_offset;
      batches.offsets(batch, a_offset, b_offset);
      const T* ap = a_data + a_offset + (op.transpose_a ? r0 : r0 * k);   // a: [m, k], or [k, m]
      const T* bp = b_data + b_offset + (op.transpose_b ? j0 * k : j0);   // b: [k, n], or [n, k]
      return Gemm::run(op.transpose_a, op.transpose_b, count, width, k, ap, op.transpose_a ? m : k, bp,
                       op.transpose_b ? k : n, c_data + (batch * m + r0) * n + j0, n);
    };
    const bool split_columns = threads > 1 && n >= 2 * min_columns_per_block &&
                               (rows >= min_rows_to_split ? rows < threads * min_rows_per_thread : splits_vector(op, m));
    if (rows < min_rows_to_split && !split_columns) {
      for (std::int64_t batch = 0; batch < rows / m; ++batch)
        if (!block(batch, 0, m, 0, n)) return false;
      return true;
    }
    std::atomic<bool> failed{false};
    if (split_columns) {
      // Column blocks of every batch: [batch][block].
      const std::int64_t per_batch = std::clamp<std::int64_t>(n / min_columns_per_block, 1, threads);
      const std::int64_t width = (n + per_batch - 1) / per_batch;
      const std::int64_t num_batches = rows / m;
      device.parallel_for(num_batches * per_batch, static_cast<double>(m) * static_cast<double>(k * width),
                          [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t t = first; t < last; ++t) {
          const std::int64_t j0 = t % per_batch * width;
          if (!block(t / per_batch, 0, m, j0, std::min(width, n - j0))) failed = true;
        }
      });
      return !failed;
    }
    // f32 and f64 on the Eigen backend over several threads: one GEMM whose packed b the threads
    // share (detail/shared_gemm.hpp; f32 on fma_gemm where the processor runs it); measured on the
    // MLP at batch 64 on 2 threads (on Eigen's micro-kernel), 14% less CPU and elapsed time than a
    // GEMM per range of rows, each packing all of b. Where the product would run on one thread (too
    // small to split, or called from one of the pool's threads) the backend's one-thread GEMM stays:
    // the shared GEMM was 0-10% slower on one thread. A packed b over shared_gemm_max_packed_bytes
    // goes the per-range way too.
    if constexpr (std::is_same_v<Gemm, eigen_gemm> && detail::shared_gemm_dtype<T> &&
                  !std::is_same_v<typename Device::family_type, cpu>) {
      if (one_b_matrix && !op.transpose_a && !op.transpose_b && detail::shared_gemm_threads<T>(device, rows, n, k) > 1) {
        if constexpr (std::is_same_v<T, float>) {
          if (detail::fma_gemm::available() && static_cast<std::size_t>(detail::fma_gemm::packed_b_size(k, n)) *
                                                       sizeof(float) <= detail::shared_gemm_max_packed_bytes) {
            detail::shared_fma_gemm(device, rows, n, k, a_data, b_data, c_data);
            return true;
          }
        }
        const auto blocks = detail::shared_gemm_blocks::of<T>(rows, n, k);
        if (static_cast<std::size_t>(blocks.packed_elements()) * sizeof(T) <= detail::shared_gemm_max_packed_bytes) {
          detail::shared_gemm(device, rows, n, k, a_data, b_data, c_data, blocks);
          return true;
        }
      }
    }
    // One range of rows a thread: every block packs b again, so there are no more blocks than threads.
    // Cycles per range, counting a multiply-add as one.
    const std::int64_t parts = std::clamp<std::int64_t>(rows / min_rows_to_split, 1, threads);
    const double part_cost = static_cast<double>(k) * static_cast<double>(n) * static_cast<double>(rows / parts);
    device.parallel_for(parts, part_cost, [&](std::int64_t first_part, std::int64_t last_part) {
      const std::int64_t last = rows * last_part / parts;
      for (std::int64_t r = rows * first_part / parts; r < last;) {
        const std::int64_t batch = r / m;
        const std::int64_t r0 = r % m;
        const std::int64_t count = std::min(m - r0, last - r);
        if (!block(batch, r0, count, 0, n)) failed = true;
        r += count;
      }
    });
    return !failed;
  }
};

// The default kernel: matmul on the Eigen backend (f32 of 16 rows or more on fma_gemm where the
// processor has AVX2 and FMA).
template <class Op, class Device, class T>
struct eigen_matmul_kernel : basic_matmul_kernel<Op, Device, T, eigen_gemm> {};

using matmul_kernel_types = dtypes<float, double, Eigen::half, std::int32_t, std::int64_t>;

struct linalg_kernels
    : named_kernel_list<
          kernel_list<kernel_family<eigen_matmul_kernel, ops::matmul, host_devices, matmul_kernel_types>>> {};

}  // namespace typeflow::cpu_kernels
