// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness for the ONNX importer: malformed protobufs, models the checker refuses, and
// models it accepts with ops, attributes, dtypes and shapes the converters must refuse by status;
// every model that imports is checked as a graph file is (check_graph.hpp). Seeds: small models of
// ONNX's node tests (test/fuzz/corpus/onnx). Built by meson -Dfuzzing=enabled with Clang.
#include "check_graph.hpp"

#include <typeflow/onnx/import.hpp>

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto model = typeflow::parse_onnx(bytes);
  if (!model.ok()) {
    if (model.status().message().empty()) fuzz::fail("an import error without a message", "");
    return 0;
  }
  fuzz::check_graph(std::move(model->graph), "(an ONNX model)");
  return 0;
}
