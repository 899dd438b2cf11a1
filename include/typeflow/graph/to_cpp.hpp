// SPDX-License-Identifier: Apache-2.0
// to_cpp(def): a runtime graph as C++ source of a static graph, the way back from
// to_graph_def(g): a header that defines the graph as a type, and the tensors of its constants
// as a safetensors file the header's load_weights reads. What examples/onnx2cpp writes for an
// ONNX model; a graph file can take the same path.
//   auto m = tf::to_cpp(def, {.struct_name = "cnn", .outputs = {"gemm17"}});
//   // m->header: struct cnn { static constexpr auto n_image = tf::input<"image", float, ...>; ...
//   //                        using graph = decltype(tf::graph(n_gemm17)); load_weights(session, path) }
//   tf::save_safetensors("cnn.safetensors", m->weights);
// In the header:
//  - a placeholder is an input<name, T, static_shape<...>> (dyn where the graph has `?`);
//  - a const of shape [] whose value a double holds exactly is a constant<value, T> (scalars
//    fuse into elementwise groups); every other const is a variable<name, T, shape> whose value
//    is the weights file's tensor of that name;
//  - an op is apply<op>(inputs...) with its attributes as op_with<ops::name>(attr<"a">(v), ...),
//    those at their defaults left out; an op with several outputs is apply_outputs, read with
//    std::get<port>;
//  - the struct's inputs and outputs are tuples of the expressions, with their runtime names in
//    input_names and output_names; graph is the static graph of the outputs.
// Only what the outputs need is written. The graph is first made into a runtime_graph on `Device`
// (default cpu), so an invalid graph is that error (a node's device string must name that device,
// and is then dropped: the session's device runs it); what a static graph cannot express (control
// inputs, _send/_recv, a fused_elementwise) is unimplemented naming the node; a name in `options`
// that is not a C++ identifier is invalid_argument.
#pragma once

#include <typeflow/fwd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/safetensors.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/device/cpu.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/graph/graph_def.hpp>
#include <typeflow/graph/runtime_graph.hpp>

