// SPDX-License-Identifier: Apache-2.0
// Array ops: ops that move elements without computing on them (reshape, squeeze, expand_dims,
// identity, transpose, concat, slice, pad, gather) and fill, which makes a tensor from its attributes alone.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/core/detail/checked_int.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/int_list.hpp>
#include <typeflow/ops/detail/checks.hpp>
#include <typeflow/ops/detail/named_enum.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::ops {

namespace detail {

// True when converting `v` to dtype d's element type is defined: for integer dtypes, v truncated
// toward zero lies in the type's range (and v is not NaN); for f32, f16 and bf16 (converted
// through float), v is not a finite value beyond float's range (infinities and NaN convert).
// f64 takes anything; bool is v != 0.
constexpr bool value_fits(double v, dtype d) {
  constexpr double float_max = 3.4028234663852886e38;
  switch (d) {
    case dtype::i8: return v > -129.0 && v < 128.0;
    case dtype::u8: return v > -1.0 && v < 256.0;
    case dtype::i32: return v > -2147483649.0 && v < 2147483648.0;
    case dtype::i64: return v >= -0x1p63 && v < 0x1p63;  // no double lies strictly between -2^63-1 and -2^63
    case dtype::f32:
    case dtype::f16:
    case dtype::bf16: {
      constexpr double inf = std::numeric_limits<double>::infinity();
      return !(v > float_max && v < inf) && !(v < -float_max && v > -inf);
    }
    default: return true;
  }
}
// The same for an integer value, exactly (no rounding through double).
constexpr bool value_fits(std::int64_t v, dtype d) {
  switch (d) {
    case dtype::i8: return std::in_range<std::int8_t>(v);
    case dtype::u8: return std::in_range<std::uint8_t>(v);
    case dtype::i32: return std::in_range<std::int32_t>(v);
    default: return true;
  }
}

// "[0, 255]": the range a dtype holds, for messages.
constexpr std::string_view range_of(dtype d) {
  switch (d) {
    case dtype::i8: return "[-128, 127]";
    case dtype::u8: return "[0, 255]";
    case dtype::i32: return "[-2147483648, 2147483647]";
    case dtype::i64: return "[-9223372036854775808, 9223372036854775807]";
    case dtype::f32:
    case dtype::f16:
    case dtype::bf16: return "[-3.40282e+38, 3.40282e+38] (float), inf and nan";
    default: return "any value";
  }
}

// The element type's representation of `v`, which value_fits(v, dtype_of<T>) accepted.
template <class T>
constexpr T convert_value(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <class T>
constexpr T convert_value(std::int64_t v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

// An op's `value` attribute, converted to dtype d when the kernel runs: it must fit.
constexpr status require_value_fits(std::string_view op, double value, dtype d) {
  if (!value_fits(value, d))
    return errors::invalid_argument(op, ": value does not fit in dtype ", d, ", whose range is ", range_of(d));
  return ok_status();
}


} // namespace detail

// The input's elements in row-major order under shape `to`. At most one dimension of `to` may be
// -1 (dyn): it is inferred so that the element count stays the same.
struct reshape {
  static constexpr std::string_view name = "reshape";
  static constexpr int num_inputs = 1;
  shape to{};

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    std::size_t inferred = max_rank;  // the index of the -1 in `to`, if any
    std::int64_t target_count = 1;    // product of the other dimensions of `to`
    for (std::size_t i = 0; i < to.rank(); ++i) {
      if (to[i] == dyn) {
        if (inferred != max_rank)
          return errors::invalid_argument(name, ": target shape ", to, " has more than one -1 dimension (",
                                          inferred, " and ", i, "); at most one can be inferred");
        inferred = i;
      } else if (to[i] < 0) {
        return errors::invalid_argument(name, ": target shape ", to, " has negative dimension ", to[i],
                                        " at index ", i);
      } else if (!typeflow::detail::checked_mul(target_count, to[i], target_count) || target_count > max_num_elements) {
        return errors::invalid_argument(name, ": target shape ", to, " has more than ", max_num_elements,
                                        " elements");
      }
    }
    const std::int64_t count = detail::known_num_elements(x);
    shape out = to;
    if (inferred == max_rank) {
      if (count != dyn && count != target_count)
        return errors::invalid_argument(name, ": cannot reshape input of shape ", x, " (", count,
                                        " elements) to ", to, " (", target_count, " elements)");
      return out;
    }
    if (target_count == 0)
      return errors::invalid_argument(name, ": cannot infer the -1 dimension of target shape ", to,
                                      " for input of shape ", x,
                                      ": the other dimensions have 0 elements, so any size would fit");
    if (count != dyn) {
      if (count % target_count != 0)
        return errors::invalid_argument(name, ": cannot reshape input of shape ", x, " (", count,
                                        " elements) to ", to, ": ", count, " is not a multiple of ",
                                        target_count, ", the product of the known dimensions");
      out[inferred] = count / target_count;
    }
    return out;
  }
  friend constexpr bool operator==(const reshape&, const reshape&) = default;
};

// The input, unchanged.
struct identity {
  static constexpr std::string_view name = "identity";
  static constexpr int num_inputs = 1;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const { return in[0]; }
  friend constexpr bool operator==(const identity&, const identity&) = default;
};

// x where condition is true, y elsewhere; the three broadcast together as NumPy's (ONNX's Where,
// TensorFlow's SelectV2). condition is bool; x and y have one dtype, the output's, which picks
// the kernel.
struct where {
  static constexpr std::string_view name = "where";
  static constexpr int num_inputs = 3;
  static constexpr int kernel_dtype_input = 1;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    if (in[0] != dtype::boolean) return errors::invalid_argument(name, ": condition (input 0) must be bool, got ", in[0]);
    if (in[1] != in[2])
      return errors::invalid_argument(name, ": x (input 1) and y (input 2) must have one dtype, got ", in[1], " and ", in[2]);
    return in[1];
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    auto xy = typeflow::broadcast(in[1], in[2]);
    if (!xy.ok()) return xy.status().with_context("where: x and y");
    auto all = typeflow::broadcast(in[0], *xy);
    if (!all.ok()) return all.status().with_context("where: condition and values");
    return all;
  }
  friend constexpr bool operator==(const where&, const where&) = default;
};

