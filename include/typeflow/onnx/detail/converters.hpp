// SPDX-License-Identifier: Apache-2.0
// One converter per ONNX op type: it reads the node's attributes and inputs and writes the typeflow
// nodes that compute the same thing, through the builder. What it cannot map exactly (an attribute
// value, a layout, an input that would have to be known at import) is an `unimplemented` status
// saying what; the importer adds which node. ONNX's layouts are NCHW and OIHW; typeflow's conv2d and
// pools are NHWC and HWIO, so those converters transpose around the op (constants at import).
#pragma once

#include <typeflow/core/detail/internal_header_check.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/onnx/detail/builder.hpp>
#include <typeflow/onnx/tensor_proto.hpp>
#include <typeflow/ops/array.hpp>
#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/linalg.hpp>
#include <typeflow/ops/nn.hpp>
#include <typeflow/ops/pool.hpp>
#include <typeflow/ops/reduction.hpp>
#include <typeflow/ops/resize.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow::detail::onnx_import {

// What a converter sees of one ONNX node.
class node_context {
 public:
  node_context(const ::onnx::NodeProto& node, int version, builder& b, std::vector<std::optional<value>> in)
      : node_(node), version_(version), b_(b), in_(std::move(in)) {}

  const ::onnx::NodeProto& node() const { return node_; }
  int version() const { return version_; }  // the version of the op's schema in the model's opset
  builder& graph() { return b_; }
  std::vector<value>& outputs() { return out_; }

  std::size_t num_inputs() const { return in_.size(); }
  bool has_input(std::size_t k) const { return k < in_.size() && in_[k].has_value(); }
  const value& input(std::size_t k) const { return *in_[k]; }
  // The number of outputs the model reads (trailing optional outputs left out).
  std::size_t num_outputs() const {
    std::size_t n = static_cast<std::size_t>(node_.output_size());
    while (n > 0 && node_.output(static_cast<int>(n) - 1).empty()) --n;
    return n;
  }

  // Input k's contents, which this op needs at import (a shape, axes, pads).
  result<tensor> constant_input(std::size_t k, std::string_view what) const {
    if (!has_input(k)) return errors::invalid_argument("input ", k, " (", what, ") is missing");
    if (!in_[k]->constant)
      return errors::unimplemented("input ", k, " (", what, ", '", node_.input(static_cast<int>(k)),
                                   "') must be known when the model is imported (an initializer or a constant)");
    return *in_[k]->constant;
  }
  result<std::vector<std::int64_t>> int_input(std::size_t k, std::string_view what) const {
    auto t = constant_input(k, what);
    if (!t.ok()) return t.status();
    if (t->dtype() != dtype::i64 && t->dtype() != dtype::i32)
      return errors::invalid_argument("input ", k, " (", what, ") must be int32 or int64, got ", t->dtype());
    return int_values(*t);
  }

