// SPDX-License-Identifier: Apache-2.0
// Neural-network layers that are not convolutions: bias_add, softmax, log_softmax, inference
// batch normalisation, and top_k. Channels are the last dimension (NHWC), as in TensorFlow's defaults.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

namespace detail {

// The shape check of softmax and log_softmax: rank >= 1 and an axis inside it; the shape is kept.
constexpr result<shape> softmax_shape(std::string_view op, std::int64_t axis, const shape& x) {
  if (auto st = require_min_rank(op, "input", x, 1); !st.ok()) return st;
  const auto r = static_cast<std::int64_t>(x.rank());
  if (axis < -r || axis >= r)
    return errors::invalid_argument(op, ": axis ", axis, " is out of range for an input of rank ", x.rank(),
                                    " (shape ", x, "); expected ", -r, " <= axis < ", r);
  return x;
}

// Input `index` (named `what`) must be a vector of `channels` elements: the last dimension of
// input 0, `x`, as far as it and the inputs before this one tell.
constexpr status require_channel_vector(std::string_view op, std::size_t index, std::string_view what, const shape& v,
                                        std::int64_t channels, const shape& x) {
  if (v.rank() != 1)
    return errors::invalid_argument(op, ": input ", index, " (", what, ") must have rank 1, got shape ", v);
  if (!compatible(v[0], channels))
    return errors::invalid_argument(op, ": input ", index, " (", what, ") has length ", v[0], " but there are ",
                                    channels, " channels (input 0 has shape ", x, ")");
  return ok_status();
}

} // namespace detail

// value [..., c] + bias [c] -> [..., c]: the bias is added along the last dimension.
struct bias_add {
  static constexpr std::string_view name = "bias_add";
  static constexpr int num_inputs = 2;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::numbers);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    if (auto st = detail::require_min_rank(name, "input 0 (value)", in[0], 1); !st.ok()) return st;
    shape out = in[0];
    std::int64_t& channels = out[out.rank() - 1];
    if (auto st = detail::require_channel_vector(name, 1, "bias", in[1], channels, in[0]); !st.ok()) return st;
    channels = detail::merge(channels, in[1][0]);
    return out;
  }
  friend constexpr bool operator==(const bias_add&, const bias_add&) = default;
};

// softmax: y = e^(x - max) / sum(e^(x - max)) along `axis` (negative counts from the back);
// log_softmax: y = (x - max) - log(sum(e^(x - max))), the log of softmax without its underflow.
// The shape is kept. One template, two op types.
template <bool Log>
struct softmax_op {
  static constexpr std::string_view name = Log ? "log_softmax" : "softmax";
  static constexpr int num_inputs = 1;
  static constexpr bool log = Log;
  std::int64_t axis = -1;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    return detail::softmax_shape(name, axis, in[0]);
  }
  friend constexpr bool operator==(const softmax_op&, const softmax_op&) = default;
};

using softmax = softmax_op<false>;
using log_softmax = softmax_op<true>;

// Layer normalisation (ONNX's LayerNormalization, stash_type float): over the dimensions from
// `axis` on (negative counts from the back), y = (x - mean) / sqrt(variance + epsilon) * scale +
// offset, with the biased variance; scale and offset (inputs 1 and 2) have the shape of those
// dimensions. Statistics are computed in float (double for f64) whatever the dtype.
struct layer_norm {
  static constexpr std::string_view name = "layer_norm";
  static constexpr int num_inputs = 3;
  std::int64_t axis = -1;
  double epsilon = 1e-5;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    if (auto st = detail::require_min_rank(name, "input 0 (x)", x, 1); !st.ok()) return st;
    const auto a = normalize_axis(axis, x.rank());
    if (!a.ok()) return a.status().with_context(name);
    if (!(epsilon >= 0)) return errors::invalid_argument(name, ": epsilon must be >= 0, got ", epsilon);
    shape normalized;
    for (std::size_t i = *a; i < x.rank(); ++i) normalized.push_back(x[i]);
    for (std::size_t k = 1; k < 3; ++k) {
      bool ok = in[k].rank() == normalized.rank();
      for (std::size_t i = 0; ok && i < normalized.rank(); ++i) ok = detail::compatible(in[k][i], normalized[i]);
      if (!ok)
        return errors::invalid_argument(name, ": ", k == 1 ? "scale (input 1)" : "offset (input 2)", " has shape ", in[k],
                                        "; it must be ", normalized, ", the dimensions of input shape ", x,
                                        " from axis ", *a, " on");
    }
    return x;
  }
  friend constexpr bool operator==(const layer_norm&, const layer_norm&) = default;
};

// Inference batch normalisation (TensorFlow's FusedBatchNorm with is_training = false):
// inputs x [..., c], scale [c], offset [c], mean [c], variance [c];
// y = (x - mean) * scale / sqrt(variance + epsilon) + offset, per channel of the last dimension.
// A negative variance makes that channel NaN, as in TensorFlow (the data is not checked).
struct batch_norm {
  static constexpr std::string_view name = "batch_norm";
  static constexpr int num_inputs = 5;
  double epsilon = 1e-3;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::floating);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    if (!(epsilon >= 0)) {
      // Doubles are formatted only at run time (detail/format.hpp): at compile time the message omits the value.
      if (std::is_constant_evaluated())
        return errors::invalid_argument(name, ": epsilon must be >= 0, got a negative value or NaN");
      return errors::invalid_argument(name, ": epsilon must be >= 0, got ", epsilon);
    }
    if (auto st = detail::require_min_rank(name, "input 0 (x)", in[0], 1); !st.ok()) return st;
    constexpr std::string_view names[] = {"x", "scale", "offset", "mean", "variance"};
    shape out = in[0];
    std::int64_t& channels = out[out.rank() - 1];
    for (std::size_t i = 1; i < 5; ++i) {
      if (auto st = detail::require_channel_vector(name, i, names[i], in[i], channels, in[0]); !st.ok()) return st;
      channels = detail::merge(channels, in[i][0]);
    }
    return out;
  }
  friend constexpr bool operator==(const batch_norm&, const batch_norm&) = default;
};

// The k largest entries of each row along the last dimension: output 0 their values, output 1
// their positions in the row (i64), both of shape [..., k]. sorted: largest first, and among
// equal values the lower position first (TensorFlow's TopKV2); not sorted: in the order they
// stand in the row. NaN counts as larger than every number, as in PyTorch's topk.
struct top_k {
  static constexpr std::string_view name = "top_k";
  static constexpr int num_inputs = 1;
  std::int64_t k = 1;
  bool sorted = true;

  static constexpr std::size_t num_outputs() { return 2; }
  constexpr result<dtype> infer_dtype(std::span<const dtype> in, std::size_t output = 0) const {
    auto d = detail::same_dtype(name, in, detail::accepts::numbers);
    if (!d.ok() || output == 0) return d;
    return dtype::i64;
  }
  constexpr result<shape> infer_shape(std::span<const shape> in, std::size_t = 0) const {
    const shape& x = in[0];
    if (auto st = detail::require_min_rank(name, "input", x, 1); !st.ok()) return st;
    if (k < 0) return errors::invalid_argument(name, ": k must be >= 0, got ", k);
    const std::int64_t n = x[x.rank() - 1];
    if (n != dyn && k > n)
      return errors::invalid_argument(name, ": k = ", k, " is larger than the last dimension of input shape ", x,
                                      " (", n, ")");
    shape out = x;
    out[x.rank() - 1] = k;
    return out;
  }
  friend constexpr bool operator==(const top_k&, const top_k&) = default;
};

} // namespace typeflow::ops