// The input repeated to the broadcast of its shape and `shape` (NumPy's rule, both ways, as ONNX's
// Expand; TensorFlow's BroadcastTo is the case where the result is `shape`). `shape` is fully
// defined.
struct broadcast_to {
  static constexpr std::string_view name = "broadcast_to";
  static constexpr int num_inputs = 1;
  typeflow::shape dims{};

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<typeflow::shape> infer_shape(std::span<const typeflow::shape> in) const {
    if (!dims.is_fully_defined())
      return errors::invalid_argument(name, ": shape ", dims, " must be fully defined");
    auto out = typeflow::broadcast(in[0], dims);
    if (!out.ok()) return out.status().with_context(name);
    return out;
  }
  friend constexpr bool operator==(const broadcast_to&, const broadcast_to&) = default;
};

// y[i0, ..., in] = x at the index whose dimension perm[k] is ik: output dimension k is input
// dimension perm[k]. An empty perm reverses the dimensions (a matrix transpose for rank 2).
// Entries count from the front only, as in TensorFlow: negative entries are rejected.
struct transpose {
  static constexpr std::string_view name = "transpose";
  static constexpr int num_inputs = 1;
  int_list perm{};

  // The permutation applied to an input of rank `rank`: perm, or the reversal when perm is empty.
  constexpr int_list permutation(std::size_t rank) const {
    if (!perm.empty()) return perm;
    int_list p;
    for (std::size_t i = rank; i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
    return p;
  }

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    const auto rank = static_cast<std::int64_t>(x.rank());
    if (!perm.empty() && perm.size() != x.rank())
      return errors::invalid_argument(name, ": perm ", perm, " has ", perm.size(),
                                      " entries but the input has rank ", rank, " (shape ", x, ")");
    const int_list p = permutation(x.rank());
    bool seen[max_rank]{};
    shape out;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i] < 0 || p[i] >= rank)
        return errors::invalid_argument(name, ": perm ", perm, " entry ", p[i], " at position ", i,
                                        " is out of range [0, ", rank, ") for rank ", rank);
      const auto axis = static_cast<std::size_t>(p[i]);
      if (seen[axis])
        return errors::invalid_argument(name, ": perm ", perm, " is not a permutation of 0..", rank - 1,
                                        " for rank ", rank, ": ", p[i], " appears twice");
      seen[axis] = true;
      out.push_back(x[axis]);
    }
    return out;
  }
  friend constexpr bool operator==(const transpose&, const transpose&) = default;
};

