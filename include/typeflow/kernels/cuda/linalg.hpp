// SPDX-License-Identifier: Apache-2.0
// GPU kernel of matmul (ops/linalg.hpp) through libtypeflow_cuda's cuBLASLt products: exact f32 (no
// TF32), with NumPy broadcasting of the batch dimensions. When one operand's batch is the output's
// and the other's is that too or a single matrix, one strided-batched call does it; other
// broadcasts run one call per output matrix.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>

#include <typeflow/cuda/blas.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/linalg.hpp>

namespace typeflow::cuda_kernels {

template <class Op, class Device, class T>
struct cuda_matmul_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const ops::matmul& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& a = ctx.inputs[0];
    const tensor& b = ctx.inputs[1];
    tensor& out = ctx.outputs[0];
    const std::size_t ra = a.rank(), rb = b.rank(), ro = out.rank();
    const std::int64_t m = out.dim(ro - 2), n = out.dim(ro - 1);
    const std::int64_t k = op.transpose_a ? a.dim(ra - 2) : a.dim(ra - 1);
    const std::int64_t batch_out = out.num_elements() / (m * n == 0 ? 1 : m * n);
    const auto batch_of = [](const tensor& t) {
      std::int64_t v = 1;
      for (std::size_t i = 0; i + 2 < t.rank(); ++i) v *= t.dim(i);
      return v;
    };
    const std::int64_t batch_a = batch_of(a), batch_b = batch_of(b);
    gpu::matmul_params p{.type = detail::elem_of<T>, .m = m, .n = n, .k = k, .transpose_a = op.transpose_a,
                         .transpose_b = op.transpose_b};
    if (m * n == 0) return ok_status();
    auto& streams = ctx.device.streams();
    if ((batch_a == batch_out || batch_a == 1) && (batch_b == batch_out || batch_b == 1)) {
      p.batch = batch_out;
      p.a = a.data();
      p.b = b.data();
      p.out = out.data();
      p.batch_stride_a = batch_a == 1 ? 0 : -1;
      p.batch_stride_b = batch_b == 1 ? 0 : -1;
      return streams.matmul(p, Op::name);
    }
    // General broadcast: each output matrix from its a and b matrices.
    const std::size_t batch_rank = ro - 2;
    const auto esize = static_cast<std::int64_t>(sizeof(T));
    for (std::int64_t q = 0; q < batch_out; ++q) {
      std::int64_t rest = q, qa = 0, qb = 0, scale_a = 1, scale_b = 1;
      for (std::size_t d = batch_rank; d-- > 0;) {
        const std::int64_t c = rest % out.dim(d);
        rest /= out.dim(d);
        const std::size_t lead_a = batch_rank - (ra - 2), lead_b = batch_rank - (rb - 2);
        if (d >= lead_a) {
          const std::int64_t da = a.dim(d - lead_a);
          if (da != 1) qa += c * scale_a;
          scale_a *= da;
        }
        if (d >= lead_b) {
          const std::int64_t db = b.dim(d - lead_b);
          if (db != 1) qb += c * scale_b;
          scale_b *= db;
        }
      }
      p.batch = 1;
      p.a = static_cast<const char*>(a.data()) + qa * m * k * esize;
      p.b = static_cast<const char*>(b.data()) + qb * k * n * esize;
      p.out = static_cast<char*>(out.data()) + q * m * n * esize;
      if (auto s = streams.matmul(p, Op::name); !s.ok()) return s;
    }
    return ok_status();
  }
};

} // namespace typeflow::cuda_kernels