namespace typeflow {

struct to_cpp_options {
  std::string struct_name = "model";  // the struct the header defines
  std::string namespace_name;         // a namespace around it ("" for none; "a::b" allowed)
  std::vector<std::string> outputs;   // the tensors fetched ("node", "node:1"); empty: every op output nobody reads
  std::string source;                 // what the header says it was made from (a file name)
  std::string weights_file = "weights.safetensors";  // the weights' file name, as the header's comment gives it
};

struct cpp_model {
  std::string header;  // the C++ header
  tensor_file weights; // the values of its variables, by their names
};

namespace detail {

inline bool is_cpp_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return s.find("__") == std::string_view::npos;
}

// "n_" and the name with every character outside [A-Za-z0-9] as one '_' (no "__", which C++
// reserves), made unique with a numeric suffix.
inline std::string cpp_identifier_for(std::string_view name, std::set<std::string>& taken) {
  std::string id = "n_";
  for (const char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (keep) id += c;
    else if (id.back() != '_') id += '_';
  }
  if (id.back() == '_' && id.size() > 2) id.pop_back();
  std::string unique = id;
  for (int k = 2; taken.contains(unique); ++k) unique = id + "_" + std::to_string(k);
  taken.insert(unique);
  return unique;
}

// A C++ string literal of `s`: quotes, backslashes and bytes outside printable ASCII escaped in octal.
inline std::string cpp_string_literal(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string_view cpp_element_type(dtype d) {
  switch (d) {
    case dtype::f16: return "Eigen::half";
    case dtype::bf16: return "Eigen::bfloat16";
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::i8: return "std::int8_t";
    case dtype::i32: return "std::int32_t";
    case dtype::i64: return "std::int64_t";
    case dtype::u8: return "std::uint8_t";
    case dtype::boolean: return "bool";
  }
  return "void";
}

inline std::string cpp_dtype(dtype d) {
  return d == dtype::boolean ? "typeflow::dtype::boolean" : "typeflow::dtype::" + std::string(name_of(d));
}

inline std::string cpp_dim(std::int64_t d) { return d == dyn ? "typeflow::dyn" : std::to_string(d); }

inline std::string cpp_dims(const shape& s) {
  std::string out;
  for (std::size_t i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + cpp_dim(s[i]);
  return out;
}

inline std::string cpp_int(std::int64_t v) {
  if (v == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

// A double literal that reads back as v; nullopt-like empty for NaN and infinities.
inline std::string cpp_double(double v) {
  if (!std::isfinite(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// One attribute's value as a C++ argument of attr<"name">(...).
inline result<std::string> cpp_attr_value(const attr_value& v) {
  if (const bool* b = v.get<bool>()) return std::string(*b ? "true" : "false");
  if (const std::int64_t* i = v.get<std::int64_t>()) return "std::int64_t{" + cpp_int(*i) + "}";
  if (const double* f = v.get<double>()) {
    if (std::isnan(*f)) return std::string("std::numeric_limits<double>::quiet_NaN()");
    if (std::isinf(*f)) return std::string(*f > 0 ? "" : "-") + "std::numeric_limits<double>::infinity()";
    return cpp_double(*f);
  }
  if (const std::string* s = v.get<std::string>()) return cpp_string_literal(*s);
  if (const dtype* d = v.get<dtype>()) return cpp_dtype(*d);
  if (const shape* s = v.get<shape>()) return "typeflow::shape{" + cpp_dims(*s) + "}";
  if (const auto* l = v.get<std::vector<std::int64_t>>()) {
    std::string out = "typeflow::int_list{";
    for (std::size_t i = 0; i < l->size(); ++i) out += (i ? ", " : "") + cpp_int((*l)[i]);
    return out + "}";
  }
  return errors::unimplemented("an attribute of type ", to_string(v.type()), " (", v.to_string(), ")");
}

// The scalar's value as a double, when a double holds it exactly and constant<> takes its dtype.
inline std::string exact_scalar(const tensor& t) {
  if (t.rank() != 0) return "";
  double v = 0;
  bool exact = false;
  visit(t.dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      v = static_cast<double>(*static_cast<const T*>(t.data()));
      exact = std::isfinite(v);
    } else if constexpr (std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::int32_t> ||
                         std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int64_t>) {
      const T x = *static_cast<const T*>(t.data());
      v = static_cast<double>(x);
      exact = static_cast<double>(x) >= -9007199254740992.0 && static_cast<double>(x) <= 9007199254740992.0;
    }
  });
  return exact ? cpp_double(v) : "";
}

}  // namespace detail

template <device_policy Device = cpu, class Registry = default_registry>
result<cpp_model> to_cpp(const graph_def& def, const to_cpp_options& options = {}) {
  if (!detail::is_cpp_identifier(options.struct_name))
    return errors::invalid_argument("to_cpp: struct_name '", options.struct_name, "' is not a C++ identifier");
  if (!options.namespace_name.empty()) {
    std::string_view ns = options.namespace_name;
    for (std::size_t at = 0;;) {
      const std::size_t end = ns.find("::", at);
      const std::string_view part = ns.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
      if (!detail::is_cpp_identifier(part))
        return errors::invalid_argument("to_cpp: namespace_name '", ns, "' is not a C++ namespace name");
      if (end == std::string_view::npos) break;
      at = end + 2;
    }
  }
  auto made = runtime_graph<Device, Registry>::make(def);
  if (!made.ok()) return made.status();
  const auto& g = *made;

  // The outputs, then what they need.
  std::vector<endpoint> outputs;
  std::vector<std::string> output_names;
  if (options.outputs.empty()) {
    std::vector<std::vector<bool>> read(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) read[i].assign(g[i].num_outputs(), false);
    for (std::size_t i = 0; i < g.size(); ++i)
      for (std::size_t k = 0; k < g[i].inputs.size(); ++k) read[g[i].inputs[k]][g[i].ports[k]] = true;
    for (std::size_t i : g.order())
      if (g[i].kind == runtime_node_kind::op)
        for (std::size_t p = 0; p < g[i].num_outputs(); ++p)
          if (!read[i][p]) {
            outputs.push_back({i, p});
            output_names.push_back(p == 0 && g[i].num_outputs() == 1 ? g[i].name : g[i].name + ":" + std::to_string(p));
          }
    if (outputs.empty()) return errors::invalid_argument("to_cpp: the graph has no op whose output nobody reads; name the outputs");
  } else {
    for (const std::string& name : options.outputs) {
      const auto parsed = tensor_name::parse(name);
      const auto at = parsed ? g.find(parsed->node) : std::nullopt;
      if (!at) return errors::invalid_argument("to_cpp: output '", name, "' is not a tensor of the graph");
      if (parsed->port >= g[*at].num_outputs())
        return errors::invalid_argument("to_cpp: output '", name, "': ", detail::describe_outputs(g[*at].name, g[*at].num_outputs()));
      outputs.push_back({*at, parsed->port});
      output_names.push_back(name);
    }
  }
  std::vector<bool> needed(g.size(), false);
  std::vector<std::size_t> stack;
  for (const auto& o : outputs) stack.push_back(o.node);
  while (!stack.empty()) {
    const std::size_t i = stack.back();
    stack.pop_back();
    if (needed[i]) continue;
    needed[i] = true;
    for (std::size_t j : g[i].inputs) stack.push_back(j);
    for (std::size_t j : g[i].control) stack.push_back(j);
  }

  cpp_model out;
  std::set<std::string> taken;
  std::vector<std::string> ids(g.size());
  std::vector<std::size_t> inputs;
  std::vector<std::size_t> variables;
  detail::text body;
  std::size_t written = 0;
  auto read_expr = [&](std::size_t node, std::size_t port) {
    return g[node].kind == runtime_node_kind::op && g[node].op.multi_output()
               ? "std::get<" + std::to_string(port) + ">(" + ids[node] + ")"
               : ids[node];
  };
  for (std::size_t i : g.order()) {
    if (!needed[i]) continue;
    const auto& it = g[i];
    auto refuse = [&](auto&&... what) {
      return errors::unimplemented("to_cpp: node '", it.name, "' (", it.def.op, "): ", what...);
    };
    if (!it.control.empty()) return refuse("it has control inputs; a static graph orders its nodes by data alone");
    ++written;
    ids[i] = detail::cpp_identifier_for(it.name, taken);
    const tensor_spec& spec = it.spec();
    switch (it.kind) {
      case runtime_node_kind::send:
      case runtime_node_kind::recv: return refuse("a static graph holds no _send or _recv; generate from the unpartitioned graph");
      case runtime_node_kind::placeholder:
        inputs.push_back(i);
        detail::append(body, detail::cat("  static constexpr auto ", ids[i], " = typeflow::input<", detail::cpp_string_literal(it.name),
                                         ", ", detail::cpp_element_type(spec.type), ", typeflow::static_shape<",
                                         detail::cpp_dims(spec.dims), ">>;\n"));
        break;
      case runtime_node_kind::constant: {
        if (const std::string v = detail::exact_scalar(it.value); !v.empty()) {
          detail::append(body, detail::cat("  static constexpr auto ", ids[i], " = typeflow::constant<", v, ", ",
                                           detail::cpp_element_type(spec.type), ">;  // ", it.name, "\n"));
          break;
        }
        variables.push_back(i);
        if (auto st = out.weights.add(it.name, it.value); !st.ok()) return st;
        detail::append(body, detail::cat("  static constexpr auto ", ids[i], " = typeflow::variable<",
                                         detail::cpp_string_literal(it.name), ", ", detail::cpp_element_type(spec.type),
                                         ", typeflow::static_shape<", detail::cpp_dims(spec.dims), ">>;\n"));
        break;
      }
      case runtime_node_kind::op: {
        const std::string_view name = it.op.name();
        if (name == "fused_elementwise") return refuse("a fused_elementwise is made by the static planner, not written");
        const op_entry* entry = runtime_graph<Device, Registry>::kernels().find_op(name);
        auto defaults = entry->make(attr_map{});
        if (!defaults.ok()) return defaults.status();
        const attr_map attrs = it.op.attrs();
        const attr_map base = defaults->attrs();
        std::string op = "typeflow::ops::" + std::string(name);
        std::string args;
        for (const auto& [key, value] : attrs) {
          const attr_value* d = base.find(key);
          if (d != nullptr && *d == value) continue;
          auto v = detail::cpp_attr_value(value);
          if (!v.ok()) return refuse("attribute '", key, "': ", v.status().message());
          args += (args.empty() ? "" : ", ") + ("typeflow::attr<" + detail::cpp_string_literal(key) + ">(" + *v + ")");
        }
        op = args.empty() ? op + "{}" : "typeflow::op_with<" + op + ">(" + args + ")";
        std::string in;
        for (std::size_t k = 0; k < it.inputs.size(); ++k) in += (k ? ", " : "") + read_expr(it.inputs[k], it.ports[k]);
        detail::append(body, detail::cat("  static constexpr auto ", ids[i], " = typeflow::",
                                         it.op.multi_output() ? "apply_outputs" : "apply", "<", op, ">(", in,
                                         ");  // ", it.name, ": ", spec, "\n"));
        break;
      }
    }
  }

  auto list = [&](auto&& items, auto&& each) {
    std::string s;
    for (std::size_t k = 0; k < items.size(); ++k) s += (k ? ", " : "") + each(items[k]);
    return s;
  };
  const std::string output_exprs = list(outputs, [&](const endpoint& e) { return read_expr(e.node, e.port); });
  detail::text h;
  detail::append(h, detail::cat(
      "// Generated by typeflow::to_cpp", options.source.empty() ? std::string() : " from " + options.source, ": ", written,
      " nodes, ", inputs.size(), " input", inputs.size() == 1 ? "" : "s", ", ", variables.size(), " variable",
      variables.size() == 1 ? "" : "s", ". Do not edit; generate it again.\n"
      "// Use:\n"
      "//   typeflow::session s(", options.struct_name, "::graph{}, device);\n"
      "//   ", options.struct_name, "::load_weights(s, ", detail::cpp_string_literal(options.weights_file), ");  // written with this header\n"
      "//   auto r = s.run(typeflow::feed(std::get<0>(", options.struct_name, "::inputs), x), typeflow::fetch(std::get<0>(",
      options.struct_name, "::outputs)));\n"
      "#pragma once\n\n#include <array>\n#include <cstdint>\n#include <limits>\n#include <string>\n#include <string_view>\n"
      "#include <tuple>\n\n#include <typeflow/typeflow.hpp>\n#include <typeflow/runtime/restore.hpp>\n\n"));
  if (!options.namespace_name.empty()) detail::append(h, detail::cat("namespace ", options.namespace_name, " {\n\n"));
  detail::append(h, detail::cat("struct ", options.struct_name, " {\n"));
  h.append(body.view());
  detail::append(h, detail::cat(
      "\n  static constexpr auto inputs = std::tuple{", list(inputs, [&](std::size_t i) { return ids[i]; }), "};\n",
      "  static constexpr std::array<std::string_view, ", inputs.size(), "> input_names{",
      list(inputs, [&](std::size_t i) { return detail::cpp_string_literal(g[i].name); }), "};\n",
      "  static constexpr auto outputs = std::tuple{", output_exprs, "};\n",
      "  static constexpr std::array<std::string_view, ", outputs.size(), "> output_names{",
      list(output_names, [&](const std::string& n) { return detail::cpp_string_literal(n); }), "};\n",
      "  using graph = decltype(typeflow::graph(", output_exprs, "));\n\n",
      "  // Sets every variable from the tensor of its name in the safetensors file at `path`.\n",
      "  template <class Session>\n  static typeflow::status load_weights(Session& session, const std::string& path) {\n",
      "    return typeflow::restore_variables(session, path", variables.empty() ? "" : ", ",
      list(variables, [&](std::size_t i) { return ids[i]; }), ");\n  }\n};\n"));
  if (!options.namespace_name.empty()) detail::append(h, detail::cat("\n}  // namespace ", options.namespace_name, "\n"));
  out.header = h.str();
  return out;
}

}  // namespace typeflow
