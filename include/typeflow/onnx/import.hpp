// SPDX-License-Identifier: Apache-2.0
// ONNX models in: a ModelProto becomes a graph_def that every runtime session runs.
//   auto def = tf::import_onnx("model.onnx");              // result<graph_def>
//   auto m = tf::load_onnx("model.onnx");                  // result<onnx_model>: the graph and its
//                                                          // inputs' and outputs' node names
// Initializers and Constant nodes become `const` nodes (only those a node reads at run time), graph
// inputs become placeholders with their dims (`?` for symbolic or missing ones), each node becomes
// the typeflow nodes that compute it (converters.hpp), and each graph output is a node of its own
// name. Names keep ONNX's, with every character the text format does not read in a name (it reads
// ASCII letters, digits, _ . / -) written as '_'.
// The model is parsed with ONNX's own protobuf classes and checked with ONNX's checker: a malformed
// file is invalid_argument with the checker's message. Opsets 13 to 17 of the default domain are
// read: a node is imported when the version of its op in the model's opset is one that opsets 13 to
// 17 use (an opset-11 model whose Conv is the Conv of opset 17 is fine; its Squeeze-11 is not). An
// op, attribute or dtype that cannot be mapped is unimplemented, naming the node, its op type and
// what is missing.
// Part of typeflow-onnx (pkg-config typeflow-onnx; Debian's libonnx-dev and libprotobuf-dev).
#pragma once

#include <typeflow/onnx/tensor_proto.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// <sys/mman.h> (which typeflow's allocators include) defines MAP_TYPE, a name ONNX's parser uses.
#pragma push_macro("MAP_TYPE")
#undef MAP_TYPE
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#pragma pop_macro("MAP_TYPE")

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/detail/read_file.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/graph/graph_def.hpp>
#include <typeflow/onnx/detail/builder.hpp>
#include <typeflow/onnx/detail/converters.hpp>
#include <typeflow/onnx/detail/fusion.hpp>

namespace typeflow {

// The opsets of the default ONNX domain the importer reads.
inline constexpr std::int64_t onnx_min_opset = 13;
inline constexpr std::int64_t onnx_max_opset = 17;

struct onnx_model {
  graph_def graph;
  std::vector<std::string> inputs;   // the placeholder of each ONNX graph input, in order
  std::vector<std::string> outputs;  // the node of each ONNX graph output, in order
  std::int64_t opset = 0;            // the model's opset of the default domain
};

struct onnx_load_options {
  // A larger file is refused (resource_exhausted) before it is read; protobuf reads at most 2 GiB.
  std::size_t max_bytes = (std::size_t{2} << 30) - 1;
};

namespace detail::onnx_import {

inline std::string describe(const ::onnx::NodeProto& n) {
  if (!n.name().empty()) return detail::cat("ONNX node '", n.name(), "' (", n.op_type(), ")").str();
  if (n.output_size() > 0) return detail::cat("ONNX node of output '", n.output(0), "' (", n.op_type(), ")").str();
  return detail::cat("ONNX node (", n.op_type(), ")").str();
}

// A graph input's spec from its ValueInfo.
inline result<tensor_spec> input_spec(const ::onnx::ValueInfoProto& info) {
  const auto fail = [&](status st) { return st.with_context(detail::cat("ONNX graph input '", info.name(), "'").view()); };
  if (!info.type().has_tensor_type())
    return fail(errors::unimplemented("only tensor inputs are supported (not sequences, maps or optionals)"));
  const auto& tt = info.type().tensor_type();
  auto d = onnx_dtype(tt.elem_type());
  if (!d.ok()) return fail(d.status());
  if (!tt.has_shape()) return fail(errors::unimplemented("its rank is unknown (no shape); typeflow needs the rank"));
  if (tt.shape().dim_size() > static_cast<int>(max_rank))
    return fail(errors::invalid_argument("rank ", tt.shape().dim_size(), " is more than typeflow's ", max_rank));
  shape s;
  for (const auto& dim : tt.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) return fail(errors::invalid_argument("dimension ", s.rank(), " is negative (", dim.dim_value(), ")"));
      if (dim.dim_value() > max_num_elements) return fail(errors::invalid_argument("dimension ", s.rank(), " is too large"));
      s.push_back(dim.dim_value());
    } else {
      s.push_back(dyn);  // symbolic (dim_param) or missing
    }
  }
  return tensor_spec{*d, s};
}

