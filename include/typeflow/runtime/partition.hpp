// SPDX-License-Identifier: Apache-2.0
// Partitioning (TensorFlow's graph_partition): a placed graph split into one graph_def per device.
//  - A data edge from a node on device A to a node on device B becomes _send on A and _recv on B,
//    one pair per (tensor, destination device) however many consumers the tensor has there; a
//    tensor is one output of a node ("s:1"), so the outputs of a split cross separately.
//  - A control edge across devices becomes a tensor-less pair: _send on A with a control input, and
//    a control input from the _recv on B.
//  - Keys are TensorFlow's: "src_device;src_incarnation;dst_device;tensor_name;frame:iter"; the
//    plan's rendezvous_keys give each a slot.
//  - A fed node becomes a placeholder of its spec (its inputs are not needed).
// Node order within a partition is the graph's; the added nodes follow their producers' order.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <typeflow/graph/graph_def.hpp>
#include <typeflow/runtime/placer.hpp>
#include <typeflow/runtime/rendezvous.hpp>

namespace typeflow {

struct partition_device {
  std::string_view name;  // full name
  std::uint64_t incarnation = 0;
  std::string short_name;  // "CPU_1": used in the names of added nodes
};

struct partition_plan {
  std::vector<std::size_t> devices;  // each partition's device (an index into the devices given)
  std::vector<graph_def> graphs;     // each partition's graph
  std::vector<std::size_t> partition_of;  // each node's partition (npos when not needed)
  std::shared_ptr<rendezvous_keys> keys = std::make_shared<rendezvous_keys>();
  std::size_t transfers = 0;  // _send/_recv pairs
};

inline partition_plan partition(const inferred_graph& g, const std::vector<bool>& needed, const std::vector<bool>& fed,
                                const std::vector<std::size_t>& where, std::span<const partition_device> devices) {
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  const std::size_t n = g.def.nodes.size();
  partition_plan plan;
  plan.partition_of.assign(n, npos);
  std::vector<std::size_t> partition_of_device(devices.size(), npos);
  for (std::size_t i = 0; i < n; ++i) {
    if (!needed[i]) continue;
    std::size_t& p = partition_of_device[where[i]];
    if (p == npos) {
      p = plan.devices.size();
      plan.devices.push_back(where[i]);
      plan.graphs.emplace_back();
    }
    plan.partition_of[i] = p;
  }
  std::set<std::string> added_names;  // "_send/s/1/CPU_1" is output 1 of s, and output 0 of a node "s/1"
  auto unique_name = [&](std::string name) {
    while (g.topology.index.count(name) || added_names.count(name)) name += '_';
    added_names.insert(name);
    return name;
  };
  // (producer, port, destination device, control?) -> the _recv's name on the destination.
  std::map<std::tuple<std::size_t, std::size_t, std::size_t, bool>, std::string> received;
  auto transfer = [&](std::size_t j, std::size_t port, std::size_t dst, bool control) -> const std::string& {
    auto [it, added] = received.try_emplace({j, port, dst, control});
    if (!added) return it->second;
    const node_def& src = g.def.nodes[j];
    const std::string output = detail::cat(src.name, ":", port).str();
    const std::string tensor_name = control ? "^" + src.name : output;
    const std::string suffix = detail::cat(src.name, control ? "/control/" : "/", port == 0 ? "" : detail::cat(port, "/").str(),
                                           devices[dst].short_name).str();
    const std::string key = rendezvous_key(devices[where[j]].name, devices[where[j]].incarnation, devices[dst].name, tensor_name);
    plan.keys->add(key);
    ++plan.transfers;
    node_def send;
    send.name = unique_name("_send/" + suffix);
    send.op = "_send";
    send.inputs.push_back(control ? "^" + src.name : port == 0 ? src.name : output);
    send.attrs.set("key", key);
    send.line = src.line;
    plan.graphs[plan.partition_of[j]].nodes.push_back(std::move(send));
    node_def recv;
    recv.name = unique_name("_recv/" + suffix);
    recv.op = "_recv";
    recv.attrs.set("key", key);
    recv.attrs.set("dtype", control ? dtype::f32 : g.spec({j, port}).type);
    recv.attrs.set("shape", control ? shape{0} : g.spec({j, port}).dims);
    recv.line = src.line;
    it->second = recv.name;
    plan.graphs[partition_of_device[dst]].nodes.push_back(std::move(recv));
    return it->second;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!needed[i]) continue;
    const node_def& d = g.def.nodes[i];
    node_def copy;
    copy.name = d.name;
    copy.line = d.line;
    if (fed[i]) {
      copy.op = "placeholder";
      copy.attrs.set("dtype", g.spec({i, 0}).type);
      copy.attrs.set("shape", g.spec({i, 0}).dims);
    } else {
      copy.op = d.op;
      copy.attrs = d.attrs;
      std::size_t data = 0, control = 0;
      for (const std::string& in : d.inputs) {
        const bool is_control = !in.empty() && in[0] == '^';
        const std::size_t port = is_control ? 0 : g.topology.ports[i][data];
        const std::size_t j = is_control ? g.topology.control[i][control++] : g.topology.inputs[i][data++];
        if (where[j] == where[i]) copy.inputs.push_back(in);
        else copy.inputs.push_back((is_control ? "^" : "") + transfer(j, port, where[i], is_control));
      }
    }
    plan.graphs[plan.partition_of[i]].nodes.push_back(std::move(copy));
  }
  return plan;
}

}  // namespace typeflow
