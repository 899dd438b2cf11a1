// SPDX-License-Identifier: Apache-2.0
// Loads a runtime graph from the text format, or an ONNX model (GRAPH ending in .onnx, in a build
// with the ONNX importer), and runs it from the command line.
//   run_graph GRAPH [--feed NAME=DIMS[:VALUE]]... [--fetch NAME]... [--target NAME]...
//             [--threads N] [--trace FILE.json] [--dot FILE.dot]
// DIMS is like 2x4 ("" or "scalar" for a scalar); the fed tensor is filled with VALUE (default 1).
// Without --fetch, every node that no other node reads is fetched. Each output is printed with
// its dtype, shape and first values; --trace writes Chrome trace JSON (open it in Perfetto).
#include <typeflow/typeflow.hpp>
// The default kernel tables are compiled once, in another unit of the program (test/kernels/ in
// this build): this file then compiles in seconds (README, "Compile time").
#include <typeflow/registry/extern_kernels.hpp>
#ifdef TYPEFLOW_HAVE_ONNX
#include <typeflow/onnx/import.hpp>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tf = typeflow;

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "run_graph: %s\n", message.c_str());
  return 1;
}

std::string v_text(double v) { return tf::attr_value(v).to_string(); }

// --threads N: a whole number in [0, max_pool_threads].
tf::result<int> parse_threads(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno == ERANGE || n < 0 || n > tf::max_pool_threads)
    return tf::errors::invalid_argument("--threads ", text, ": expected a whole number from 0 (run on this thread) to ",
                                        tf::max_pool_threads);
  return static_cast<int>(n);
}

// "x=2x4:0.5" -> ("x", f32 [2, 4] filled with 0.5), the dtype taken from the graph.
tf::result<std::pair<std::string, tf::tensor>> parse_feed(const std::string& arg, const tf::runtime_graph<tf::cpu>& g) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    return tf::errors::invalid_argument("--feed ", arg, ": expected NAME=DIMS[:VALUE], such as x=2x4:0.5");
  const std::string name = arg.substr(0, eq);
  std::string dims = arg.substr(eq + 1);
  double value = 1;
  if (auto colon = dims.find(':'); colon != std::string::npos) {
    char* end = nullptr;
    const std::string v = dims.substr(colon + 1);
    value = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') return tf::errors::invalid_argument("--feed ", arg, ": '", v, "' is not a number");
    dims.resize(colon);
  }
  std::vector<std::int64_t> d;
  if (dims != "" && dims != "scalar") {
    std::size_t start = 0;
    for (;;) {
      const std::size_t x = dims.find('x', start);
      const std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
      char* end = nullptr;
      const long long n = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || *end != '\0' || n < 0)
        return tf::errors::invalid_argument("--feed ", arg, ": '", part, "' is not a dimension");
      d.push_back(n);
      if (x == std::string::npos) break;
      start = x + 1;
    }
  }
  auto s = tf::shape::from_span(d);
  if (!s.ok()) return s.status().with_context("--feed " + arg);
  auto node = g.find(name);
  if (!node) return tf::errors::invalid_argument("--feed ", arg, ": the graph has no node '", name, "'");
  const tf::dtype type = g[*node].spec().type;
  if (!tf::ops::detail::value_fits(value, type))
    return tf::errors::invalid_argument("--feed ", arg, ": value ", v_text(value), " does not fit in the node's dtype ", type,
                                        ", whose range is ", tf::ops::detail::range_of(type));
  auto t = tf::tensor::allocate(type, *s);
  if (!t.ok()) return t.status().with_context("--feed " + arg);
  tf::visit(type, [&](auto ty) {
    using T = typename decltype(ty)::type;
    std::fill_n(static_cast<T*>(t->data()), t->num_elements(), tf::ops::detail::convert_value<T>(value));
  });
  return std::pair{name, std::move(*t)};
}

