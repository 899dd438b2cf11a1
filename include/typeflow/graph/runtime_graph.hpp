// SPDX-License-Identifier: Apache-2.0
// Runtime graphs: a graph_def (graph/graph_def.hpp) validated for one device policy type.
//   runtime_graph<Device, Registry>: the validated graph, stored as a compact array of node items
//              with inputs and consumers by index (TensorFlow's GraphView), a topological order, the
//              inferred specs and each node's kernel from kernels_of<Registry, Device>().
// Two ops exist only here: placeholder(dtype, shape) is fed at run time (dyn dimensions allowed:
// `?` in the text format) and const(dtype, shape, value) holds a tensor (value: one number per
// element, or one number for all).
// make() checks everything and returns invalid_argument naming the node: empty or duplicate
// names, unknown op, bad attribute name, type or value, wrong arity, dangling input, a port the
// producer does not have (split has num_split outputs, top_k two, other nodes one), cycle, shape
// or dtype mismatch (the op's own inference), no kernel for (op, device, dtype), a device that is
// not the policy's. _send and _recv (key, and for _recv dtype and shape) are the
// partitioner's; a graph that has them runs with a rendezvous (runtime/runtime_session.hpp).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/device/device_name.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/graph/graph_def.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/dispatch_table.hpp>

namespace typeflow {

// placeholder, const and the transfer nodes that partitioning adds (runtime/partition.hpp): _send
// gives its input (or, with no data input, an empty signal) to the step's rendezvous under its key;
// _recv takes it from there, asynchronously. Every other node is an op from the registry.
enum class runtime_node_kind : unsigned char { placeholder, constant, op, send, recv };

namespace detail {

// Whether a node's device string can name the policy type `type` running alone (ordinal 0).
inline status check_single_device(const node_def& d, std::string_view type) {
  if (d.device.empty()) return ok_status();
  auto name = device_name::parse(d.device);
  if (!name.ok()) return name.status().with_context(detail::node_context(d));
  if (!name->is_local() || (name->type && *name->type != type) || (name->id && *name->id != 0))
    return errors::invalid_argument(detail::node_context(d), ": device '", d.device,
                                    "' is not available; this graph runs on ", type,
                                    ":0 (place graphs on several devices with a device_set)");
  return ok_status();
}

}  // namespace detail

template <class Device, class Registry = default_registry>
class runtime_graph {
 public:
  // Where its ops and kernels come from (instantiated once per program with extern_kernels.hpp).
  static const kernel_table<Device>& kernels() { return kernels_of<Registry, Device>(); }

  struct item {
    std::string name;
    runtime_node_kind kind = runtime_node_kind::op;
    runtime_op op;                                  // kind == op
    const kernel_entry<Device>* kernel = nullptr;
    std::vector<std::size_t> inputs;                // data inputs, by item index
    std::vector<std::size_t> ports;                 // the output of inputs[k] read
    std::vector<std::size_t> control;               // control inputs, by item index
    std::vector<std::size_t> consumers;             // items reading this one (data or control), once each
    std::vector<tensor_spec> specs;                 // one per output, inferred; dyn where only a run knows
    tensor value;                                   // kind == constant
    std::string key;                                // kind == send or recv: the rendezvous key
    std::string device;
    node_def def;                                   // as given, for saving and messages

    const tensor_spec& spec(std::size_t port = 0) const { return specs[port]; }
    std::size_t num_outputs() const noexcept { return specs.size(); }
  };