// Joins one or more inputs along `axis` (negative counts from the back). The inputs share dtype
// and rank, and agree on every dimension except `axis`.
struct concat {
  static constexpr std::string_view name = "concat";
  static constexpr int num_inputs = variadic;
  std::int64_t axis = 0;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& first = in[0];
    if (first.rank() == 0)
      return errors::invalid_argument(name, ": inputs must have rank >= 1, input 0 is a scalar");
    const auto a = normalize_axis(axis, first.rank());
    if (!a.ok()) return a.status().with_context(name);
    shape out = first;
    for (std::size_t i = 1; i < in.size(); ++i) {
      const shape& s = in[i];
      if (s.rank() != first.rank())
        return errors::invalid_argument(name, ": input ", i, " has rank ", s.rank(), " (shape ", s,
                                        ") but input 0 has rank ", first.rank(), " (shape ", first, ")");
      for (std::size_t d = 0; d < s.rank(); ++d) {
        if (d == *a) {
          if (out[d] != dyn && s[d] != dyn && !typeflow::detail::checked_add(out[d], s[d], out[d]))
            return errors::invalid_argument(name, ": the inputs' sizes along axis ", *a, " add up past 64 bits");
          if (s[d] == dyn) out[d] = dyn;
        } else if (!detail::compatible(out[d], s[d])) {
          return errors::invalid_argument(name, ": input ", i, " has shape ", s, " and input 0 has shape ", first,
                                          ": dimension ", d, " is ", s[d], " vs ", out[d],
                                          ", but only the axis (", *a, ") may differ");
        } else {
          out[d] = detail::merge(out[d], s[d]);
        }
      }
    }
    return out;
  }
  friend constexpr bool operator==(const concat&, const concat&) = default;
};

// Cuts the input into num_split equal parts along `axis` (negative counts from the back): output
// k is x[..., k * n : (k + 1) * n, ...] with n = x[axis] / num_split, which must divide evenly.
// TensorFlow's Split; the first op with several outputs ("s:1" in a runtime graph).
struct split {
  static constexpr std::string_view name = "split";
  static constexpr int num_inputs = 1;
  std::int64_t axis = 0;
  std::int64_t num_split = 2;

  constexpr std::size_t num_outputs() const { return num_split >= 1 ? static_cast<std::size_t>(num_split) : 1; }
  constexpr result<dtype> infer_dtype(std::span<const dtype> in, std::size_t = 0) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in, std::size_t = 0) const {
    const shape& x = in[0];
    if (num_split < 1) return errors::invalid_argument(name, ": num_split must be at least 1, got ", num_split);
    if (x.rank() == 0) return errors::invalid_argument(name, ": the input must have rank >= 1, got a scalar");
    const auto a = normalize_axis(axis, x.rank());
    if (!a.ok()) return a.status().with_context(name);
    shape out = x;
    if (x[*a] != dyn) {
      if (x[*a] % num_split != 0)
        return errors::invalid_argument(name, ": dimension ", *a, " of input shape ", x, " (", x[*a],
                                        ") does not divide into ", num_split, " equal parts");
      out[*a] = x[*a] / num_split;
    }
    return out;
  }
  friend constexpr bool operator==(const split&, const split&) = default;
};

// One axis of a slice, resolved against the input's size: output element j reads input element
// begin + j * stride (count elements).
struct slice_axis {
  std::int64_t begin = 0, count = 0, stride = 1;
};

namespace detail {

// Elements of a dimension of d that start at b and step by s (b in range, s != 0): as many as fit.
constexpr std::int64_t elements_to_end(std::int64_t d, std::int64_t b, std::int64_t s) {
  if (s > 0) return b >= d ? 0 : (d - b + s - 1) / s;
  return b < 0 || b >= d ? 0 : b / -s + 1;
}

} // namespace detail

