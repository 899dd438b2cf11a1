// SPDX-License-Identifier: Apache-2.0
// The placer: which device of a device_set runs each node of a graph_def (TensorFlow's Placer).
//  - inferred_graph: a graph_def's topology, each node's kind, inferred spec and kernel dtype, made
//    with the ops of every device type in the set (ops are device-neutral: any type's table that
//    knows the op builds it).
//  - place(): for each needed node, in topological order:
//      explicit device (full or partial name): the highest-priority matching device that has a
//        kernel for (op, dtype); a name that matches no device, or matching devices without the
//        kernel, is invalid_argument naming the node and why, unless soft placement is on, when the
//        node falls back to any device that has the kernel (TensorFlow's allow_soft_placement);
//      no device: the highest-priority device with a kernel (device_set::prioritized).
//    placeholder, const, _send and _recv run anywhere.
// device_kernels_of<Registry, D> is what the placer asks a device type: type-erased so placement
// code is instantiated once per session type, not per node.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/device/device_name.hpp>
#include <typeflow/graph/graph_def.hpp>
#include <typeflow/graph/runtime_graph.hpp>
#include <typeflow/registry/dispatch_table.hpp>

namespace typeflow {

struct device_kernels {
  const char* type;  // for messages
  bool (*has_op)(std::string_view op);
  result<runtime_op> (*make_op)(std::string_view op, const attr_map& attrs);
  bool (*has_kernel)(std::string_view op, dtype type);
  std::string (*dtypes_of)(std::string_view op);
};

template <class Registry, class D>
inline constexpr device_kernels device_kernels_of{
    D::device_type.data(),
    [](std::string_view op) { return kernels_of<Registry, D>().find_op(op) != nullptr; },
    [](std::string_view op, const attr_map& attrs) { return kernels_of<Registry, D>().find_op(op)->make(attrs); },
    [](std::string_view op, dtype type) { return kernels_of<Registry, D>().find_kernel(op, type) != nullptr; },
    [](std::string_view op) { return kernels_of<Registry, D>().dtypes_of(op); }};

struct inferred_graph {
  graph_def def;
  graph_topology topology;
  std::vector<runtime_node_kind> kinds;
  std::vector<std::vector<tensor_spec>> specs;  // each node's, one per output
  std::vector<dtype> kernel_dtypes;  // ops: the dtype their kernel is chosen by

  const tensor_spec& spec(endpoint e) const { return specs[e.node][e.port]; }
  std::size_t num_outputs(std::size_t i) const { return specs[i].size(); }

