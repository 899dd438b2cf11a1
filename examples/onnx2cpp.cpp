// SPDX-License-Identifier: Apache-2.0
// Writes a model as a static graph: a C++ header that defines it as a type, and the safetensors
// file of its weights that the header's load_weights reads (typeflow::to_cpp).
//   onnx2cpp MODEL OUT.hpp [--weights OUT.safetensors] [--name STRUCT] [--namespace NS] [--output NAME]...
// MODEL is an ONNX model (.onnx, in a build with the ONNX importer) or a graph in the text format
// (.tfg). The weights go beside the header (OUT.safetensors) unless --weights says where; the
// struct is `model` unless --name says otherwise; the outputs are the ONNX model's (for a .tfg,
// every op output nobody reads) unless --output names them. Errors name the input and what is
// wrong, with exit status 1.
#include <typeflow/typeflow.hpp>
// The default kernel tables are compiled once, in another unit of the program.
#include <typeflow/registry/extern_kernels.hpp>
#ifdef TYPEFLOW_HAVE_ONNX
#include <typeflow/onnx/import.hpp>
#endif

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tf = typeflow;

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "onnx2cpp: %s\n", message.c_str());
  return 1;
}

int usage() {
  return fail("usage: onnx2cpp MODEL.onnx|GRAPH.tfg OUT.hpp [--weights OUT.safetensors] [--name STRUCT] "
              "[--namespace NS] [--output NAME]...");
}

bool ends_with(std::string_view s, std::string_view end) { return s.size() >= end.size() && s.substr(s.size() - end.size()) == end; }

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string weights_path;
  tf::to_cpp_options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--weights" || arg == "--name" || arg == "--namespace" || arg == "--output") {
      const char* v = value();
      if (v == nullptr) return fail(std::string(arg) + " needs a value");
      if (arg == "--weights") weights_path = v;
      else if (arg == "--name") options.struct_name = v;
      else if (arg == "--namespace") options.namespace_name = v;
      else options.outputs.emplace_back(v);
    } else if (arg.starts_with("--")) {
      return fail("unknown option '" + std::string(arg) + "'");
    } else {
      positional.emplace_back(arg);
    }
  }
  if (positional.size() != 2) return usage();
  const std::string& model_path = positional[0];
  const std::string& header_path = positional[1];
  if (weights_path.empty())
    weights_path = (ends_with(header_path, ".hpp") ? header_path.substr(0, header_path.size() - 4) : header_path) + ".safetensors";

  tf::graph_def def;
  if (ends_with(model_path, ".onnx")) {
#ifdef TYPEFLOW_HAVE_ONNX
    auto model = tf::load_onnx(model_path);
    if (!model.ok()) return fail(model.status().to_string());
    def = std::move(model->graph);
    if (options.outputs.empty()) options.outputs = model->outputs;
#else
    return fail("'" + model_path + "': this build has no ONNX importer (Meson option onnx; Debian's libonnx-dev)");
#endif
  } else {
    auto loaded = tf::load_graph(model_path);
    if (!loaded.ok()) return fail(loaded.status().to_string());
    def = std::move(*loaded);
  }
  const std::size_t slash = model_path.find_last_of('/');
  options.source = slash == std::string::npos ? model_path : model_path.substr(slash + 1);
  options.weights_file = weights_path.substr(weights_path.find_last_of('/') + 1);

  auto made = tf::to_cpp(def, options);
  if (!made.ok()) return fail(made.status().to_string());
  if (auto st = tf::save_safetensors(weights_path, made->weights); !st.ok()) return fail(st.to_string());
  if (auto st = tf::detail::write_whole_file(header_path, made->header, "header"); !st.ok()) return fail(st.to_string());
  std::printf("%s: struct %s%s%s; %s: %zu tensors\n", header_path.c_str(),
              options.namespace_name.empty() ? "" : options.namespace_name.c_str(), options.namespace_name.empty() ? "" : "::",
              options.struct_name.c_str(), weights_path.c_str(), made->weights.tensors.size());
  return 0;
}