// y[j0, j1, ...] = x[begin[0] + j0 * strides[0], begin[1] + j1 * strides[1], ...], size[i] elements
// along axis i: one entry of `begin` and `size` per input dimension, and of `strides` (nonzero;
// empty: all 1). A size of -1 takes as many as fit, toward the end (or, with a negative stride,
// toward the start).
//   clamp false (the default; TensorFlow's Slice, with strides): begin lies in the dimension
//     ([0, d], or [0, d - 1] with a negative stride and elements to take), and the elements taken
//     do too; anything else is invalid_argument.
//   clamp true (ONNX's Slice): a negative begin counts from the end; begin is then clamped into
//     the dimension ([0, d] with a positive stride, [0, d - 1] with a negative one), and size to
//     the elements that fit. A dimension unknown until run time makes the output's dyn.
struct slice {
  static constexpr std::string_view name = "slice";
  static constexpr int num_inputs = 1;
  int_list begin{};
  int_list size{};
  int_list strides{};
  bool clamp = false;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }

  // Axis i of input shape x resolved; a dyn dimension resolves only as far as it can (count dyn
  // where it depends on d). The kernel resolves against the tensor's shape.
  constexpr result<slice_axis> resolve(const shape& x, std::size_t i) const {
    const std::int64_t d = x[i], n = size[i], s = strides.empty() ? 1 : strides[i];
    std::int64_t b = begin[i];
    if (s == 0) return errors::invalid_argument(name, ": axis ", i, ": stride is 0");
    if (s < -max_num_elements || s > max_num_elements)
      return errors::invalid_argument(name, ": axis ", i, ": stride ", s, " is out of range");
    if (n < -1)
      return errors::invalid_argument(name, ": axis ", i, ": size ", n,
                                      " is negative (only -1, meaning to the end, is allowed)");
    if (clamp) {
      if (d == dyn) return slice_axis{b, n == 0 ? 0 : dyn, s};
      if (b < 0) b += d;
      if (s > 0) b = std::clamp<std::int64_t>(b, 0, d);
      else b = d == 0 ? -1 : std::clamp<std::int64_t>(b, 0, d - 1);
      const std::int64_t fit = detail::elements_to_end(d, b, s);
      return taken(b, n == -1 ? fit : std::min(n, fit), s);
    }
    if (b < 0)
      return errors::invalid_argument(name, ": axis ", i, ": begin ", b, " is negative (input shape ", x, ")");
    if (d == dyn) return slice_axis{b, n == -1 ? dyn : n, s};
    if (b > d || (s < 0 && b == d && d > 0 && n != 0))
      return errors::invalid_argument(name, ": axis ", i, ": begin ", b, " is out of range [0, ", s < 0 ? d - 1 : d,
                                      "] for input shape ", x);
    const std::int64_t fit = detail::elements_to_end(d, b, s);
    if (n == -1) return taken(b, fit, s);
    if (n > fit) {
      if (s == 1)
        return errors::invalid_argument(name, ": axis ", i, ": begin ", b, " + size ", n, " exceeds dimension ", d,
                                        " of input shape ", x);
      return errors::invalid_argument(name, ": axis ", i, ": ", n, " elements from ", b, " in steps of ", s,
                                      " leave dimension ", d, " of input shape ", x, " (", fit, " fit)");
    }
    return taken(b, n, s);
  }

  // An axis taking count elements: with one or none the stride does not matter, and is 1 (so
  // that index arithmetic never multiplies a huge stride).
  static constexpr slice_axis taken(std::int64_t b, std::int64_t count, std::int64_t s) {
    return slice_axis{b, count, count <= 1 ? 1 : s};
  }

  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    if (begin.size() != x.rank() || size.size() != x.rank())
      return errors::invalid_argument(name, ": begin ", begin, " and size ", size,
                                      " must have one entry per input dimension; the input has shape ", x);
    if (!strides.empty() && strides.size() != x.rank())
      return errors::invalid_argument(name, ": strides ", strides,
                                      " must be empty or have one entry per input dimension; the input has shape ", x);
    shape out;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      auto a = resolve(x, i);
      if (!a.ok()) return a.status();
      out.push_back(a->count);
    }
    return out;
  }
  friend constexpr bool operator==(const slice&, const slice&) = default;
};

// x without the dimensions of size 1 that `axes` names (negative counts from the back; each at
// most once); with no axes, without every dimension of size 1, which must then all be known.
// TensorFlow's Squeeze; ONNX's Squeeze.
struct squeeze {
  static constexpr std::string_view name = "squeeze";
  static constexpr int num_inputs = 1;
  int_list axes{};

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    const auto r = static_cast<std::int64_t>(x.rank());
    std::array<bool, max_rank> drop{};
    if (axes.empty()) {
      for (std::size_t i = 0; i < x.rank(); ++i) {
        if (x[i] == dyn)
          return errors::invalid_argument(name, ": without axes every dimension must be known, to tell which are 1; "
                                          "input shape ", x, " (name the axes)");
        drop[i] = x[i] == 1;
      }
    }
    for (const std::int64_t a : axes) {
      if (a < -r || a >= r)
        return errors::invalid_argument(name, ": axis ", a, " is out of range for input shape ", x);
      const auto i = static_cast<std::size_t>(a < 0 ? a + r : a);
      if (drop[i]) return errors::invalid_argument(name, ": axis ", a, " is named twice in axes ", axes);
      if (x[i] != 1 && x[i] != dyn)
        return errors::invalid_argument(name, ": axis ", a, " has size ", x[i], " in input shape ", x,
                                        "; only dimensions of size 1 can be squeezed");
      drop[i] = true;
    }
    shape out;
    for (std::size_t i = 0; i < x.rank(); ++i)
      if (!drop[i]) out.push_back(x[i]);
    return out;
  }
  friend constexpr bool operator==(const squeeze&, const squeeze&) = default;
};