  static result<runtime_graph> make(graph_def def) {
    auto topo = graph_topology::make(def);
    if (!topo.ok()) return topo.status();
    runtime_graph g;
    const std::size_t n = def.nodes.size();
    g.items_.resize(n);
    g.index_ = std::move(topo->index);
    g.order_ = std::move(topo->order);
    for (std::size_t i = 0; i < n; ++i) {
      node_def& d = def.nodes[i];
      item& it = g.items_[i];
      if (auto st = detail::check_single_device(d, Device::device_type); !st.ok()) return st;
      it.name = d.name;
      it.device = d.device;
      it.inputs = std::move(topo->inputs[i]);
      it.ports = std::move(topo->ports[i]);
      it.control = std::move(topo->control[i]);
      it.consumers = std::move(topo->consumers[i]);
      if (auto st = g.make_node(d, it); !st.ok()) return st.with_context(detail::node_context(d));
      if (it.kind == runtime_node_kind::op) {
        const int arity = it.op.num_inputs();
        if (arity == variadic ? it.inputs.empty() : it.inputs.size() != static_cast<std::size_t>(arity))
          return errors::invalid_argument(detail::node_context(d), ": op ", d.op, " takes ",
                                          arity == variadic ? std::string("at least 1") : std::to_string(arity),
                                          " input", arity == 1 || arity == variadic ? "" : "s", ", got ", it.inputs.size());
      } else if (it.kind == runtime_node_kind::send) {
        if (it.inputs.size() > 1)
          return errors::invalid_argument(detail::node_context(d), ": a _send takes at most 1 data input, got ", it.inputs.size());
      } else if (!it.inputs.empty()) {
        return errors::invalid_argument(detail::node_context(d), ": a ", d.op, " takes no data inputs, got ", it.inputs.size());
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c : g.items_[i].consumers)
        if (g.items_[i].kind == runtime_node_kind::send)
          return errors::invalid_argument(detail::node_context(def.nodes[c]), ": reads _send node '", g.items_[i].name,
                                          "', which has no output");
    // Ports, inference and kernels, in order.
    for (std::size_t i : g.order_) {
      item& it = g.items_[i];
      if (auto st = check_ports(def.nodes[i], it.inputs, it.ports, [&](std::size_t j) { return g.items_[j].num_outputs(); });
          !st.ok())
        return st;
      if (it.kind == runtime_node_kind::send) {
        it.specs = {it.inputs.empty() ? tensor_spec{dtype::f32, shape{0}} : g.input_spec(it, 0)};
        continue;
      }
      if (it.kind != runtime_node_kind::op) continue;
      std::vector<tensor_spec> in;
      for (std::size_t k = 0; k < it.inputs.size(); ++k) in.push_back(g.input_spec(it, k));
      auto specs = it.op.infer_outputs(in);
      if (!specs.ok()) return specs.status().with_context(detail::node_context(def.nodes[i]));
      it.specs = std::move(*specs);
      const dtype kt = it.op.kernel_dtype(in, it.spec());
      it.kernel = kernels().find_kernel(it.op.name(), kt);
      if (it.kernel == nullptr) {
        const std::string have = kernels().dtypes_of(it.op.name());
        return errors::invalid_argument(detail::node_context(def.nodes[i]), ": no kernel for op ", it.op.name(),
                                        " on device ", Device::device_type, " with dtype ", kt,
                                        have.empty() ? std::string("") : "; it has kernels for: " + have);
      }
    }
    for (std::size_t i = 0; i < n; ++i) g.items_[i].def = std::move(def.nodes[i]);
    return g;
  }

  std::span<const item> items() const noexcept { return items_; }
  // The spec of data input k of `it`: the output it reads of its producer.
  const tensor_spec& input_spec(const item& it, std::size_t k) const { return items_[it.inputs[k]].spec(it.ports[k]); }
  const item& operator[](std::size_t i) const { return items_[i]; }
  std::size_t size() const noexcept { return items_.size(); }
  std::span<const std::size_t> order() const noexcept { return order_; }
  std::optional<std::size_t> find(std::string_view name) const {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  // The graph as it was given (node order and spelling kept).
  graph_def to_def() const {
    graph_def d;
    for (const item& it : items_) d.nodes.push_back(it.def);
    return d;
  }

  // Graphviz DOT: one box per node with its op and inferred spec; control edges dashed.
  std::string to_dot() const {
    detail::text t;
    t.append("digraph typeflow {\n  node [shape=box, fontname=\"monospace\"];\n");
    for (std::size_t i = 0; i < items_.size(); ++i)
      detail::append(t, detail::cat("  n", i, " [label=\"", items_[i].name, "\\n", items_[i].def.op, " ",
                                    items_[i].spec(), "\"];\n"));
    for (std::size_t i = 0; i < items_.size(); ++i) {
      for (std::size_t j : items_[i].inputs) detail::append(t, detail::cat("  n", j, " -> n", i, ";\n"));
      for (std::size_t j : items_[i].control) detail::append(t, detail::cat("  n", j, " -> n", i, " [style=dashed];\n"));
    }
    t.append("}\n");
    return t.str();
  }

 private:
  template <class T>
  static status required(const node_def& d, std::string_view name, const T*& out) {
    const attr_value* v = d.attrs.find(name);
    if (v == nullptr) return errors::invalid_argument(d.op, ": attribute '", name, "' is required");
    out = v->get<T>();
    if (out == nullptr)
      return errors::invalid_argument(d.op, ": attribute '", name, "' must be ", to_string(attr_value(T{}).type()), ", got ",
                                      to_string(v->type()), " ", v->to_string());
    return ok_status();
  }
  static status only(const node_def& d, std::initializer_list<std::string_view> names) {
    for (const auto& [k, v] : d.attrs)
      if (std::find(names.begin(), names.end(), k) == names.end())
        return errors::invalid_argument(d.op, " has no attribute '", k, "'");
    return ok_status();
  }

  status make_node(const node_def& d, item& it) {
    if (d.op == "_send" || d.op == "_recv") {
      const bool recv = d.op == "_recv";
      it.kind = recv ? runtime_node_kind::recv : runtime_node_kind::send;
      const std::string* key = nullptr;  // set by required(); initialised for GCC 12's -Wmaybe-uninitialized
      if (auto st = recv ? only(d, {"key", "dtype", "shape"}) : only(d, {"key"}); !st.ok()) return st;
      if (auto st = required(d, "key", key); !st.ok()) return st;
      it.key = *key;
      if (recv) {
        const dtype* t = nullptr;
        const shape* s = nullptr;
        if (auto st = required(d, "dtype", t); !st.ok()) return st;
        if (auto st = required(d, "shape", s); !st.ok()) return st;
        it.specs = {tensor_spec{*t, *s}};
      }
      return ok_status();
    }
    if (d.op == "placeholder") {
      it.kind = runtime_node_kind::placeholder;
      const dtype* t;
      const shape* s;
      if (auto st = only(d, {"dtype", "shape"}); !st.ok()) return st;
      if (auto st = required(d, "dtype", t); !st.ok()) return st;
      if (auto st = required(d, "shape", s); !st.ok()) return st;
      it.specs = {tensor_spec{*t, *s}};
      return ok_status();
    }
    if (d.op == "const") {
      it.kind = runtime_node_kind::constant;
      const dtype* t;
      const shape* s;
      if (auto st = only(d, {"dtype", "shape", "value"}); !st.ok()) return st;
      if (auto st = required(d, "dtype", t); !st.ok()) return st;
      if (auto st = required(d, "shape", s); !st.ok()) return st;
      if (!s->is_fully_defined()) return errors::invalid_argument("const: shape ", *s, " has an unknown dimension");
      const attr_value* v = d.attrs.find("value");
      if (v == nullptr) return errors::invalid_argument("const: attribute 'value' is required");
      // The values as written: integers exactly, or doubles.
      std::vector<std::int64_t> ints;
      std::vector<double> floats;
      if (const auto* f = v->get<std::vector<double>>()) floats = *f;
      else if (const auto* i = v->get<std::vector<std::int64_t>>()) ints = *i;
      else if (const double* x = v->get<double>()) floats = {*x};
      else if (const std::int64_t* x = v->get<std::int64_t>()) ints = {*x};
      else if (const bool* x = v->get<bool>()) ints = {*x ? 1 : 0};
      else return errors::invalid_argument("const: attribute 'value' must be a number or a list of numbers, got ", to_string(v->type()));
      if (auto st = tensor::check_allocatable(*t, *s); !st.ok()) return st;
      const auto count = static_cast<std::size_t>(s->num_elements());
      const std::size_t given = ints.size() + floats.size();
      if (given != count && given != 1)
        return errors::invalid_argument("const: ", given, " values for shape ", *s, " (", count, " elements)");
      for (std::size_t k = 0; k < given; ++k) {
        const bool fits = ints.empty() ? ops::detail::value_fits(floats[k], *t) : ops::detail::value_fits(ints[k], *t);
        if (!fits)
          return errors::invalid_argument("const: value ", ints.empty() ? attr_value(floats[k]).to_string() : attr_value(ints[k]).to_string(),
                                          given == 1 ? std::string() : detail::cat(" (index ", k, ")").str(),
                                          " does not fit in dtype ", *t, ", whose range is ", ops::detail::range_of(*t));
      }
      auto made = tensor::allocate(*t, *s);
      if (!made.ok()) return made.status();
      visit(*t, [&](auto type) {
        using T = typename decltype(type)::type;
        T* p = static_cast<T*>(made->data());
        for (std::size_t k = 0; k < count; ++k) {
          const std::size_t at = given == 1 ? 0 : k;
          p[k] = ints.empty() ? ops::detail::convert_value<T>(floats[at]) : ops::detail::convert_value<T>(ints[at]);
        }
      });
      it.value = std::move(*made);
      it.specs = {tensor_spec{*t, *s}};
      return ok_status();
    }
    const op_entry* entry = kernels().find_op(d.op);
    if (entry == nullptr) {
      return errors::invalid_argument("unknown op '", d.op, "' (no kernel list of this registry has it for device ",
                                      Device::device_type, "; an op of your own needs a registry that lists its kernels: ",
                                      "runtime_graph<Device, tf::registry<my_kernels, tf::cpu_kernel_list>> and the same "
                                      "registry for runtime_session)");
    }
    auto op = entry->make(d.attrs);
    if (!op.ok()) return op.status();
    it.kind = runtime_node_kind::op;
    it.op = std::move(*op);
    return ok_status();
  }

  std::vector<item> items_;
  std::vector<std::size_t> order_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace typeflow