inline result<onnx_model> import_model(const ::onnx::ModelProto& model) {
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return errors::invalid_argument("the ONNX checker refused the model: ", e.what());
  }
  onnx_model out;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") out.opset = o.version();
  if (out.opset > onnx_max_opset)
    return errors::unimplemented("the model uses opset ", out.opset, "; typeflow imports opsets ", onnx_min_opset, " to ",
                                 onnx_max_opset);
  const ::onnx::GraphProto& g = model.graph();
  builder b;
  std::unordered_map<std::string, value> values;
  for (const auto& init : g.initializer()) {
    auto t = from_onnx_tensor(init, detail::cat("ONNX initializer '", init.name(), "'").view());
    if (!t.ok()) return t.status();
    values[init.name()] = b.constant(init.name(), std::move(*t));
  }
  for (const auto& in : g.input()) {
    if (values.count(in.name())) continue;  // an initializer listed as an input too (IR < 4): its default is used
    auto spec = input_spec(in);
    if (!spec.ok()) return spec.status();
    node_def n;
    n.name = b.fresh_name(in.name());
    n.op = "placeholder";
    n.attrs.set("dtype", attr_value(spec->type));
    n.attrs.set("shape", attr_value(spec->dims));
    out.inputs.push_back(n.name);
    values[in.name()] = value{n.name, *spec, std::nullopt, {}};
    b.def.nodes.push_back(std::move(n));
  }
  const fused_patterns fused = find_fused_patterns(g);
  for (int i = 0; i < g.node_size(); ++i) {
    if (fused.absorbed.count(i)) continue;
    const ::onnx::NodeProto& node = g.node(i);
    const std::string where = describe(node);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return errors::unimplemented(where, ": domain '", node.domain(), "' (typeflow imports the default ONNX domain)");
    if (out.opset == 0) return errors::invalid_argument(where, ": the model imports no opset of the default ONNX domain");
    const auto* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(out.opset), "");
    if (schema == nullptr)
      return errors::unimplemented(where, ": ONNX has no op ", node.op_type(), " in opset ", out.opset);
    const int version = schema->SinceVersion();
    const auto* first = ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(onnx_min_opset), "");
    if (first != nullptr && version < first->SinceVersion())
      return errors::unimplemented(where, ": version ", version, " of ", node.op_type(), " (opset ", out.opset,
                                   ") predates opset ", onnx_min_opset, "; typeflow imports the versions of opsets ",
                                   onnx_min_opset, " to ", onnx_max_opset);
    const auto& table = converters();
    const auto found = table.find(node.op_type());
    if (found == table.end()) return errors::unimplemented(where, ": op type ", node.op_type(), " is not supported");
    const auto gelu = fused.gelu_roots.find(i);
    std::vector<std::optional<value>> in;
    if (gelu != fused.gelu_roots.end()) {  // the root of a GELU: gelu of its x
      const auto x = values.find(gelu->second);
      if (x == values.end()) return errors::invalid_argument(where, ": input '", gelu->second, "' is not defined before it");
      node_context c(node, version, b, {x->second});
      if (auto st = unary<ops::gelu>(c); !st.ok()) return st.with_context(where);
      values[node.output(0)] = c.outputs()[0];
      continue;
    }
    for (const auto& name : node.input()) {
      if (name.empty()) { in.emplace_back(); continue; }
      auto v = values.find(name);
      if (v == values.end()) return errors::invalid_argument(where, ": input '", name, "' is not defined before it");
      in.emplace_back(v->second);
    }
    node_context c(node, version, b, std::move(in));
    if (auto st = found->second(c); !st.ok()) return st.with_context(where);
    if (c.outputs().size() < c.num_outputs())
      return errors::internal(where, ": the converter made ", c.outputs().size(), " of ", c.num_outputs(), " outputs");
    for (std::size_t k = 0; k < c.num_outputs(); ++k)
      if (const std::string& name = node.output(static_cast<int>(k)); !name.empty()) values[name] = c.outputs()[k];
  }
  for (const auto& o : g.output()) {
    auto v = values.find(o.name());
    if (v == values.end()) return errors::invalid_argument("ONNX graph output '", o.name(), "' is not computed by the graph");
    const std::string& ref = b.materialize(v->second);
    const std::string wanted = sanitize(o.name());
    if (ref == wanted) {
      out.outputs.push_back(ref);
      continue;
    }
    node_def n;
    n.name = b.fresh_name(wanted);
    n.op = "identity";
    n.inputs = {ref};
    out.outputs.push_back(n.name);
    b.def.nodes.push_back(std::move(n));
  }
  out.graph = std::move(b.def);
  return out;
}

}  // namespace detail::onnx_import

// The model serialized in `bytes` (what an .onnx file holds).
inline result<onnx_model> parse_onnx(std::string_view bytes) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return errors::invalid_argument("not a serialized ONNX model (protobuf could not parse ", bytes.size(), " bytes)");
  return detail::onnx_import::import_model(model);
}

// The model in the file at `path`; errors name the file.
inline result<onnx_model> load_onnx(const std::string& path, const onnx_load_options& options = {}) {
  auto bytes = detail::read_regular_file(path, "ONNX model", options.max_bytes, "onnx_load_options::max_bytes",
                                         "give the path of an .onnx file");
  if (!bytes.ok()) return bytes.status();
  auto m = parse_onnx(*bytes);
  if (!m.ok()) return m.status().with_context(path);
  return m;
}

// The graph of the model in the file at `path`.
inline result<graph_def> import_onnx(const std::string& path, const onnx_load_options& options = {}) {
  auto m = load_onnx(path, options);
  if (!m.ok()) return m.status();
  return std::move(m->graph);
}

}  // namespace typeflow