// x with a dimension of size 1 inserted at `axis` of the result (in [-rank - 1, rank]; negative
// counts from the back of the result). TensorFlow's ExpandDims; ONNX's Unsqueeze is one per axis.
struct expand_dims {
  static constexpr std::string_view name = "expand_dims";
  static constexpr int num_inputs = 1;
  std::int64_t axis = 0;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    return detail::same_dtype(name, in, detail::accepts::any);
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    if (x.rank() >= max_rank)
      return errors::invalid_argument(name, ": input shape ", x, " already has the largest rank, ", max_rank);
    const auto r = static_cast<std::int64_t>(x.rank()) + 1;
    if (axis < -r || axis >= r)
      return errors::invalid_argument(name, ": axis ", axis, " is out of range [", -r, ", ", r - 1,
                                      "] for input shape ", x);
    const auto at = static_cast<std::size_t>(axis < 0 ? axis + r : axis);
    shape out;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      if (i == at) out.push_back(1);
      out.push_back(x[i]);
    }
    if (at == x.rank()) out.push_back(1);
    return out;
  }
  friend constexpr bool operator==(const expand_dims&, const expand_dims&) = default;
};

// What pad puts in the border, along each axis (TensorFlow's Pad and MirrorPad, ONNX's Pad modes):
//   constant:  `value`                                    [1 2 3] by 2 -> [v v 1 2 3 v v]
//   reflect:   the input mirrored without its edge        [1 2 3] by 2 -> [3 2 1 2 3 2 1]
//   symmetric: the input mirrored with its edge           [1 2 3] by 2 -> [2 1 1 2 3 3 2]
//   edge:      the edge element repeated                  [1 2 3] by 2 -> [1 1 1 2 3 3 3]
// reflect pads at most d - 1 on a side of a dimension of d, symmetric at most d, edge anything but
// an empty dimension.
enum class pad_mode : unsigned char { constant, reflect, symmetric, edge };

constexpr std::array<std::string_view, 4> names_of(pad_mode) noexcept { return {"constant", "reflect", "symmetric", "edge"}; }

namespace detail {

// Whether `mode` can pad a dimension of d (known) by before and after.
constexpr status check_pad_mode(std::string_view op, pad_mode mode, std::size_t axis, std::int64_t d, std::int64_t before,
                                std::int64_t after) {
  const std::int64_t most = std::max(before, after);
  if (mode == pad_mode::reflect && most > d - 1)
    return errors::invalid_argument(op, ": axis ", axis, " has ", d, " elements; reflect pads at most ", d - 1 < 0 ? 0 : d - 1,
                                    " on a side, not ", most);
  if (mode == pad_mode::symmetric && most > d)
    return errors::invalid_argument(op, ": axis ", axis, " has ", d, " elements; symmetric pads at most ", d, " on a side, not ", most);
  if (mode == pad_mode::edge && d == 0 && most > 0)
    return errors::invalid_argument(op, ": axis ", axis, " is empty; edge has no element to repeat");
  return ok_status();
}

}  // namespace detail

