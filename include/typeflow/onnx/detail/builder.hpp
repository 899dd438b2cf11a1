// SPDX-License-Identifier: Apache-2.0
// How the ONNX importer writes a graph_def: each ONNX value is a `value` (the typeflow tensor that
// holds it, its spec, and its contents when known at import: initializers, Constant nodes and what
// is folded from them). `builder::apply` adds one typeflow node for an op value, inferring its
// outputs' specs with the op's own inference (the error is the op's message), so that converters
// can decide on shapes as they go, as the runtime graph will.
#pragma once

#include <typeflow/core/detail/internal_header_check.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/graph/graph_def.hpp>
#include <typeflow/ops/attributes.hpp>
#include <typeflow/ops/op.hpp>

namespace typeflow::detail::onnx_import {

struct value {
  std::string ref;                 // the typeflow tensor: "node" or "node:k"; "" for a constant no node reads yet
  tensor_spec spec;
  std::optional<tensor> constant;  // the contents, when known at import
  std::string hint;                // the name of its const node when one is made
};

// A typeflow node name for an ONNX name: every character the text format does not read in a name
// (it reads ASCII letters, digits, _ . / -) becomes '_', so the graph can be written and read back.
inline std::string sanitize(std::string_view onnx_name) {
  std::string s(onnx_name);
  for (char& c : s) {
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '.' || c == '/' || c == '-';
    if (!kept) c = '_';
  }
  if (s.empty()) s = "_";
  return s;
}

// The values of a constant integer tensor (i32 or i64) as int64.
inline std::vector<std::int64_t> int_values(const tensor& t) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(t.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == dtype::i32 ? static_cast<const std::int32_t*>(t.data())[i]
                                   : static_cast<const std::int64_t*>(t.data())[i];
  return v;
}

// The elements of a constant as doubles (every dtype).
inline std::vector<double> double_values(const tensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.num_elements()));
  visit(t.dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<const T*>(t.data())[i]);
  });
  return v;
}

// `t` with its dimensions permuted (y.shape[i] = x.shape[perm[i]]), on the host.
inline result<tensor> transpose_constant(const tensor& t, std::span<const std::size_t> perm) {
  const shape& in = t.shape();
  shape out;
  for (std::size_t p : perm) out.push_back(in[p]);
  auto y = tensor::allocate(t.dtype(), out);
  if (!y.ok()) return y;
  const std::size_t rank = in.rank(), width = size_of(t.dtype());
  std::vector<std::int64_t> in_stride(rank, 1);
  for (std::size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * in[i];
  std::vector<std::int64_t> index(rank, 0);
  const auto* src = static_cast<const unsigned char*>(t.data());
  auto* dst = static_cast<unsigned char*>(y->data());
  for (std::int64_t k = 0; k < y->num_elements(); ++k) {
    std::int64_t from = 0;
    for (std::size_t i = 0; i < rank; ++i) from += index[i] * in_stride[perm[i]];
    std::memcpy(dst + k * width, src + from * width, width);
    for (std::size_t i = rank; i-- > 0;) {
      if (++index[i] < out[i]) break;
      index[i] = 0;
    }
  }
  return y;
}

class builder {
 public:
  graph_def def;

  // A node name made from `base` that no other node has.
  std::string fresh_name(std::string_view base) {
    std::string name = sanitize(base);
    for (int k = 1; !used_.insert(name).second; ++k) name = detail::cat(sanitize(base), "_", k).str();
    return name;
  }
  // Reserves a name (a graph input's or output's) so that no helper node takes it.
  bool reserve(const std::string& name) { return used_.insert(name).second; }

  // A value known at import; its const node is written when a node reads it (materialize), so
  // what is only read at import (a shape, axes) leaves nothing in the graph.
  value constant(std::string_view base, tensor t) {
    const tensor_spec spec = t.spec();
    return value{"", spec, std::move(t), std::string(base)};
  }

  // Gives a constant its const node (once, however many copies of the value there are).
  const std::string& materialize(value& v) {
    if (!v.ref.empty()) return v.ref;
    const std::string key = detail::cat(v.hint, "@", reinterpret_cast<std::uintptr_t>(v.constant->data())).str();
    if (auto it = made_.find(key); it != made_.end()) return v.ref = it->second;
    v.ref = write_const(v.hint, *v.constant);
    made_.emplace(key, v.ref);
    return v.ref;
  }

 private:
  std::string write_const(std::string_view base, const tensor& t) {
    node_def n;
    n.name = fresh_name(base);
    n.op = "const";
    n.attrs.set("dtype", attr_value(t.dtype()));
    n.attrs.set("shape", attr_value(t.shape()));
    if (is_floating(t.dtype())) {
      n.attrs.set("value", attr_value(double_values(t)));
    } else {
      std::vector<std::int64_t> v(static_cast<std::size_t>(t.num_elements()));
      visit(t.dtype(), [&](auto type) {
        using T = typename decltype(type)::type;
        if constexpr (!std::is_floating_point_v<T> && !std::is_same_v<T, Eigen::half> && !std::is_same_v<T, Eigen::bfloat16>)
          for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(static_cast<const T*>(t.data())[i]);
      });
      n.attrs.set("value", attr_value(std::move(v)));
    }
    std::string name = n.name;
    def.nodes.push_back(std::move(n));
    return name;
  }

 public:

  // A scalar constant of dtype d.
  value scalar(std::string_view base, dtype d, double x) {
    auto t = tensor::allocate(d, shape{});
    visit(d, [&](auto type) {
      using T = typename decltype(type)::type;
      *static_cast<T*>(t->data()) = ops::detail::convert_value<T>(x);
    });
    return constant(base, std::move(*t));
  }

  // Node `name` running op on inputs `in`: one value per output of the op.
  template <class Op>
  result<std::vector<value>> apply(const Op& op, std::string_view name, std::span<const value> in) {
    std::vector<tensor_spec> specs;
    for (const value& v : in) specs.push_back(v.spec);
    std::vector<std::string> refs;
    for (value v : in) refs.push_back(materialize(v));
    std::vector<value> out;
    const std::size_t outputs = num_outputs_of(op);
    node_def n;
    n.name = fresh_name(name);
    for (std::size_t k = 0; k < outputs; ++k) {
      auto spec = typeflow::infer(op, std::span<const tensor_spec>(specs), k);
      if (!spec.ok()) return spec.status();
      out.push_back(value{outputs == 1 ? n.name : detail::cat(n.name, ":", k).str(), *spec, std::nullopt, {}});
    }
    n.op = std::string(Op::name);
    n.inputs = std::move(refs);
    n.attrs = to_attrs(op);
    def.nodes.push_back(std::move(n));
    return out;
  }

  template <class Op>
  result<value> apply1(const Op& op, std::string_view name, std::span<const value> in) {
    auto out = apply(op, name, in);
    if (!out.ok()) return out.status();
    return std::move((*out)[0]);
  }
  template <class Op>
  result<value> apply1(const Op& op, std::string_view name, std::initializer_list<value> in) {
    return apply1(op, name, std::span<const value>(in.begin(), in.size()));
  }

 private:
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, std::string> made_;
};

}  // namespace typeflow::detail::onnx_import
