// SPDX-License-Identifier: Apache-2.0
// matmul: batched matrix multiplication (TensorFlow's BatchMatMulV2), with NumPy broadcasting of
// the batch dimensions.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

// a [batch_a..., m, k] x b [batch_b..., k, n] -> [broadcast(batch_a, batch_b)..., m, n].
// transpose_a reads a as [batch_a..., k, m] and transpose_b reads b as [batch_b..., n, k]; the
// batch dimensions are every dimension but the last two and broadcast as NumPy's do.
struct matmul {
  static constexpr std::string_view name = "matmul";
  static constexpr int num_inputs = 2;
  bool transpose_a = false;
  bool transpose_b = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::numbers);
  }

  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& a = in[0];
    const shape& b = in[1];
    if (auto st = detail::require_min_rank(name, "input 0 (a)", a, 2); !st.ok()) return st;
    if (auto st = detail::require_min_rank(name, "input 1 (b)", b, 2); !st.ok()) return st;
    const std::size_t ra = a.rank();
    const std::size_t rb = b.rank();
    const std::int64_t m = transpose_a ? a[ra - 1] : a[ra - 2];
    const std::int64_t ka = transpose_a ? a[ra - 2] : a[ra - 1];
    const std::int64_t kb = transpose_b ? b[rb - 1] : b[rb - 2];
    const std::int64_t n = transpose_b ? b[rb - 2] : b[rb - 1];
    if (!detail::compatible(ka, kb))
      return errors::invalid_argument(name, ": inner dimensions differ: a is ", a, transpose_a ? " (transposed, k = " : " (k = ",
                                      ka, "), b is ", b, transpose_b ? " (transposed, k = " : " (k = ", kb, ")");

    shape batch_a;
    shape batch_b;
    for (std::size_t i = 0; i + 2 < ra; ++i) batch_a.push_back(a[i]);
    for (std::size_t i = 0; i + 2 < rb; ++i) batch_b.push_back(b[i]);
    auto batch = broadcast(batch_a, batch_b);
    if (!batch.ok())
      return errors::invalid_argument(name, ": the batch dimensions of a ", a, " and b ", b, " do not broadcast (",
                                      batch.status().message(), ")");
    shape out = *batch;
    out.push_back(m);
    out.push_back(n);
    return out;
  }

  friend constexpr bool operator==(const matmul&, const matmul&) = default;
};

} // namespace typeflow::ops