// Adds paddings[2k] elements before and paddings[2k + 1] after dimension k: all equal to `value`
// (converted to the dtype: it must fit in integer dtypes; bool pads with value != 0) in mode
// constant, taken from the input in the other modes (pad_mode above), which take no value.
struct pad {
  static constexpr std::string_view name = "pad";
  static constexpr int num_inputs = 1;
  int_list paddings{};
  double value = 0;
  pad_mode mode = pad_mode::constant;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    auto d = detail::same_dtype(name, in, detail::accepts::any);
    if (!d.ok()) return d;
    if (auto st = detail::require_value_fits(name, value, *d); !st.ok()) return st;
    return d;
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& x = in[0];
    if (mode != pad_mode::constant && value != 0)
      return errors::invalid_argument(name, ": mode ", mode, " takes its values from the input; value must be 0, not ", value);
    if (!is_named(mode)) return errors::invalid_argument(name, ": invalid mode");
    if (paddings.size() != 2 * x.rank())
      return errors::invalid_argument(name, ": paddings ", paddings, " has ", paddings.size(),
                                      " entries; expected 2 per input dimension (before, after), ",
                                      2 * x.rank(), " for input shape ", x);
    shape out;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      const std::int64_t before = paddings[2 * i], after = paddings[2 * i + 1];
      if (before < 0 || after < 0)
        return errors::invalid_argument(name, ": paddings ", paddings, " for axis ", i, " are (", before, ", ",
                                        after, "); paddings must be >= 0");
      std::int64_t padded = x[i];
      if (padded != dyn && (!typeflow::detail::checked_add(padded, before, padded) ||
                            !typeflow::detail::checked_add(padded, after, padded)))
        return errors::invalid_argument(name, ": paddings ", paddings, " for axis ", i, " make dimension ", x[i],
                                        " of input shape ", x, " larger than 64 bits hold");
      if (x[i] != dyn)
        if (auto st = detail::check_pad_mode(name, mode, i, x[i], before, after); !st.ok()) return st;
      out.push_back(padded);
    }
    return out;
  }
  friend constexpr bool operator==(const pad&, const pad&) = default;
};

// y = params indexed along `axis` by every element of indices (i32 or i64):
//   y[p..., i..., q...] = params[p..., indices[i...], q...]
// with shape params.shape[:axis] + indices.shape + params.shape[axis + 1:]. A negative index counts
// from the end, as NumPy's and ONNX's (TensorFlow's CPU kernel refuses them); one outside
// [-params.shape[axis], params.shape[axis]) is an invalid_argument error when the kernel runs.
struct gather {
  static constexpr std::string_view name = "gather";
  static constexpr int num_inputs = 2;
  std::int64_t axis = 0;

  constexpr result<dtype> infer_dtype(std::span<const dtype> in) const {
    if (!is_valid(in[0])) return errors::invalid_argument(name, ": invalid params dtype");
    if (in[1] != dtype::i32 && in[1] != dtype::i64)
      return errors::invalid_argument(name, ": indices (input 1) must be i32 or i64, got ", in[1]);
    return in[0];
  }
  constexpr result<shape> infer_shape(std::span<const shape> in) const {
    const shape& params = in[0];
    const shape& indices = in[1];
    if (auto st = detail::require_min_rank(name, "params (input 0)", params, 1); !st.ok()) return st;
    const auto a = normalize_axis(axis, params.rank());
    if (!a.ok()) return a.status().with_context(name);
    if (params.rank() - 1 + indices.rank() > max_rank)
      return errors::invalid_argument(name, ": the output would have rank ", params.rank() - 1 + indices.rank(),
                                      " (params shape ", params, ", indices shape ", indices, "), more than ",
                                      max_rank);
    shape out;
    for (std::size_t i = 0; i < *a; ++i) out.push_back(params[i]);
    for (auto d : indices) out.push_back(d);
    for (std::size_t i = *a + 1; i < params.rank(); ++i) out.push_back(params[i]);
    return out;
  }
  friend constexpr bool operator==(const gather&, const gather&) = default;
};

// A tensor of dtype `type` and shape `dims` (fully defined), every element `value` (converted
// as pad's value is). Takes no inputs: its kernel is picked by the output dtype, `type`.
struct fill {
  static constexpr std::string_view name = "fill";
  static constexpr int num_inputs = 0;
  shape dims{};
  double value = 0;
  dtype type = dtype::f32;

  constexpr result<dtype> infer_dtype(std::span<const dtype>) const {
    if (!is_valid(type)) return errors::invalid_argument(name, ": invalid dtype code ", static_cast<int>(type));
    if (auto st = detail::require_value_fits(name, value, type); !st.ok()) return st;
    return type;
  }
  constexpr result<shape> infer_shape(std::span<const shape>) const {
    for (std::size_t i = 0; i < dims.rank(); ++i) {
      if (dims[i] == dyn)
        return errors::invalid_argument(name, ": dims ", dims, " must be fully defined: dimension ", i,
                                        " is unknown (-1)");
      if (dims[i] < 0)
        return errors::invalid_argument(name, ": dims ", dims, " has negative dimension ", dims[i], " at index ", i);
    }
    return dims;
  }
  friend constexpr bool operator==(const fill&, const fill&) = default;
};

} // namespace typeflow::ops