  const ::onnx::AttributeProto* attribute(std::string_view name) const {
    for (const auto& a : node_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  result<std::int64_t> attr_int(std::string_view name, std::int64_t fallback) const {
    const auto* a = attribute(name);
    if (a == nullptr) return fallback;
    if (a->type() != ::onnx::AttributeProto::INT) return wrong_type(*a, "an int");
    return a->i();
  }
  result<double> attr_float(std::string_view name, double fallback) const {
    const auto* a = attribute(name);
    if (a == nullptr) return fallback;
    if (a->type() != ::onnx::AttributeProto::FLOAT) return wrong_type(*a, "a float");
    return static_cast<double>(a->f());
  }
  result<std::string> attr_string(std::string_view name, std::string fallback) const {
    const auto* a = attribute(name);
    if (a == nullptr) return fallback;
    if (a->type() != ::onnx::AttributeProto::STRING) return wrong_type(*a, "a string");
    return a->s();
  }
  result<std::vector<std::int64_t>> attr_ints(std::string_view name, std::vector<std::int64_t> fallback) const {
    const auto* a = attribute(name);
    if (a == nullptr) return fallback;
    if (a->type() != ::onnx::AttributeProto::INTS) return wrong_type(*a, "a list of ints");
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
  }

  // The name of node for output 0 (the last node a converter writes), or a helper named after it.
  std::string name(std::string_view suffix = {}) const {
    const std::string base = node_.output_size() > 0 && !node_.output(0).empty() ? node_.output(0) : node_.name();
    return suffix.empty() ? base : detail::cat(base, "/", suffix).str();
  }

  template <class Op>
  result<value> apply(const Op& op, std::initializer_list<value> in, std::string_view suffix = {}) {
    return b_.apply1(op, name(suffix), in);
  }
  template <class Op>
  result<value> apply(const Op& op, std::span<const value> in, std::string_view suffix = {}) {
    return b_.apply1(op, name(suffix), in);
  }
  // The converter's result: output k of the node.
  status set(result<value> v) {
    if (!v.ok()) return v.status();
    out_.push_back(std::move(*v));
    return ok_status();
  }

 private:
  static status wrong_type(const ::onnx::AttributeProto& a, std::string_view expected) {
    return errors::invalid_argument("attribute '", a.name(), "' must be ", expected, ", got type ",
                                    ::onnx::AttributeProto::AttributeType_Name(a.type()));
  }

  const ::onnx::NodeProto& node_;
  int version_;
  builder& b_;
  std::vector<std::optional<value>> in_;
  std::vector<value> out_;
};

using converter = status (*)(node_context&);

// Shorthands for the checks converters share.
#define TYPEFLOW_ONNX_TRY(var, expr)        \
  auto var##_result = (expr);               \
  if (!var##_result.ok()) return var##_result.status(); \
  auto var = std::move(*var##_result)

// The value reshaped to `to` (at most one dyn, as reshape takes): folded for constants.
inline result<value> reshaped(node_context& c, const value& v, const shape& to, std::string_view suffix) {
  if (v.spec.dims == to) return v;
  if (v.constant && to.is_fully_defined()) {
    auto t = v.constant->reshaped(to);
    if (!t.ok()) return t.status();
    return c.graph().constant(c.name(suffix), std::move(*t));
  }
  return c.apply(ops::reshape{to}, {v}, suffix);
}

// A target shape with at most one unknown dimension (written -1) from dimensions that may hold
// several: unimplemented when it has more than one.
inline result<shape> one_unknown(const shape& s, std::string_view what) {
  int unknown = 0;
  for (auto d : s) unknown += d == dyn;
  if (unknown > 1)
    return errors::unimplemented(what, " would be ", s, ", with more than one dimension unknown at import; typeflow's "
                                 "reshape infers at most one");
  return s;
}

inline result<value> transposed(node_context& c, const value& v, std::initializer_list<std::size_t> perm,
                                std::string_view suffix) {
  if (v.constant) {
    auto t = transpose_constant(*v.constant, std::span<const std::size_t>(perm.begin(), perm.size()));
    if (!t.ok()) return t.status();
    return c.graph().constant(c.name(suffix), std::move(*t));
  }
  int_list p;
  for (auto i : perm) p.push_back(static_cast<std::int64_t>(i));
  return c.apply(ops::transpose{p}, {v}, suffix);
}

inline result<std::int64_t> normalized_axis(std::int64_t axis, std::size_t rank, std::string_view what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    return errors::invalid_argument(what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

// ---- elementwise ----

template <class Op>
status unary(node_context& c) {
  return c.set(c.apply(Op{}, {c.input(0)}));
}

template <class Op>
status binary(node_context& c) {
  return c.set(c.apply(Op{}, {c.input(0), c.input(1)}));
}

// Sum, Max, Min and Mean of any number of inputs, folded left.
template <class Op, bool Mean = false>
status variadic(node_context& c) {
  value acc = c.input(0);
  for (std::size_t k = 1; k < c.num_inputs(); ++k) {
    const bool last = k + 1 == c.num_inputs() && !Mean;
    TYPEFLOW_ONNX_TRY(v, c.apply(Op{}, {acc, c.input(k)}, last ? "" : detail::cat("acc", k).view()));
    acc = std::move(v);
  }
  if constexpr (Mean) {
    if (!is_floating(acc.spec.type)) return errors::unimplemented("Mean of integers");
    const value n = c.graph().scalar(c.name("count"), acc.spec.type, static_cast<double>(c.num_inputs()));
    return c.set(c.apply(ops::div{}, {acc, n}));
  }
  if (c.num_inputs() == 1) return c.set(c.apply(ops::identity{}, {acc}));
  return c.set(acc);
}

inline status identity(node_context& c) { return c.set(c.apply(ops::identity{}, {c.input(0)})); }

inline status reciprocal(node_context& c) {
  const value one = c.graph().scalar(c.name("one"), c.input(0).spec.type, 1.0);
  return c.set(c.apply(ops::div{}, {one, c.input(0)}));
}

// Pow: the exponent may have another dtype than the base; the result has the base's.
inline status power(node_context& c) {
  value e = c.input(1);
  if (e.spec.type != c.input(0).spec.type) {
    TYPEFLOW_ONNX_TRY(cast, c.apply(ops::cast{c.input(0).spec.type}, {e}, "exponent"));
    e = std::move(cast);
  }
  return c.set(c.apply(ops::pow{}, {c.input(0), e}));
}

inline status cast(node_context& c) {
  TYPEFLOW_ONNX_TRY(to, c.attr_int("to", 0));
  auto d = onnx_dtype(static_cast<int>(to));
  if (!d.ok()) return d.status().with_context("attribute 'to'");
  return c.set(c.apply(ops::cast{*d}, {c.input(0)}));
}

template <bool Log>
status softmax(node_context& c) {
  TYPEFLOW_ONNX_TRY(axis, c.attr_int("axis", -1));
  return c.set(c.apply(ops::softmax_op<Log>{axis}, {c.input(0)}));
}

// ---- linear algebra ----

// MatMul, NumPy's: a 1-D operand is a row (a) or a column (b) that the result drops.
inline status matmul(node_context& c) {
  value a = c.input(0), b = c.input(1);
  const std::size_t ra = a.spec.dims.rank(), rb = b.spec.dims.rank();
  if (ra == 0 || rb == 0) return errors::invalid_argument("MatMul needs operands of rank >= 1");
  if (ra == 1) { TYPEFLOW_ONNX_TRY(v, reshaped(c, a, shape{1, a.spec.dims[0]}, "a_row")); a = std::move(v); }
  if (rb == 1) { TYPEFLOW_ONNX_TRY(v, reshaped(c, b, shape{b.spec.dims[0], 1}, "b_column")); b = std::move(v); }
  if (ra > 1 && rb > 1) return c.set(c.apply(ops::matmul{}, {a, b}));
  TYPEFLOW_ONNX_TRY(y, c.apply(ops::matmul{}, {a, b}, "matmul"));
  shape out;
  const shape& d = y.spec.dims;
  for (std::size_t i = 0; i < d.rank(); ++i)
    if (!((ra == 1 && i == d.rank() - 2) || (rb == 1 && i == d.rank() - 1))) out.push_back(d[i]);
  TYPEFLOW_ONNX_TRY(target, one_unknown(out, "the result"));
  return c.set(c.apply(ops::reshape{target}, {y}));
}

// Gemm: alpha * A' B' + beta * C.
inline status gemm(node_context& c) {
  TYPEFLOW_ONNX_TRY(alpha, c.attr_float("alpha", 1.0));
  TYPEFLOW_ONNX_TRY(beta, c.attr_float("beta", 1.0));
  TYPEFLOW_ONNX_TRY(ta, c.attr_int("transA", 0));
  TYPEFLOW_ONNX_TRY(tb, c.attr_int("transB", 0));
  const bool has_c = c.has_input(2);
  const dtype t = c.input(0).spec.type;
  const bool last_is_product = alpha == 1.0 && !has_c;
  TYPEFLOW_ONNX_TRY(y, c.apply(ops::matmul{ta != 0, tb != 0}, {c.input(0), c.input(1)}, last_is_product ? "" : "matmul"));
  if (alpha != 1.0) {
    const value a = c.graph().scalar(c.name("alpha"), t, alpha);
    TYPEFLOW_ONNX_TRY(scaled, c.apply(ops::mul{}, {y, a}, has_c ? "scaled" : ""));
    y = std::move(scaled);
  }
  if (!has_c) return c.set(y);
  value bias = c.input(2);
  if (beta != 1.0) {
    const value b = c.graph().scalar(c.name("beta"), t, beta);
    TYPEFLOW_ONNX_TRY(scaled, c.apply(ops::mul{}, {bias, b}, "c_scaled"));
    bias = std::move(scaled);
  }
  return c.set(c.apply(ops::add{}, {y, bias}));
}

// ---- convolution and pooling (NCHW <-> NHWC) ----

// The 2-D window attributes of Conv and the pools, checked, with explicit pads resolved. `same`:
// typeflow's `same` padding gives exactly these pads (TensorFlow's SAME is ONNX's SAME_UPPER: the
// odd pixel after), so no pad node is needed; it is also how SAME_UPPER reads when the image size is
// unknown at import.
struct window {
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  std::int64_t top = 0, left = 0, bottom = 0, right = 0;
  bool same = false;
  bool padded() const { return top || left || bottom || right; }
};

inline result<window> read_window(node_context& c, const shape& x, std::optional<shape> kernel_from) {
  window w;
  if (x.rank() != 4)
    return errors::unimplemented("only 2-D images (NCHW, rank 4) are supported; the input has shape ", x);
  TYPEFLOW_ONNX_TRY(kernel, c.attr_ints("kernel_shape", kernel_from ? std::vector<std::int64_t>{(*kernel_from)[2], (*kernel_from)[3]}
                                                                  : std::vector<std::int64_t>{}));
  if (kernel.size() != 2) return errors::invalid_argument("kernel_shape must have 2 entries, got ", kernel.size());
  TYPEFLOW_ONNX_TRY(strides, c.attr_ints("strides", {1, 1}));
  TYPEFLOW_ONNX_TRY(dilations, c.attr_ints("dilations", {1, 1}));
  TYPEFLOW_ONNX_TRY(pads, c.attr_ints("pads", {0, 0, 0, 0}));
  TYPEFLOW_ONNX_TRY(auto_pad, c.attr_string("auto_pad", "NOTSET"));
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return errors::invalid_argument("strides and dilations need 2 entries and pads 4, got ", strides.size(), ", ",
                                    dilations.size(), " and ", pads.size());
  for (auto p : pads)
    if (p < 0) return errors::invalid_argument("pads must be >= 0, got ", p);
  for (auto v : {kernel[0], kernel[1], strides[0], strides[1], dilations[0], dilations[1]})
    if (v < 1) return errors::invalid_argument("kernel_shape, strides and dilations must be >= 1, got ", v);
  for (auto v : {kernel[0], kernel[1], strides[0], strides[1], dilations[0], dilations[1], pads[0], pads[1], pads[2], pads[3]})
    if (v > ops::max_window_attr)
      return errors::invalid_argument("kernel_shape, strides, dilations and pads must be at most ", ops::max_window_attr,
                                      ", got ", v);
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    return errors::invalid_argument("auto_pad '", auto_pad, "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  w.kh = kernel[0]; w.kw = kernel[1]; w.sh = strides[0]; w.sw = strides[1]; w.dh = dilations[0]; w.dw = dilations[1];
  if (auto_pad == "NOTSET") { w.top = pads[0]; w.left = pads[1]; w.bottom = pads[2]; w.right = pads[3]; }
  const bool known = x[2] != dyn && x[3] != dyn;
  if (!known) {
    if (auto_pad == "SAME_LOWER") return errors::unimplemented("auto_pad SAME_LOWER with an image size unknown at import");
    w.same = auto_pad == "SAME_UPPER";
    return w;
  }
  // The total padding of SAME along one axis: the output is ceil(in / stride).
  const auto total = [](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d) {
    const std::int64_t out = (in + s - 1) / s;
    return std::max<std::int64_t>((out - 1) * s + (k - 1) * d + 1 - in, 0);
  };
  const std::int64_t th = total(x[2], w.kh, w.sh, w.dh), tw = total(x[3], w.kw, w.sw, w.dw);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const bool upper = auto_pad == "SAME_UPPER";
    w.top = upper ? th / 2 : th - th / 2; w.bottom = th - w.top;
    w.left = upper ? tw / 2 : tw - tw / 2; w.right = tw - w.left;
  }
  w.same = w.padded() && w.top == th / 2 && w.bottom == th - th / 2 && w.left == tw / 2 && w.right == tw - tw / 2;
  return w;
}

// The padding of the window's op: same when typeflow's gives the window's pads (or SAME_UPPER
// with an image size unknown at import), else explicit, or valid without pads. `ceil` (ceil_mode)
// keeps explicit pads explicit: same ignores ceil_mode.
inline ops::padding padding_of(const window& w, bool ceil = false) {
  if (w.same && !(ceil && w.padded())) return ops::padding::same;
  return w.padded() ? ops::padding::explicit_ : ops::padding::valid;
}

// The window's attributes written into a conv2d or pool op, on NCHW images as ONNX's.
template <class Op>
void set_window(Op& op, const window& w, ops::padding pad) {
  op.stride_h = w.sh;
  op.stride_w = w.sw;
  op.dilation_h = w.dh;
  op.dilation_w = w.dw;
  op.pad = pad;
  if (pad == ops::padding::explicit_) {
    op.pad_top = w.top;
    op.pad_bottom = w.bottom;
    op.pad_left = w.left;
    op.pad_right = w.right;
  }
  op.format = ops::data_format::nchw;
}

// Conv: conv2d on the NCHW image as it lies, the OIHW weight transposed to HWIO (once, at
// import, when it is a constant); the bias [C] added as [C, 1, 1].
inline status conv(node_context& c) {
  const value& x = c.input(0);
  const value& wv = c.input(1);
  TYPEFLOW_ONNX_TRY(group, c.attr_int("group", 1));
  if (group != 1) return errors::unimplemented("group ", group, " (grouped and depthwise convolution)");
  if (wv.spec.dims.rank() != 4) return errors::unimplemented("only 2-D convolution (a rank-4 OIHW weight) is supported");
  TYPEFLOW_ONNX_TRY(w, read_window(c, x.spec.dims, wv.spec.dims));
  if (w.kh != wv.spec.dims[2] || w.kw != wv.spec.dims[3])
    return errors::invalid_argument("kernel_shape [", w.kh, ", ", w.kw, "] differs from the weight's ", wv.spec.dims);
  TYPEFLOW_ONNX_TRY(filter, transposed(c, wv, {2, 3, 1, 0}, "hwio"));
  ops::conv2d op{};
  set_window(op, w, padding_of(w));
  if (!c.has_input(2)) return c.set(c.apply(op, {x, filter}));
  TYPEFLOW_ONNX_TRY(y, c.apply(op, {x, filter}, "conv"));
  const value& bias = c.input(2);
  if (bias.spec.dims.rank() != 1)
    return errors::invalid_argument("the bias must be a vector of one value per output channel, got ", bias.spec.dims);
  TYPEFLOW_ONNX_TRY(b, reshaped(c, bias, shape{bias.spec.dims[0], 1, 1}, "bias_chw"));
  return c.set(c.apply(ops::add{}, {y, b}));
}

// MaxPool and AveragePool: the pools on the NCHW image as it lies, with ONNX's explicit pads,
// dilations, ceil_mode and count_include_pad.
template <bool Max>
status pool(node_context& c) {
  const value& x = c.input(0);
  if (c.num_outputs() > 1) return errors::unimplemented("the Indices output of MaxPool");
  TYPEFLOW_ONNX_TRY(w, read_window(c, x.spec.dims, std::nullopt));
  TYPEFLOW_ONNX_TRY(ceil_mode, c.attr_int("ceil_mode", 0));
  TYPEFLOW_ONNX_TRY(storage_order, c.attr_int("storage_order", 0));
  if (storage_order != 0) return errors::unimplemented("storage_order 1");
  using Op = std::conditional_t<Max, ops::max_pool2d, ops::avg_pool2d>;
  Op op{};
  op.window_h = w.kh;
  op.window_w = w.kw;
  const ops::padding pad = padding_of(w, ceil_mode != 0);
  set_window(op, w, pad);
  op.ceil_mode = ceil_mode != 0 && pad != ops::padding::same;
  if constexpr (!Max) {
    TYPEFLOW_ONNX_TRY(count_include_pad, c.attr_int("count_include_pad", 0));
    op.count_include_pad = count_include_pad != 0;
  }
  return c.set(c.apply(op, {x}));
}

template <class Reduce>
status global_pool(node_context& c) {
  const std::size_t rank = c.input(0).spec.dims.rank();
  if (rank < 3) return errors::invalid_argument("the input must have rank >= 3, got ", c.input(0).spec.dims);
  int_list axes;
  for (std::size_t i = 2; i < rank; ++i) axes.push_back(static_cast<std::int64_t>(i));
  return c.set(c.apply(Reduce{axes, true}, {c.input(0)}));
}

// Resize (opsets 13 to 17) of NCHW images whose batch and channels it keeps: one resize in layout
// NCHW, mode nearest or linear (bilinear), with the scales or sizes known at import (an empty
// tensor is an absent input). roi and extrapolation_value serve tf_crop_and_resize only and
// cubic_coeff_a cubic only, neither of which is mapped, so they are not read.
inline status resize(node_context& c) {
  const value& x = c.input(0);
  const shape& d = x.spec.dims;
  if (d.rank() != 4)
    return errors::unimplemented("a rank-", d.rank(), " input (typeflow resizes the height and width of NCHW images, "
                                 "rank 4); the input has shape ", d);
  ops::resize op{.format = ops::data_format::nchw};
  TYPEFLOW_ONNX_TRY(mode, c.attr_string("mode", "nearest"));
  if (mode == "nearest") op.method = ops::resize_method::nearest;
  else if (mode == "linear") op.method = ops::resize_method::bilinear;
  else if (mode == "cubic") return errors::unimplemented("mode 'cubic' (typeflow resizes by nearest and linear)");
  else return errors::invalid_argument("mode '", mode, "' is not nearest, linear or cubic");
  TYPEFLOW_ONNX_TRY(transform, c.attr_string("coordinate_transformation_mode", "half_pixel"));
  if (!typeflow::detail::parse_enum_name(transform, op.coordinates))
    return errors::unimplemented("coordinate_transformation_mode '", transform,
                                 "' (half_pixel, pytorch_half_pixel, align_corners and asymmetric are mapped)");
  if (op.method == ops::resize_method::nearest) {
    TYPEFLOW_ONNX_TRY(rounding, c.attr_string("nearest_mode", "round_prefer_floor"));
    if (!typeflow::detail::parse_enum_name(rounding, op.rounding))
      return errors::invalid_argument("nearest_mode '", rounding,
                                      "' is not round_prefer_floor, round_prefer_ceil, floor or ceil");
  }
  TYPEFLOW_ONNX_TRY(exclude_outside, c.attr_int("exclude_outside", 0));
  if (exclude_outside != 0) return errors::unimplemented("exclude_outside ", exclude_outside);
  // Whichever of scales and sizes is present and not empty says how to resize.
  std::vector<double> scales;
  std::vector<std::int64_t> sizes;
  if (c.has_input(2)) {
    TYPEFLOW_ONNX_TRY(t, c.constant_input(2, "scales"));
    scales = double_values(t);
  }
  if (c.has_input(3)) {
    TYPEFLOW_ONNX_TRY(t, c.int_input(3, "sizes"));
    sizes = std::move(t);
  }
  if (scales.empty() == sizes.empty())
    return errors::invalid_argument(scales.empty() ? "neither scales nor sizes is given"
                                                   : "both scales and sizes are given",
                                    "; Resize takes one of them");
  if (!scales.empty()) {
    if (scales.size() != 4) return errors::invalid_argument("scales has ", scales.size(), " values; the input has rank 4");
    for (double s : scales)
      if (!(s > 0) || !std::isfinite(s)) return errors::invalid_argument("scales must be finite and > 0, got ", s);
    if (scales[0] != 1 || scales[1] != 1)
      return errors::unimplemented("scales [", scales[0], ", ", scales[1], ", ", scales[2], ", ", scales[3],
                                   "] resize the batch or the channels (typeflow resizes height and width)");
    op.scale_h = scales[2];
    op.scale_w = scales[3];
  } else {
    if (sizes.size() != 4) return errors::invalid_argument("sizes has ", sizes.size(), " values; the input has rank 4");
    if (d[0] == dyn || d[1] == dyn)
      return errors::unimplemented("sizes with the input's batch or channels unknown at import (input shape ", d,
                                   "): typeflow keeps them, and cannot check that sizes does");
    if (sizes[0] != d[0] || sizes[1] != d[1])
      return errors::unimplemented("sizes [", sizes[0], ", ", sizes[1], ", ", sizes[2], ", ", sizes[3],
                                   "] resize the batch or the channels of input shape ", d,
                                   " (typeflow resizes height and width)");
    if (sizes[2] < 1 || sizes[3] < 1)
      return errors::unimplemented("sizes [", sizes[0], ", ", sizes[1], ", ", sizes[2], ", ", sizes[3],
                                   "] with an empty height or width");
    op.height = sizes[2];
    op.width = sizes[3];
  }
  return c.set(c.apply(op, {x}));
}

// BatchNormalization (inference): per channel (axis 1), (x - mean) / sqrt(var + epsilon) * scale + B.
// With the four parameters known at import, y = x * a + b, a and b folded.
inline status batch_normalization(node_context& c) {
  TYPEFLOW_ONNX_TRY(epsilon, c.attr_float("epsilon", 1e-5));
  TYPEFLOW_ONNX_TRY(training, c.attr_int("training_mode", 0));
  if (training != 0 || c.num_outputs() > 1) return errors::unimplemented("training mode (running mean and variance outputs)");
  const value& x = c.input(0);
  const std::size_t rank = x.spec.dims.rank();
  if (rank < 2) return errors::invalid_argument("the input must have rank >= 2, got ", x.spec.dims);
  for (std::size_t k = 1; k < 5; ++k)
    if (c.input(k).spec.dims.rank() != 1)
      return errors::invalid_argument("input ", k, " must be a vector of one value per channel, got ", c.input(k).spec.dims);
  shape per_channel{c.input(1).spec.dims[0]};
  for (std::size_t i = 2; i < rank; ++i) per_channel.push_back(1);
  const dtype t = x.spec.type;
  if (!is_floating(t)) return errors::invalid_argument("the input must be floating point, got ", t);
  const bool known = c.input(1).constant && c.input(2).constant && c.input(3).constant && c.input(4).constant;
  if (known) {
    const auto scale = double_values(*c.input(1).constant), bias = double_values(*c.input(2).constant),
               mean = double_values(*c.input(3).constant), var = double_values(*c.input(4).constant);
    auto a = tensor::allocate(t, per_channel), b = tensor::allocate(t, per_channel);
    if (!a.ok() || !b.ok()) return a.ok() ? b.status() : a.status();
    visit(t, [&](auto type) {
      using T = typename decltype(type)::type;
      // In the precision ONNX's reference computes in: float, double for f64.
      using acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
      if constexpr (!std::is_integral_v<T>) {
        for (std::size_t i = 0; i < scale.size(); ++i) {
          const acc s = static_cast<acc>(scale[i]) / std::sqrt(static_cast<acc>(var[i]) + static_cast<acc>(epsilon));
          static_cast<T*>(a->data())[i] = static_cast<T>(s);
          static_cast<T*>(b->data())[i] = static_cast<T>(static_cast<acc>(bias[i]) - static_cast<acc>(mean[i]) * s);
        }
      }
    });
    const value av = c.graph().constant(c.name("scale"), std::move(*a));
    const value bv = c.graph().constant(c.name("offset"), std::move(*b));
    TYPEFLOW_ONNX_TRY(scaled, c.apply(ops::mul{}, {x, av}, "scaled"));
    return c.set(c.apply(ops::add{}, {scaled, bv}));
  }
  std::vector<value> p;
  for (std::size_t k = 1; k < 5; ++k) {
    TYPEFLOW_ONNX_TRY(v, reshaped(c, c.input(k), per_channel, detail::cat("param", k).view()));
    p.push_back(std::move(v));
  }
  const value eps = c.graph().scalar(c.name("epsilon"), t, epsilon);
  TYPEFLOW_ONNX_TRY(centered, c.apply(ops::sub{}, {x, p[2]}, "centered"));
  TYPEFLOW_ONNX_TRY(var_eps, c.apply(ops::add{}, {p[3], eps}, "var_eps"));
  TYPEFLOW_ONNX_TRY(stddev, c.apply(ops::sqrt{}, {var_eps}, "stddev"));
  TYPEFLOW_ONNX_TRY(normal, c.apply(ops::div{}, {centered, stddev}, "normalized"));
  TYPEFLOW_ONNX_TRY(scaled, c.apply(ops::mul{}, {normal, p[0]}, "scaled"));
  return c.set(c.apply(ops::add{}, {scaled, p[1]}));
}

// ---- shapes ----

// Reshape: 0 copies the input's dimension (unless allowzero), -1 is inferred.
inline status reshape(node_context& c) {
  const value& x = c.input(0);
  TYPEFLOW_ONNX_TRY(target, c.int_input(1, "shape"));
  TYPEFLOW_ONNX_TRY(allowzero, c.attr_int("allowzero", 0));
  shape to;
  if (target.size() > max_rank) return errors::invalid_argument("shape has ", target.size(), " entries, more than ", max_rank);
  for (std::size_t i = 0; i < target.size(); ++i) {
    std::int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= x.spec.dims.rank())
        return errors::invalid_argument("shape entry ", i, " is 0 (copy the input's dimension) but the input has rank ",
                                        x.spec.dims.rank());
      d = x.spec.dims[i];
    } else if (d < -1) {
      return errors::invalid_argument("shape entry ", i, " is ", d, "; only -1 may be negative");
    }
    to.push_back(d < 0 ? dyn : d);
  }
  TYPEFLOW_ONNX_TRY(t, one_unknown(to, "the target shape"));
  return c.set(c.apply(ops::reshape{t}, {x}));
}

inline status flatten(node_context& c) {
  const shape& d = c.input(0).spec.dims;
  TYPEFLOW_ONNX_TRY(axis_attr, c.attr_int("axis", 1));
  const auto r = static_cast<std::int64_t>(d.rank());
  if (axis_attr < -r || axis_attr > r) return errors::invalid_argument("axis ", axis_attr, " is out of range for rank ", r);
  const std::size_t axis = static_cast<std::size_t>(axis_attr < 0 ? axis_attr + r : axis_attr);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d.rank(); ++i) {
    std::int64_t& part = i < axis ? outer : inner;
    part = (part == dyn || d[i] == dyn) ? dyn : part * d[i];
  }
  TYPEFLOW_ONNX_TRY(to, one_unknown(shape{outer, inner}, "the flattened shape"));
  return c.set(c.apply(ops::reshape{to}, {c.input(0)}));
}

// The axes of Squeeze/Unsqueeze/Reduce*: input 1 from version 13 on (ReduceSum) or an attribute.
inline result<std::optional<std::vector<std::int64_t>>> axes_of(node_context& c, bool as_input) {
  if (as_input) {
    if (!c.has_input(1)) return std::optional<std::vector<std::int64_t>>{};
    auto a = c.int_input(1, "axes");
    if (!a.ok()) return a.status();
    return std::optional<std::vector<std::int64_t>>{std::move(*a)};
  }
  if (c.attribute("axes") == nullptr) return std::optional<std::vector<std::int64_t>>{};
  auto a = c.attr_ints("axes", {});
  if (!a.ok()) return a.status();
  return std::optional<std::vector<std::int64_t>>{std::move(*a)};
}

inline status squeeze(node_context& c) {
  const shape& d = c.input(0).spec.dims;
  TYPEFLOW_ONNX_TRY(axes, axes_of(c, true));
  if (!axes && !d.is_fully_defined())
    return errors::unimplemented("Squeeze without axes of an input with unknown dimensions ", d);
  ops::squeeze op;
  if (axes) {
    if (axes->size() > int_list::capacity) return errors::invalid_argument("axes has ", axes->size(), " entries");
    for (auto a : *axes) op.axes.push_back(a);
  }
  TYPEFLOW_ONNX_TRY(to, op.infer_shape(std::span<const shape>(&d, 1)));
  if (c.input(0).constant) return c.set(reshaped(c, c.input(0), to, ""));
  return c.set(c.apply(op, {c.input(0)}));
}

// Unsqueeze: one expand_dims per axis, in increasing order of the result's axes.
inline status unsqueeze(node_context& c) {
  const shape& d = c.input(0).spec.dims;
  TYPEFLOW_ONNX_TRY(axes, c.int_input(1, "axes"));
  const std::size_t rank = d.rank() + axes.size();
  if (rank > max_rank) return errors::invalid_argument("the result would have rank ", rank, ", more than ", max_rank);
  std::vector<bool> inserted(rank, false);
  for (auto a : axes) {
    TYPEFLOW_ONNX_TRY(i, normalized_axis(a, rank, "axis"));
    if (inserted[i]) return errors::invalid_argument("axis ", a, " is given twice");
    inserted[i] = true;
  }
  if (c.input(0).constant) {
    shape out;
    for (std::size_t i = 0, k = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : d[k++]);
    return c.set(reshaped(c, c.input(0), out, ""));
  }
  value y = c.input(0);
  std::size_t left = axes.size();
  for (std::size_t i = 0; i < rank; ++i) {
    if (!inserted[i]) continue;
    const ops::expand_dims op{static_cast<std::int64_t>(i)};
    if (--left == 0) return c.set(c.apply(op, {y}));
    TYPEFLOW_ONNX_TRY(next, c.apply(op, {y}, detail::cat("axis", i).view()));
    y = std::move(next);
  }
  return c.set(y);  // no axes: the input
}

inline status transpose(node_context& c) {
  const std::size_t rank = c.input(0).spec.dims.rank();
  std::vector<std::int64_t> reversed;
  for (std::size_t i = rank; i-- > 0;) reversed.push_back(static_cast<std::int64_t>(i));
  TYPEFLOW_ONNX_TRY(perm, c.attr_ints("perm", reversed));
  if (perm.size() > int_list::capacity) return errors::invalid_argument("perm has ", perm.size(), " entries");
  int_list p;
  for (auto i : perm) p.push_back(i);
  return c.set(c.apply(ops::transpose{p}, {c.input(0)}));
}

inline status concat(node_context& c) {
  TYPEFLOW_ONNX_TRY(axis, c.attr_int("axis", 0));
  std::vector<value> in;
  for (std::size_t k = 0; k < c.num_inputs(); ++k) in.push_back(c.input(k));
  return c.set(c.apply(ops::concat{axis}, std::span<const value>(in)));
}

// Split into equal parts (the `split` input absent, or all its sizes equal); otherwise slices.
inline status split(node_context& c) {
  const value& x = c.input(0);
  TYPEFLOW_ONNX_TRY(axis_attr, c.attr_int("axis", 0));
  TYPEFLOW_ONNX_TRY(axis, normalized_axis(axis_attr, x.spec.dims.rank(), "axis"));
  const auto parts = static_cast<std::int64_t>(c.node().output_size());
  std::vector<std::int64_t> sizes;
  if (c.has_input(1)) {
    TYPEFLOW_ONNX_TRY(s, c.int_input(1, "split"));
    sizes = std::move(s);
    if (static_cast<std::int64_t>(sizes.size()) != parts)
      return errors::invalid_argument("split has ", sizes.size(), " sizes for ", parts, " outputs");
  }
  const std::int64_t n = x.spec.dims[static_cast<std::size_t>(axis)];
  std::int64_t covered = 0;
  for (auto size : sizes) {
    if (size < 0) return errors::invalid_argument("split sizes must be >= 0, got ", size);
    covered += size;
  }
  if (!sizes.empty() && n != dyn && covered != n)
    return errors::invalid_argument("split sizes add up to ", covered, "; axis ", axis, " of input shape ", x.spec.dims,
                                    " has ", n);
  const bool equal = sizes.empty() || std::all_of(sizes.begin(), sizes.end(), [&](auto s) { return s == sizes[0]; });
  if (equal) {
    auto out = c.graph().apply(ops::split{axis, parts}, parts == 1 ? c.name() : c.name("split"), std::span<const value>(&x, 1));
    if (!out.ok()) return out.status();
    for (auto& v : *out) c.outputs().push_back(std::move(v));
    return ok_status();
  }
  const std::size_t rank = x.spec.dims.rank();
  std::int64_t begin = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    ops::slice s;
    for (std::size_t i = 0; i < rank; ++i) {
      s.begin.push_back(static_cast<std::int64_t>(i) == axis ? begin : 0);
      s.size.push_back(static_cast<std::int64_t>(i) == axis ? sizes[k] : -1);
    }
    begin += sizes[k];
    TYPEFLOW_ONNX_TRY(v, c.graph().apply1(s, c.node().output(static_cast<int>(k)), std::span<const value>(&x, 1)));
    c.outputs().push_back(std::move(v));
  }
  return ok_status();
}

// Slice: ONNX's bounds resolved at import where the dimension is known (a strict slice); where it
// is not, the slice clamps at run time as ONNX does, which is exact for bounds from 0 up (positive
// steps) and for bounds that run to the end (an end of at least 2^31 - 1, or at most -(2^31 - 1)
// with a negative step, as exporters write "to the end"; exact for dimensions below 2^31 - 1);
// other bounds on such a dimension are unimplemented.
inline status slice(node_context& c) {
  const value& x = c.input(0);
  const shape& d = x.spec.dims;
  TYPEFLOW_ONNX_TRY(starts, c.int_input(1, "starts"));
  TYPEFLOW_ONNX_TRY(ends, c.int_input(2, "ends"));
  std::vector<std::int64_t> axes, steps(starts.size(), 1);
  for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (c.has_input(3)) { TYPEFLOW_ONNX_TRY(a, c.int_input(3, "axes")); axes = std::move(a); }
  if (c.has_input(4)) { TYPEFLOW_ONNX_TRY(s, c.int_input(4, "steps")); steps = std::move(s); }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return errors::invalid_argument("starts, ends, axes and steps must have the same length, got ", starts.size(), ", ",
                                    ends.size(), ", ", axes.size(), " and ", steps.size());
  constexpr std::int64_t to_end = std::numeric_limits<std::int32_t>::max();
  ops::slice s;
  bool strided = false;
  for (std::size_t i = 0; i < d.rank(); ++i) { s.begin.push_back(0); s.size.push_back(-1); s.strides.push_back(1); }
  std::vector<bool> seen(d.rank(), false);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    TYPEFLOW_ONNX_TRY(a, normalized_axis(axes[k], d.rank(), "axis"));
    if (seen[a]) return errors::invalid_argument("axis ", axes[k], " is given twice");
    seen[a] = true;
    const std::int64_t n = d[a];
    if (steps[k] == 0) return errors::invalid_argument("step 0 on axis ", axes[k]);
    // A step beyond any dimension takes one element, as max_num_elements does.
    const std::int64_t step = std::clamp(steps[k], -max_num_elements, max_num_elements);
    std::int64_t b = starts[k], e = ends[k];
    s.strides[a] = step;
    strided = strided || step != 1;
    if (n == dyn) {
      s.clamp = true;
      s.begin[a] = b;
      if (step > 0 ? e >= to_end : e <= -to_end) continue;  // size -1: to the end
      if (step > 0 && b >= 0 && e >= 0) {
        s.size[a] = e <= b ? 0 : (e - b - 1) / step + 1;
        continue;
      }
      return errors::unimplemented("bounds [", b, ", ", e, ") in steps of ", step, " on axis ", axes[k],
                                   " whose size is unknown at import");
    }
    if (b < 0) b = std::max<std::int64_t>(b, -n) + n;
    if (e < 0) e = std::max<std::int64_t>(e, -n - 1) + n;
    std::int64_t count = 0;
    if (step > 0) {
      b = std::min(b, n);
      e = std::min(e, n);
      count = e > b ? (e - b - 1) / step + 1 : 0;
    } else {
      b = n == 0 ? 0 : std::min(b, n - 1);
      e = std::min(e, n - 1);
      count = n > 0 && b > e ? (b - e - 1) / -step + 1 : 0;
    }
    s.begin[a] = b;
    s.size[a] = count;
  }
  if (!strided) s.strides = {};
  return c.set(c.apply(s, {x}));
}

// Gather: the kernel reads negative indices from the end, as ONNX does.
inline status gather(node_context& c) {
  TYPEFLOW_ONNX_TRY(axis, c.attr_int("axis", 0));
  return c.set(c.apply(ops::gather{axis}, {c.input(0), c.input(1)}));
}

// Pad (constant mode): pads are all the begins, then all the ends.
inline status pad(node_context& c) {
  TYPEFLOW_ONNX_TRY(mode_name, c.attr_string("mode", "constant"));
  ops::pad_mode mode{};
  if (mode_name == "constant") mode = ops::pad_mode::constant;
  else if (mode_name == "reflect") mode = ops::pad_mode::reflect;
  else if (mode_name == "edge") mode = ops::pad_mode::edge;
  else return errors::unimplemented("mode '", mode_name, "' (constant, reflect and edge are mapped)");
  const std::size_t rank = c.input(0).spec.dims.rank();
  TYPEFLOW_ONNX_TRY(pads, c.int_input(1, "pads"));
  if (c.has_input(3)) return errors::unimplemented("the axes input");
  if (pads.size() != 2 * rank) return errors::invalid_argument("pads has ", pads.size(), " entries; the input has rank ", rank);
  double fill = 0;
  if (c.has_input(2)) {
    TYPEFLOW_ONNX_TRY(v, c.constant_input(2, "constant_value"));
    if (v.num_elements() != 1) return errors::invalid_argument("constant_value must hold one value");
    fill = double_values(v)[0];
  }
  int_list p;
  for (std::size_t i = 0; i < rank; ++i) {
    if (pads[i] < 0 || pads[rank + i] < 0) return errors::unimplemented("negative pads (cropping)");
    p.push_back(pads[i]);
    p.push_back(pads[rank + i]);
  }
  return c.set(c.apply(ops::pad{p, fill, mode}, {c.input(0)}));
}

// ---- reductions ----

template <class Reduce>
status reduce(node_context& c) {
  // ReduceSum takes its axes as an input from version 13; the others as an attribute until 18.
  const bool as_input = std::is_same_v<Reduce, ops::reduce_sum> && c.version() >= 13;
  TYPEFLOW_ONNX_TRY(axes, axes_of(c, as_input));
  TYPEFLOW_ONNX_TRY(keepdims, c.attr_int("keepdims", 1));
  TYPEFLOW_ONNX_TRY(noop, c.attr_int("noop_with_empty_axes", 0));
  const std::size_t rank = c.input(0).spec.dims.rank();
  if ((!axes || axes->empty()) && noop) return c.set(c.apply(ops::identity{}, {c.input(0)}));
  int_list list;
  if (axes && axes->size() > int_list::capacity) return errors::invalid_argument("too many axes");
  if (axes && !axes->empty())
    for (auto a : *axes) list.push_back(a);
  else
    for (std::size_t i = 0; i < rank; ++i) list.push_back(static_cast<std::int64_t>(i));
  return c.set(c.apply(Reduce{list, keepdims != 0}, {c.input(0)}));
}

inline status argmax(node_context& c) {
  TYPEFLOW_ONNX_TRY(axis, c.attr_int("axis", 0));
  TYPEFLOW_ONNX_TRY(keepdims, c.attr_int("keepdims", 1));
  TYPEFLOW_ONNX_TRY(last, c.attr_int("select_last_index", 0));
  const ops::argmax op{axis, last != 0};
  if (!keepdims) return c.set(c.apply(op, {c.input(0)}));
  TYPEFLOW_ONNX_TRY(y, c.apply(op, {c.input(0)}, "argmax"));
  const shape& d = c.input(0).spec.dims;
  TYPEFLOW_ONNX_TRY(a, normalized_axis(axis, d.rank(), "axis"));
  shape out = d;
  out[static_cast<std::size_t>(a)] = 1;
  TYPEFLOW_ONNX_TRY(to, one_unknown(out, "the result"));
  return c.set(c.apply(ops::reshape{to}, {y}));
}

inline status top_k(node_context& c) {
  TYPEFLOW_ONNX_TRY(k, c.int_input(1, "K"));
  if (k.size() != 1) return errors::invalid_argument("K must hold one value");
  TYPEFLOW_ONNX_TRY(axis, c.attr_int("axis", -1));
  TYPEFLOW_ONNX_TRY(largest, c.attr_int("largest", 1));
  TYPEFLOW_ONNX_TRY(sorted, c.attr_int("sorted", 1));
  const std::size_t rank = c.input(0).spec.dims.rank();
  TYPEFLOW_ONNX_TRY(a, normalized_axis(axis, rank, "axis"));
  if (static_cast<std::size_t>(a) != rank - 1) return errors::unimplemented("axis ", axis, " other than the last");
  if (!largest) return errors::unimplemented("largest 0 (the smallest values)");
  auto out = c.graph().apply(ops::top_k{k[0], sorted != 0}, c.name("top_k"), std::span<const value>(&c.input(0), 1));
  if (!out.ok()) return out.status();
  for (auto& v : *out) c.outputs().push_back(std::move(v));
  return ok_status();
}

// ---- constants ----

inline status constant(node_context& c) {
  if (c.node().attribute_size() != 1) return errors::invalid_argument("Constant needs exactly one attribute");
  const auto& a = c.node().attribute(0);
  tensor t;
  if (a.name() == "value") {
    auto v = from_onnx_tensor(a.t(), "attribute 'value'");
    if (!v.ok()) return v.status();
    t = std::move(*v);
  } else if (a.name() == "value_float" || a.name() == "value_int") {
    auto v = a.name() == "value_float" ? tensor::scalar(a.f()) : tensor::scalar(static_cast<std::int64_t>(a.i()));
    if (!v.ok()) return v.status();
    t = std::move(*v);
  } else if (a.name() == "value_floats" || a.name() == "value_ints") {
    const bool f = a.name() == "value_floats";
    auto v = tensor::allocate(f ? dtype::f32 : dtype::i64, shape{f ? a.floats_size() : a.ints_size()});
    if (!v.ok()) return v.status();
    for (int i = 0; i < (f ? a.floats_size() : a.ints_size()); ++i) {
      if (f) static_cast<float*>(v->data())[i] = a.floats(i);
      else static_cast<std::int64_t*>(v->data())[i] = a.ints(i);
    }
    t = std::move(*v);
  } else {
    return errors::unimplemented("attribute '", a.name(), "' (sparse and string constants)");
  }
  return c.set(c.graph().constant(c.name(), std::move(t)));
}

inline status dropout(node_context& c) {
  if (c.has_input(2)) {
    TYPEFLOW_ONNX_TRY(training, c.constant_input(2, "training_mode"));
    if (training.num_elements() != 1 || double_values(training)[0] != 0) return errors::unimplemented("training mode");
  }
  if (c.num_outputs() > 1) return errors::unimplemented("the mask output");
  return identity(c);
}

// ---- ops with attributes from inputs, and shapes known at import ----

template <class Op>
status unary_attr_alpha(node_context& c, double fallback) {
  TYPEFLOW_ONNX_TRY(alpha, c.attr_float("alpha", fallback));
  return c.set(c.apply(Op{alpha}, {c.input(0)}));
}
inline status leaky_relu(node_context& c) { return unary_attr_alpha<ops::leaky_relu>(c, 0.01); }

inline status hard_sigmoid(node_context& c) {
  TYPEFLOW_ONNX_TRY(alpha, c.attr_float("alpha", 0.2));
  TYPEFLOW_ONNX_TRY(beta, c.attr_float("beta", 0.5));
  return c.set(c.apply(ops::hard_sigmoid{alpha, beta}, {c.input(0)}));
}

// Clip: min and max are optional inputs (known at import); absent, they clip nothing.
inline status clip(node_context& c) {
  ops::clip op;
  for (std::size_t k : {std::size_t{1}, std::size_t{2}}) {
    if (!c.has_input(k)) continue;
    TYPEFLOW_ONNX_TRY(bound, c.constant_input(k, k == 1 ? "min" : "max"));
    if (bound.num_elements() != 1) return errors::invalid_argument("input ", k, " must hold one value");
    (k == 1 ? op.min : op.max) = double_values(bound)[0];
  }
  return c.set(c.apply(op, {c.input(0)}));
}

inline status where(node_context& c) { return c.set(c.apply(ops::where{}, {c.input(0), c.input(1), c.input(2)})); }

inline result<shape> shape_input(node_context& c, std::size_t k) {
  auto dims = c.int_input(k, "shape");
  if (!dims.ok()) return dims.status();
  for (auto d : *dims)
    if (d < 0) return errors::invalid_argument("shape entries must be >= 0, got ", d);
  auto s = shape::from_span(*dims);
  if (!s.ok()) return s.status().with_context("input 1 (shape)");
  return s;
}

inline status expand(node_context& c) {
  TYPEFLOW_ONNX_TRY(to, shape_input(c, 1));
  return c.set(c.apply(ops::broadcast_to{to}, {c.input(0)}));
}

// LayerNormalization (opset 17), with its optional Mean and InvStdDev outputs.
inline status layer_normalization(node_context& c) {
  TYPEFLOW_ONNX_TRY(axis, c.attr_int("axis", -1));
  TYPEFLOW_ONNX_TRY(epsilon, c.attr_float("epsilon", 1e-5));
  TYPEFLOW_ONNX_TRY(stash, c.attr_int("stash_type", 1));
  if (stash != 1) return errors::unimplemented("stash_type ", stash, " (statistics are computed in float)");
  const value& x = c.input(0);
  TYPEFLOW_ONNX_TRY(a, normalized_axis(axis, x.spec.dims.rank(), "axis"));
  shape normalized;
  for (std::size_t i = static_cast<std::size_t>(a); i < x.spec.dims.rank(); ++i) normalized.push_back(x.spec.dims[i]);
  // Scale and bias broadcast to the normalized dimensions; a missing bias is zeros.
  const auto fit = [&](const value& v, std::string_view suffix) -> result<value> {
    if (v.spec.dims == normalized) return v;
    if (!normalized.is_fully_defined())
      return errors::unimplemented("a scale or bias of shape ", v.spec.dims, " broadcast to dimensions ", normalized,
                                   " unknown at import");
    return c.apply(ops::broadcast_to{normalized}, {v}, suffix);
  };
  TYPEFLOW_ONNX_TRY(scale, fit(c.input(1), "scale"));
  value bias;
  if (c.has_input(2)) {
    TYPEFLOW_ONNX_TRY(b, fit(c.input(2), "bias"));
    bias = std::move(b);
  } else {
    if (!normalized.is_fully_defined()) return errors::unimplemented("no bias, with dimensions ", normalized, " unknown at import");
    auto zeros = tensor::allocate(x.spec.type, normalized);
    if (!zeros.ok()) return zeros.status();
    std::memset(zeros->data(), 0, zeros->bytes());
    bias = c.graph().constant(c.name("bias"), std::move(*zeros));
  }
  if (auto st = c.set(c.apply(ops::layer_norm{axis, epsilon}, {x, scale, bias})); !st.ok()) return st;
  if (c.num_outputs() == 1) return ok_status();
  // Mean and InvStdDev, in float, with the normalized dimensions kept as 1s: computed by their
  // own nodes, which a session runs only when they are fetched or read.
  value xf = x;
  if (x.spec.type != dtype::f32) {
    TYPEFLOW_ONNX_TRY(cast, c.apply(ops::cast{dtype::f32}, {x}, "x_float"));
    xf = std::move(cast);
  }
  int_list axes;
  for (std::size_t i = static_cast<std::size_t>(a); i < x.spec.dims.rank(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  const auto output_name = [&](int k) { return c.node().output(k); };
  TYPEFLOW_ONNX_TRY(mean, c.graph().apply1(ops::reduce_mean{axes, true}, output_name(1), std::span<const value>(&xf, 1)));
  c.outputs().push_back(mean);
  if (c.num_outputs() < 3) return ok_status();
  TYPEFLOW_ONNX_TRY(centered, c.apply(ops::sub{}, {xf, mean}, "centered"));
  TYPEFLOW_ONNX_TRY(squared, c.apply(ops::square{}, {centered}, "squared"));
  TYPEFLOW_ONNX_TRY(variance, c.apply(ops::reduce_mean{axes, true}, {squared}, "variance"));
  const value eps = c.graph().scalar(c.name("epsilon"), dtype::f32, epsilon);
  TYPEFLOW_ONNX_TRY(shifted, c.apply(ops::add{}, {variance, eps}, "variance_epsilon"));
  TYPEFLOW_ONNX_TRY(inv, c.graph().apply1(ops::rsqrt{}, output_name(2), std::span<const value>(&shifted, 1)));
  c.outputs().push_back(inv);
  return ok_status();
}

// Shape and Size: constants, from the input's spec, when the dimensions are known at import.
inline status shape_of(node_context& c) {
  const shape& d = c.input(0).spec.dims;
  const auto r = static_cast<std::int64_t>(d.rank());
  TYPEFLOW_ONNX_TRY(start_attr, c.attr_int("start", 0));
  TYPEFLOW_ONNX_TRY(end_attr, c.attr_int("end", r));
  const std::int64_t start = std::clamp<std::int64_t>(start_attr < 0 ? start_attr + r : start_attr, 0, r);
  const std::int64_t end = std::clamp<std::int64_t>(end_attr < 0 ? end_attr + r : end_attr, 0, r);
  std::vector<std::int64_t> dims;
  for (std::int64_t i = start; i < end; ++i) {
    if (d[static_cast<std::size_t>(i)] == dyn)
      return errors::unimplemented("dimension ", i, " of input shape ", d, " is unknown at import (typeflow folds Shape "
                                   "to a constant)");
    dims.push_back(d[static_cast<std::size_t>(i)]);
  }
  auto t = tensor::from_values<std::int64_t>(std::span<const std::int64_t>(dims), shape{static_cast<std::int64_t>(dims.size())});
  if (!t.ok()) return t.status();
  return c.set(c.graph().constant(c.name(), std::move(*t)));
}

inline status size_of_input(node_context& c) {
  const shape& d = c.input(0).spec.dims;
  const std::int64_t n = ops::detail::known_num_elements(d);
  if (n == dyn) return errors::unimplemented("the element count of input shape ", d, " is unknown at import (typeflow folds "
                                             "Size to a constant)");
  auto t = tensor::scalar<std::int64_t>(n);
  if (!t.ok()) return t.status();
  return c.set(c.graph().constant(c.name(), std::move(*t)));
}

// ConstantOfShape: a fill of the value attribute's one element (f32 0 by default).
inline status constant_of_shape(node_context& c) {
  TYPEFLOW_ONNX_TRY(dims, shape_input(c, 0));
  ops::fill op{dims, 0.0, dtype::f32};
  if (const auto* a = c.attribute("value")) {
    auto v = from_onnx_tensor(a->t(), "attribute 'value'");
    if (!v.ok()) return v.status();
    if (v->num_elements() != 1) return errors::invalid_argument("attribute 'value' must hold one element");
    op.type = v->dtype();
    op.value = double_values(*v)[0];
  }
  return c.set(c.apply(op, std::span<const value>{}));
}

inline constexpr std::int64_t max_range_elements = std::int64_t{1} << 24;

// Range: start, limit and delta known at import; the values are computed here, as ONNX defines
// them (n = max(ceil((limit - start) / delta), 0), start + i * delta in the inputs' dtype).
inline status range(node_context& c) {
  TYPEFLOW_ONNX_TRY(start, c.constant_input(0, "start"));
  TYPEFLOW_ONNX_TRY(limit, c.constant_input(1, "limit"));
  TYPEFLOW_ONNX_TRY(delta, c.constant_input(2, "delta"));
  const dtype t = start.dtype();
  if (start.num_elements() != 1 || limit.num_elements() != 1 || delta.num_elements() != 1)
    return errors::invalid_argument("start, limit and delta must be scalars");
  const double s = double_values(start)[0], l = double_values(limit)[0], d = double_values(delta)[0];
  if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
    return errors::invalid_argument("range ", s, " to ", l, " by ", d, " is not finite");
  const double count = std::max(std::ceil((l - s) / d), 0.0);
  // The values are written into the graph as a const node: a bound keeps that reasonable.
  if (count > static_cast<double>(max_range_elements))
    return errors::unimplemented("a Range of ", count, " elements; typeflow computes Range at import, up to ",
                                 max_range_elements, " elements");
  auto out = tensor::allocate(t, shape{static_cast<std::int64_t>(count)});
  if (!out.ok()) return out.status();
  visit(t, [&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T first = *static_cast<const T*>(start.data()), step = *static_cast<const T*>(delta.data());
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i)
        static_cast<T*>(out->data())[i] = static_cast<T>(first + static_cast<T>(i) * step);
    }
  });
  return c.set(c.graph().constant(c.name(), std::move(*out)));
}

// The converters by ONNX op type (the default domain).
inline const std::unordered_map<std::string_view, converter>& converters() {
  static const std::unordered_map<std::string_view, converter> table{
      {"Abs", unary<ops::abs>},         {"Neg", unary<ops::neg>},           {"Exp", unary<ops::exp>},
      {"Log", unary<ops::log>},         {"Sqrt", unary<ops::sqrt>},         {"Tanh", unary<ops::tanh>},
      {"Sigmoid", unary<ops::sigmoid>}, {"Relu", unary<ops::relu>},         {"Softplus", unary<ops::softplus>},
      {"Identity", identity},           {"Reciprocal", reciprocal},         {"Cast", cast},
      {"Add", binary<ops::add>},        {"Sub", binary<ops::sub>},          {"Mul", binary<ops::mul>},
      {"Div", binary<ops::div>},        {"Pow", power},                     {"Equal", binary<ops::equal>},
      {"Less", binary<ops::less>},      {"Greater", binary<ops::greater>},  {"Max", variadic<ops::maximum>},
      {"Min", variadic<ops::minimum>},  {"Sum", variadic<ops::add>},        {"Mean", variadic<ops::add, true>},
      {"MatMul", matmul},               {"Gemm", gemm},                     {"Conv", conv},
      {"MaxPool", pool<true>},          {"AveragePool", pool<false>},       {"GlobalAveragePool", global_pool<ops::reduce_mean>},
      {"GlobalMaxPool", global_pool<ops::reduce_max>},                      {"BatchNormalization", batch_normalization},
      {"Softmax", softmax<false>},      {"LogSoftmax", softmax<true>},      {"Reshape", reshape},
      {"Flatten", flatten},             {"Squeeze", squeeze},               {"Unsqueeze", unsqueeze},
      {"Transpose", transpose},         {"Concat", concat},                 {"Split", split},
      {"Slice", slice},                 {"Gather", gather},                 {"Pad", pad},
      {"ReduceSum", reduce<ops::reduce_sum>},   {"ReduceMean", reduce<ops::reduce_mean>},
      {"ReduceMax", reduce<ops::reduce_max>},   {"ReduceMin", reduce<ops::reduce_min>},
      {"ReduceProd", reduce<ops::reduce_prod>}, {"ArgMax", argmax},         {"TopK", top_k},
      {"Constant", constant},           {"Dropout", dropout},               {"Erf", unary<ops::erf>},
      {"LeakyRelu", leaky_relu},        {"HardSigmoid", hard_sigmoid},      {"Clip", clip},
      {"Where", where},                 {"Expand", expand},                 {"LayerNormalization", layer_normalization},
      {"Shape", shape_of},              {"Size", size_of_input},            {"ConstantOfShape", constant_of_shape},
      {"Range", range},                 {"Resize", resize},
  };
  return table;
}

#undef TYPEFLOW_ONNX_TRY

}  // namespace typeflow::detail::onnx_import