  // `types`: one entry per device type of the session.
  static result<inferred_graph> make(graph_def def, std::span<const device_kernels* const> types) {
    auto topo = graph_topology::make(def);
    if (!topo.ok()) return topo.status();
    inferred_graph g;
    g.topology = std::move(*topo);
    const std::size_t n = def.nodes.size();
    g.kinds.resize(n, runtime_node_kind::op);
    g.specs.resize(n);
    g.kernel_dtypes.resize(n, dtype::f32);
    for (std::size_t i : g.topology.order) {
      const node_def& d = def.nodes[i];
      auto fail = [&](const status& st) { return st.with_context(detail::node_context(d)); };
      if (auto st = check_ports(d, g.topology.inputs[i], g.topology.ports[i], [&](std::size_t j) { return g.num_outputs(j); });
          !st.ok())
        return st;
      if (d.op == "placeholder" || d.op == "const" || d.op == "_recv") {
        g.kinds[i] = d.op == "placeholder" ? runtime_node_kind::placeholder
                     : d.op == "const"     ? runtime_node_kind::constant
                                           : runtime_node_kind::recv;
        const attr_value* t = d.attrs.find("dtype");
        const attr_value* s = d.attrs.find("shape");
        if (t == nullptr || t->get<dtype>() == nullptr)
          return fail(errors::invalid_argument(d.op, ": attribute 'dtype' is required (a dtype)"));
        if (s == nullptr || s->get<shape>() == nullptr)
          return fail(errors::invalid_argument(d.op, ": attribute 'shape' is required (a shape)"));
        g.specs[i] = {tensor_spec{*t->get<dtype>(), *s->get<shape>()}};
        continue;
      }
      if (d.op == "_send") {
        g.kinds[i] = runtime_node_kind::send;
        g.specs[i] = {g.topology.inputs[i].empty() ? tensor_spec{dtype::f32, shape{0}}
                                                   : g.spec({g.topology.inputs[i][0], g.topology.ports[i][0]})};
        continue;
      }
      const device_kernels* maker = nullptr;
      for (const device_kernels* k : types)
        if (k->has_op(d.op)) {
          maker = k;
          break;
        }
      if (maker == nullptr) {
        detail::text have;
        for (std::size_t k = 0; k < types.size(); ++k) detail::append(have, detail::cat(k ? ", " : "", types[k]->type));
        return fail(errors::invalid_argument("unknown op '", d.op, "' (no kernel list of this registry has it for any device type of the session: ",
                                             have.view(), ")"));
      }
      auto op = maker->make_op(d.op, d.attrs);
      if (!op.ok()) return fail(op.status());
      std::vector<tensor_spec> in;
      for (std::size_t k = 0; k < g.topology.inputs[i].size(); ++k)
        in.push_back(g.spec({g.topology.inputs[i][k], g.topology.ports[i][k]}));
      const int arity = op->num_inputs();
      if (arity == variadic ? in.empty() : in.size() != static_cast<std::size_t>(arity))
        return fail(errors::invalid_argument("op ", d.op, " takes ",
                                             arity == variadic ? std::string("at least 1") : std::to_string(arity), " input",
                                             arity == 1 || arity == variadic ? "" : "s", ", got ", in.size()));
      auto specs = op->infer_outputs(in);
      if (!specs.ok()) return fail(specs.status());
      g.specs[i] = std::move(*specs);
      g.kernel_dtypes[i] = op->kernel_dtype(in, g.specs[i][0]);
    }
    g.def = std::move(def);
    return g;
  }
};

// What the placer knows of each device instance.
struct placement_device {
  std::string_view name;            // full name
  const device_name* parsed;
  const device_kernels* kernels;
};

struct placement_options {
  bool soft = false;  // a node whose requested device lacks its kernel goes to one that has it
};

// The device (an index into `devices`, which are in priority order) of every node i with needed[i];
// npos for the others.
inline result<std::vector<std::size_t>> place(const inferred_graph& g, const std::vector<bool>& needed,
                                              std::span<const placement_device> devices, placement_options options) {
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::vector<std::size_t> where(g.def.nodes.size(), npos);
  auto runs_on = [&](std::size_t i, const placement_device& dev) {
    return g.kinds[i] != runtime_node_kind::op || dev.kernels->has_kernel(g.def.nodes[i].op, g.kernel_dtypes[i]);
  };
  auto list_devices = [&] {  // "CPU:0, CPU:1, TEST:0": by type, then ordinal
    std::vector<std::pair<std::string, int>> listed;
    for (const placement_device& dev : devices) listed.emplace_back(*dev.parsed->type, *dev.parsed->id);
    std::sort(listed.begin(), listed.end());
    detail::text t;
    for (std::size_t k = 0; k < listed.size(); ++k) detail::append(t, detail::cat(k ? ", " : "", listed[k].first, ":", listed[k].second));
    return t.str();
  };
  for (std::size_t i : g.topology.order) {
    if (!needed[i]) continue;
    const node_def& d = g.def.nodes[i];
    auto first_with_kernel = [&](auto&& accept) -> std::size_t {
      for (std::size_t k = 0; k < devices.size(); ++k)
        if (accept(k) && runs_on(i, devices[k])) return k;
      return npos;
    };
    if (d.device.empty()) {
      where[i] = first_with_kernel([](std::size_t) { return true; });
      if (where[i] == npos)
        return errors::invalid_argument(detail::node_context(d), " (", d.op, "): no device of this session (", list_devices(),
                                        ") has a kernel for op ", d.op, " with dtype ", g.kernel_dtypes[i]);
      continue;
    }
    auto requested = device_name::parse(d.device);
    if (!requested.ok()) return requested.status().with_context(detail::node_context(d));
    std::vector<std::size_t> matching;
    for (std::size_t k = 0; k < devices.size(); ++k)
      if (requested->matches(*devices[k].parsed)) matching.push_back(k);
    std::size_t chosen = npos;
    for (std::size_t k : matching)
      if (runs_on(i, devices[k])) {
        chosen = k;
        break;
      }
    if (chosen == npos && options.soft) chosen = first_with_kernel([](std::size_t) { return true; });
    if (chosen == npos) {
      if (matching.empty())
        return errors::invalid_argument(detail::node_context(d), " (", d.op, "): device '", d.device,
                                        "' matches no device of this session (", list_devices(), ")");
      const device_kernels& k = *devices[matching.front()].kernels;
      const std::string have = k.dtypes_of(d.op);
      return errors::invalid_argument(detail::node_context(d), " (", d.op, "): requested device '", d.device,
                                      "' has no kernel for op ", d.op, " with dtype ", g.kernel_dtypes[i], " (device type ",
                                      k.type, have.empty() ? "; no kernel for this op at all" : "; it has kernels for: ",
                                      have, "); the session's soft placement option would place it elsewhere");
    }
    where[i] = chosen;
  }
  return where;
}

}  // namespace typeflow
