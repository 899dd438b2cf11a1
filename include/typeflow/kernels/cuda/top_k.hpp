// SPDX-License-Identifier: Apache-2.0
// GPU kernel of top_k (ops/nn.hpp) through libtypeflow_cuda's top_k: rows along the last dimension,
// the CPU kernel's order (cuda/top_k.hpp). Not sorted, the ranks' scratch is a buffer of the pool for
// the length of the call (only the stream it runs on touches it).
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>

#include <typeflow/cuda/top_k.hpp>
#include <typeflow/kernels/cuda/detail/arguments.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/nn.hpp>

namespace typeflow::cuda_kernels {

template <class Op, class Device, class T>
struct cuda_top_k_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;  // enqueues

  static status compute(const ops::top_k& op, kernel_context<Device>& ctx) {
    if (auto s = detail::check_spaces(Op::name, ctx); !s.ok()) return s;
    const tensor& x = ctx.inputs[0];
    // The executors infer first; the launcher's checks still keep every read inside a row.
    if (auto st = op.infer_shape(std::span<const shape>(&x.shape(), 1)); !st.ok()) return st.status();
    const std::int64_t n = x.dim(x.rank() - 1);
    gpu::top_k_params p{.type = detail::elem_of<T>, .rows = n == 0 ? 0 : x.num_elements() / n, .n = n, .k = op.k,
                        .sorted = op.sorted, .x = x.data(), .values = ctx.outputs[0].data(),
                        .indices = static_cast<std::int64_t*>(ctx.outputs[1].data())};
    if (p.rows * p.k == 0) return ok_status();
    tensor ranks;
    if (!op.sorted) {
      auto r = ctx.device.allocate(dtype::i64, shape{p.rows * n});
      if (!r.ok()) return r.status().with_context(Op::name);
      ranks = std::move(r).value();
      p.ranks = static_cast<std::int64_t*>(ranks.data());
    }
    return gpu::top_k(ctx.device.streams().current(), p);
  }
};

}  // namespace typeflow::cuda_kernels