void print(const std::string& name, const tf::tensor& t) {
  std::printf("%s: %s%s =", name.c_str(), std::string(tf::name_of(t.dtype())).c_str(), tf::detail::cat(t.shape()).str().c_str());
  const std::int64_t n = std::min<std::int64_t>(t.num_elements(), 8);
  tf::visit(t.dtype(), [&](auto ty) {
    using T = typename decltype(ty)::type;
    for (std::int64_t i = 0; i < n; ++i) std::printf(" %.6g", static_cast<double>(static_cast<float>(static_cast<const T*>(t.data())[i])));
  });
  std::printf("%s\n", t.num_elements() > n ? " ..." : "");
}

// An ONNX model's graph (its inputs are placeholders named as in the model).
tf::result<tf::graph_def> load_model(const std::string& path) {
#ifdef TYPEFLOW_HAVE_ONNX
  return tf::import_onnx(path);
#else
  return tf::errors::unimplemented("'", path, "': this run_graph was built without the ONNX importer (libonnx-dev)");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // A crash prints the signal, a stack trace and the node that was running (runtime/crash_handler.hpp).
  if (auto st = tf::install_crash_handler(); !st.ok()) std::fprintf(stderr, "run_graph: no crash reports: %s\n", st.to_string().c_str());
  if (argc < 2) return fail("usage: run_graph GRAPH [--feed NAME=DIMS[:VALUE]]... [--fetch NAME]... [--target NAME]... "
                            "[--threads N] [--trace FILE.json] [--dot FILE.dot]");
  std::vector<std::string> feed_args, fetches, targets;
  std::string trace_path, dot_path;
  int threads = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = (a == "--feed" || a == "--fetch" || a == "--target" || a == "--threads" || a == "--trace" || a == "--dot")
                        ? next() : nullptr;
    if (a == "--feed" && v) feed_args.push_back(v);
    else if (a == "--fetch" && v) fetches.push_back(v);
    else if (a == "--target" && v) targets.push_back(v);
    else if (a == "--threads" && v) {
      auto n = parse_threads(v);
      if (!n.ok()) return fail(n.status().to_string());
      threads = *n;
    }
    else if (a == "--trace" && v) trace_path = v;
    else if (a == "--dot" && v) dot_path = v;
    else return fail("unknown or incomplete argument '" + a + "'");
  }

  const tf::crash_context_scope crash_context(argv[1]);  // crash reports name the graph file as the session
  const std::string path = argv[1];
  auto def = path.size() > 5 && path.substr(path.size() - 5) == ".onnx" ? load_model(path) : tf::load_graph(path);
  if (!def.ok()) return fail(def.status().to_string());
  auto made = tf::runtime_graph<tf::cpu>::make(std::move(*def));
  if (!made.ok()) return fail(std::string(argv[1]) + ": " + made.status().to_string());
  auto g = std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*made));

  std::vector<std::pair<std::string, tf::tensor>> feeds;
  for (const std::string& f : feed_args) {
    auto feed = parse_feed(f, *g);
    if (!feed.ok()) return fail(feed.status().to_string());
    feeds.push_back(std::move(*feed));
  }
  if (fetches.empty())
    for (const auto& it : g->items())
      if (it.consumers.empty()) fetches.push_back(it.name);
  if (!dot_path.empty())
    if (auto st = tf::detail::write_whole_file(dot_path, g->to_dot(), "graph file"); !st.ok()) return fail(st.to_string());

  tf::cpu device;
  tf::runtime_session<tf::cpu> session(g, device, threads);
  tf::run_options options;
  tf::run_metadata metadata;
  if (!trace_path.empty()) options.trace = tf::trace_level::full;
  auto out = session.run(feeds, fetches, targets, options, &metadata);
  if (!out.ok()) return fail(out.status().to_string());
  for (std::size_t i = 0; i < fetches.size(); ++i) print(fetches[i], (*out)[i]);
  if (!trace_path.empty()) {
    if (auto st = tf::detail::write_whole_file(trace_path, metadata.to_chrome_trace(), "trace file"); !st.ok()) return fail(st.to_string());
    std::printf("trace: %zu nodes written to %s\n", metadata.steps.size(), trace_path.c_str());
  }
  return 0;
}
