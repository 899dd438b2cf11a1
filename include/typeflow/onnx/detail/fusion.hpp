// SPDX-License-Identifier: Apache-2.0
// Patterns of ONNX nodes the importer maps to one typeflow op, as ONNX Runtime's graph
// transformers do (its GeluFusion): the exact GELU that exporters write out with Erf,
//   y = Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5)
// with every Mul and the Add in either operand order, the 0.5 applied to x first
// (Mul(Mul(x, 0.5), Add(...))), and Div by √2 written as Mul by 1/√2. Each inner value must be
// read by the next node of the pattern only (not by another node, not a graph output), and the
// constants must be scalars (initializers or Constant nodes) within 1e-6 of their values.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include <typeflow/onnx/detail/builder.hpp>
#include <typeflow/onnx/tensor_proto.hpp>

namespace typeflow::detail::onnx_import {

// The nodes patterns replace: each root (by index in the graph) is imported as the fused op of
// its input; absorbed nodes are not imported.
struct fused_patterns {
  std::unordered_map<int, std::string> gelu_roots;  // the root's index -> x
  std::unordered_set<int> absorbed;
};

// Who makes and who reads each value of an ONNX graph, and its scalar constants.
class graph_index {
 public:
  explicit graph_index(const ::onnx::GraphProto& g) : g_(g) {
    for (const auto& init : g.initializer()) scalar_from(init.name(), init);
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      for (const auto& in : n.input()) readers_[in].push_back(i);
      for (const auto& out : n.output()) producer_[out] = i;
      if (n.op_type() == "Constant" && n.output_size() == 1)
        for (const auto& a : n.attribute()) {
          if (a.name() == "value" && a.has_t()) scalar_from(n.output(0), a.t());
          if (a.name() == "value_float") scalars_[n.output(0)] = a.f();
        }
    }
    for (const auto& in : g.input()) scalars_.erase(in.name());  // fed at run time may replace it
    for (const auto& out : g.output()) readers_[out.name()].push_back(-1);
  }

  // The node of op type `op` that makes `value`, when `value` is read only by one node.
  const ::onnx::NodeProto* producer(const std::string& value, std::string_view op) const {
    const auto p = producer_.find(value);
    if (p == producer_.end() || g_.node(p->second).op_type() != op || !read_once(value)) return nullptr;
    return &g_.node(p->second);
  }
  int producer_index(const std::string& value) const { return producer_.at(value); }

  // The one node that reads `value`, when it is of op type `op`; -1 otherwise.
  int only_reader(const std::string& value, std::string_view op) const {
    if (!read_once(value)) return -1;
    const int r = readers_.at(value).front();
    return r >= 0 && g_.node(r).op_type() == op ? r : -1;
  }

  // Whether `value` is a scalar constant within 1e-6 (relative) of `target`.
  bool is_scalar(const std::string& value, double target) const {
    const auto s = scalars_.find(value);
    return s != scalars_.end() && std::abs(s->second - target) <= 1e-6 * std::abs(target);
  }

  // The other input of a two-input node whose one input is `one`; nullopt when neither is.
  static std::optional<std::string> other_input(const ::onnx::NodeProto& n, const std::string& one) {
    if (n.input_size() != 2) return std::nullopt;
    if (n.input(0) == one) return n.input(1);
    if (n.input(1) == one) return n.input(0);
    return std::nullopt;
  }

 private:
  bool read_once(const std::string& value) const {
    const auto r = readers_.find(value);
    return r != readers_.end() && r->second.size() == 1;
  }
  void scalar_from(const std::string& name, const ::onnx::TensorProto& p) {
    auto t = from_onnx_tensor(p, "a constant");
    if (!t.ok() || t->num_elements() != 1 || !is_floating(t->dtype())) return;
    scalars_[name] = double_values(*t)[0];
  }

  const ::onnx::GraphProto& g_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> readers_;  // -1: a graph output
  std::unordered_map<std::string, double> scalars_;
};

inline fused_patterns find_fused_patterns(const ::onnx::GraphProto& g) {
  fused_patterns out;
  const graph_index index(g);
  const double sqrt2 = std::sqrt(2.0);
  for (int e = 0; e < g.node_size(); ++e) {
    const auto& erf = g.node(e);
    if (erf.op_type() != "Erf" || erf.input_size() != 1 || erf.output_size() != 1) continue;
    // x / √2, or x * (1 / √2)
    std::optional<std::string> x;
    if (const auto* div = index.producer(erf.input(0), "Div"); div && div->input_size() == 2 && index.is_scalar(div->input(1), sqrt2))
      x = div->input(0);
    if (const auto* mul = index.producer(erf.input(0), "Mul"); mul && mul->input_size() == 2) {
      if (index.is_scalar(mul->input(1), 1 / sqrt2)) x = mul->input(0);
      else if (index.is_scalar(mul->input(0), 1 / sqrt2)) x = mul->input(1);
    }
    if (!x) continue;
    // + 1
    const int add = index.only_reader(erf.output(0), "Add");
    if (add < 0) continue;
    const auto one = graph_index::other_input(g.node(add), erf.output(0));
    if (!one || !index.is_scalar(*one, 1.0)) continue;
    // * x, then * 0.5; or * (x * 0.5)
    const int mul = index.only_reader(g.node(add).output(0), "Mul");
    if (mul < 0) continue;
    const auto factor = graph_index::other_input(g.node(mul), g.node(add).output(0));
    if (!factor) continue;
    std::vector<int> absorbed{index.producer_index(erf.input(0)), e, add};
    int root = -1;
    if (*factor == *x) {
      const int half = index.only_reader(g.node(mul).output(0), "Mul");
      if (half < 0) continue;
      const auto h = graph_index::other_input(g.node(half), g.node(mul).output(0));
      if (!h || !index.is_scalar(*h, 0.5)) continue;
      absorbed.push_back(mul);
      root = half;
    } else {
      const auto* half = index.producer(*factor, "Mul");
      if (half == nullptr) continue;
      const auto h = graph_index::other_input(*half, *x);
      if (!h || !index.is_scalar(*h, 0.5)) continue;
      absorbed.push_back(index.producer_index(*factor));
      root = mul;
    }
    out.gelu_roots[root] = *x;
    out.absorbed.insert(absorbed.begin(), absorbed.end());
  }
  return out;
}

}  // namespace typeflow::detail::onnx_import
