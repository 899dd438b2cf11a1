// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness for what a graph file reaches: the text format, runtime-graph validation
// (names, edges, ops, attributes, inference), to_text round trips, and one run of every graph that
// validates (check_graph.hpp). Built by meson -Dfuzzing=enabled with Clang; scripts/fuzz runs it.
#include "check_graph.hpp"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto def = typeflow::parse_graph(text);
  if (!def.ok()) {
    if (def.status().message().empty()) fuzz::fail("an error without a message", std::string(text));
    return 0;
  }
  fuzz::check_graph(std::move(*def), std::string(text));
  return 0;
}
