// SPDX-License-Identifier: Apache-2.0
// What the fuzz harnesses do with a graph_def they were given (fuzz_graph from the text format,
// fuzz_onnx from an ONNX model): to_text round trips, runtime-graph validation, and one run with
// the placeholders fed zeros (dyn dimensions as 1) and every sink fetched. Any crash, sanitizer
// report, hang or unbounded allocation is a bug; statuses are the expected outcome of bad input.
#pragma once

#include <typeflow/typeflow.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fuzz {

namespace tf = typeflow;

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Graphs whose tensors are this large are valid but only cost the fuzzer time and memory.
constexpr std::int64_t max_elements = 1 << 16;

inline std::int64_t elements_with_dyn_as_one(const tf::shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d == tf::dyn ? 1 : d;
  return n;
}

// True when every shape attribute of the graph is small (const and fill allocate at make time).
inline bool small(const tf::graph_def& def) {
  for (const auto& n : def.nodes)
    for (const auto& [name, value] : n.attrs) {
      if (const auto* s = value.get<tf::shape>(); s && elements_with_dyn_as_one(*s) > max_elements) return false;
      if (const auto* l = value.get<std::vector<std::int64_t>>(); l && name == "shape") {
        std::int64_t e = 1;
        for (auto d : *l)
          if (d > 0 && (e *= d) > max_elements) return false;
      }
    }
  return true;
}

// Writes def as text and reads it back (the same graph), then validates it and runs it once.
// `input` names what the harness was given, for the messages.
inline void check_graph(tf::graph_def def, const std::string& input) {
  // What to_text writes parses back to the same graph (NaN aside: it is not equal to itself).
  const std::string written = tf::to_text(def);
  auto again = tf::parse_graph(written);
  if (!again.ok()) fail("to_text wrote what parse_graph refuses", written + "\n" + again.status().to_string());
  if (tf::to_text(*again) != written) fail("to_text did not round-trip", written);

  if (!small(def)) return;
  auto made = tf::runtime_graph<tf::cpu>::make(std::move(def));
  if (!made.ok()) {
    if (made.status().message().empty()) fail("a validation error without a message", input);
    return;
  }
  auto g = std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*made));
  std::vector<std::pair<std::string, tf::tensor>> feeds;
  std::vector<std::string> fetches;
  for (const auto& it : g->items()) {
    for (const tf::tensor_spec& spec : it.specs)
      if (elements_with_dyn_as_one(spec.dims) > max_elements) return;
    if (it.consumers.empty()) fetches.push_back(it.name);
    if (it.kind != tf::runtime_node_kind::placeholder) continue;
    tf::shape s = it.spec().dims;
    for (std::size_t i = 0; i < s.rank(); ++i)
      if (s[i] == tf::dyn) s[i] = 1;
    auto t = tf::tensor::allocate(it.spec().type, s);
    if (!t.ok()) fail("cannot make a feed", t.status().to_string());
    std::memset(t->data(), 0, t->bytes());
    feeds.emplace_back(it.name, std::move(*t));
  }
  tf::cpu device;
  tf::runtime_session<tf::cpu> session(g, device);
  auto out = session.run(feeds, fetches);
  if (!out.ok() && out.status().message().empty()) fail("a run error without a message", input);
}

}  // namespace fuzz
