// SPDX-License-Identifier: Apache-2.0
// ONNX's node tests (Debian's libonnx-testdata) run on typeflow: every case whose model the
// importer takes is run on the sequential and the parallel executor and compared with ONNX's
// expected outputs (rtol 1e-4, atol 1e-5; exact for integers and bool). Prints, per op type, how
// many cases ran, passed and were unsupported (with the importer's reason), and fails when a case
// that ran disagrees, except the defects of the test data listed below with their reason.
// Many cases feed as graph inputs what a model exported from a framework holds as constants (a
// Reshape's shape, a Slice's bounds, an Expand's shape), which typeflow needs when the model is
// imported, as its shapes are fixed then. When the importer asks for such an input, it is made an
// initializer holding the case's data and the model imported again; the table counts those cases
// in the column `frozen`.
// With --strict (typeflow's own models, test/onnx/models), a case the importer refuses fails too.
//   onnx_node_tests DATA_DIR [--verbose] [--strict] [--only TEXT]
#include <typeflow/typeflow.hpp>
#include <typeflow/onnx/import.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tf = typeflow;
namespace fs = std::filesystem;

namespace {

// Cases whose expected outputs are wrong, with why (they run, and are reported, but do not fail).
const std::map<std::string, std::string> known_defects = {
    {"test_cast_FLOAT_to_BFLOAT16", "ONNX 1.12's reference truncates to bf16 where typeflow (and the standard) rounds to nearest even"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "the data feeds input 'like' as shape [1] where the model declares [3, 4]"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "the data feeds input 'like' as shape [1] where the model declares [3, 4]"},
};

struct row {
  int ran = 0, passed = 0, unsupported = 0, defects = 0, frozen = 0;
  std::set<std::string> reasons;
};

// A test tensor. ONNX 1.12 writes the bfloat16 tensors of its test data as UINT16 holding the bits
// (a defect of the data, not of the model): read as bf16 where the graph expects bf16.
tf::result<tf::tensor> load(const fs::path& path, std::optional<tf::dtype> expected) {
  ::onnx::TensorProto p;
  std::ifstream f(path, std::ios::binary);
  if (!p.ParseFromIstream(&f)) return tf::errors::invalid_argument("'", path.string(), "' is not a TensorProto");
  if (p.data_type() == ::onnx::TensorProto::UINT16 && expected == tf::dtype::bf16) p.set_data_type(::onnx::TensorProto::BFLOAT16);
  return tf::from_onnx_tensor(p, path.string());
}

// The number of the data file of graph input `name` (its position among the model's inputs).
std::size_t input_file(const fs::path& dir, const std::string& name) {
  ::onnx::ModelProto m;
  std::ifstream f(dir / "model.onnx", std::ios::binary);
  m.ParseFromIstream(&f);
  for (int k = 0; k < m.graph().input_size(); ++k)
    if (tf::detail::onnx_import::sanitize(m.graph().input(k).name()) == name) return static_cast<std::size_t>(k);
  return 0;
}

// The case's model imported with the graph inputs the importer asks to know made initializers
// holding the case's data, one at a time, as the importer names them ("input 1 (shape, 'shape')
// must be known when the model is imported").
tf::result<tf::onnx_model> freeze_inputs(const fs::path& dir, tf::status why) {
  ::onnx::ModelProto m;
  std::ifstream f(dir / "model.onnx", std::ios::binary);
  if (!m.ParseFromIstream(&f)) return tf::errors::invalid_argument("unreadable model");
  auto* g = m.mutable_graph();
  for (int round = 0; round < 8; ++round) {
    const std::string message(why.message());
    const auto end = message.find("') must be known when the model is imported");
    const auto start = message.rfind(", '", end);
    if (end == std::string::npos || start == std::string::npos) return why;
    const std::string name = message.substr(start + 3, end - start - 3);
    int k = 0;
    while (k < g->input_size() && g->input(k).name() != name) ++k;
    if (k == g->input_size()) return why;  // not a graph input: computed in the graph
    ::onnx::TensorProto t;
    std::ifstream in(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"), std::ios::binary);
    if (!t.ParseFromIstream(&in)) return why;
    t.set_name(name);
    *g->add_initializer() = t;
    auto model = tf::parse_onnx(m.SerializeAsString());
    if (model.ok() || model.status().message().find("must be known when the model is imported") == std::string_view::npos)
      return model;
    why = model.status();
  }
  return why;
}

// "" when the tensors agree, else what differs.
std::string compare(const tf::tensor& got, const tf::tensor& want) {
  if (got.dtype() != want.dtype())
    return tf::detail::cat("dtype ", got.dtype(), ", expected ", want.dtype()).str();
  if (got.shape() != want.shape()) return tf::detail::cat("shape ", got.shape(), ", expected ", want.shape()).str();
  const auto a = tf::detail::onnx_import::double_values(got), b = tf::detail::onnx_import::double_values(want);
  const bool exact = !tf::is_floating(got.dtype());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    const bool ok = exact ? a[i] == b[i] : (a[i] == b[i] || std::abs(a[i] - b[i]) <= 1e-5 + 1e-4 * std::abs(b[i]));
    if (!ok) return tf::detail::cat("element ", i, " is ", a[i], ", expected ", b[i]).str();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: onnx_node_tests DATA_DIR [--verbose] [--strict] [--only TEXT]\n");
    return 2;
  }
  const fs::path root = argv[1];
  bool verbose = false, strict = false;
  std::string only;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--verbose") verbose = true;
    else if (a == "--strict") strict = true;
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
  }
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    std::fprintf(stderr, "onnx_node_tests: %s is not a directory (install libonnx-testdata)\n", root.c_str());
    return 77;
  }
  std::vector<fs::path> cases;
  for (const auto& d : fs::directory_iterator(root))
    if (d.is_directory() && d.path().filename().string().find(only) != std::string::npos) cases.push_back(d.path());
  std::sort(cases.begin(), cases.end());

  std::map<std::string, row> rows;
  std::vector<std::string> failures;
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    auto model = tf::load_onnx((dir / "model.onnx").string());
    bool frozen = false;
    if (!model.ok() && model.status().message().find("must be known when the model is imported") != std::string_view::npos) {
      auto again = freeze_inputs(dir, model.status());
      frozen = again.ok();
      model = std::move(again);
    }
    // The op a case is filed under: its node's op type, or "expanded" for a function's expansion.
    std::string op = "(several nodes)";
    {
      ::onnx::ModelProto m;
      std::ifstream f(dir / "model.onnx", std::ios::binary);
      if (m.ParseFromIstream(&f) && m.graph().node_size() == 1) op = m.graph().node(0).op_type();
    }
    row& r = rows[op];
    if (!model.ok()) {
      if (model.status().code() == tf::status_code::unimplemented && !strict) {
        ++r.unsupported;
        std::string reason(model.status().message());
        // Without the file's path and the node's name: the reasons of one op are then alike.
        if (const auto colon = reason.find("): "); colon != std::string::npos) reason = reason.substr(colon + 3);
        else if (const auto path = reason.find(".onnx: "); path != std::string::npos) reason = reason.substr(path + 7);
        r.reasons.insert(reason);
        if (verbose) std::printf("UNSUPPORTED %s: %s\n", name.c_str(), model.status().to_string().c_str());
        continue;
      }
      failures.push_back(name + ": import: " + model.status().to_string());
      ++r.ran;
      continue;
    }
    auto g = tf::runtime_graph<tf::cpu>::make(model->graph);
    if (!g.ok()) {
      // A dtype typeflow's kernels lack is unsupported, not a failure.
      if (g.status().message().find("no kernel for op") != std::string::npos && !strict) {
        ++r.unsupported;
        r.reasons.insert(std::string(g.status().message()));
        if (verbose) std::printf("UNSUPPORTED %s: %s\n", name.c_str(), g.status().to_string().c_str());
        continue;
      }
      failures.push_back(name + ": graph: " + g.status().to_string());
      ++r.ran;
      continue;
    }
    ++r.ran;
    r.frozen += frozen;
    auto graph = std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g));
    std::string problem;
    for (const fs::path& set : {dir / "test_data_set_0"}) {
      std::vector<std::pair<std::string, tf::tensor>> feeds;
      for (std::size_t k = 0; k < model->inputs.size() && problem.empty(); ++k) {
        auto t = load(set / ("input_" + std::to_string(input_file(dir, model->inputs[k])) + ".pb"),
                      (*graph)[*graph->find(model->inputs[k])].spec().type);
        if (!t.ok()) problem = "input " + std::to_string(k) + ": " + t.status().to_string();
        else feeds.emplace_back(model->inputs[k], std::move(*t));
      }
      std::vector<tf::tensor> expected;
      for (std::size_t k = 0; k < model->outputs.size() && problem.empty(); ++k) {
        auto t = load(set / ("output_" + std::to_string(k) + ".pb"), tf::dtype::bf16);
        if (!t.ok()) problem = "output " + std::to_string(k) + ": " + t.status().to_string();
        else expected.push_back(std::move(*t));
      }
      for (int threads : {0, 2}) {
        if (!problem.empty()) break;
        tf::cpu device;
        tf::runtime_session<tf::cpu> session(graph, device, threads);
        auto got = session.run(feeds, model->outputs);
        if (!got.ok()) {
          problem = tf::detail::cat(threads ? "parallel" : "sequential", " run: ", got.status()).str();
          break;
        }
        for (std::size_t k = 0; k < expected.size() && problem.empty(); ++k)
          if (auto d = compare((*got)[k], expected[k]); !d.empty())
            problem = tf::detail::cat(threads ? "parallel" : "sequential", ": output ", k, " ('", model->outputs[k], "'): ", d).str();
      }
    }
    if (problem.empty()) {
      ++r.passed;
      if (verbose) std::printf("PASS %s\n", name.c_str());
    } else if (auto known = known_defects.find(name); known != known_defects.end()) {
      ++r.defects;
      std::printf("KNOWN DEFECT %s: %s (%s)\n", name.c_str(), known->second.c_str(), problem.c_str());
    } else {
      failures.push_back(name + ": " + problem);
    }
  }

  int ran = 0, passed = 0, unsupported = 0, defects = 0, frozen = 0;
  std::printf("%-32s %5s %6s %6s %11s %7s  %s\n", "op", "ran", "passed", "frozen", "unsupported", "defects",
              "why unsupported");
  for (const auto& [op, r] : rows) {
    std::string why;
    for (const auto& reason : r.reasons) why += (why.empty() ? "" : "; ") + reason;
    if (why.size() > 160) why = why.substr(0, 157) + "...";
    std::printf("%-32s %5d %6d %6d %11d %7d  %s\n", op.c_str(), r.ran, r.passed, r.frozen, r.unsupported, r.defects,
                why.c_str());
    ran += r.ran; passed += r.passed; unsupported += r.unsupported; defects += r.defects; frozen += r.frozen;
  }
  std::printf("%-32s %5d %6d %6d %11d %7d\n", "total", ran, passed, frozen, unsupported, defects);
  for (const auto& f : failures) std::printf("FAIL %s\n", f.c_str());
  std::printf("%zu cases: %d ran, %d passed, %d known defects, %d unsupported, %zu failed\n", cases.size(), ran, passed,
              defects, unsupported, failures.size());
  return failures.empty() ? 0 : 1;
}
