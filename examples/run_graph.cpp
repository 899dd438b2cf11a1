// SPDX-License-Identifier: Apache-2.0
// Loads a runtime graph from the text format and runs it from the command line.
//   run_graph GRAPH [--feed NAME=DIMS[:VALUE]]... [--fetch NAME]... [--target NAME]...
//             [--threads N] [--trace FILE.json] [--dot FILE.dot]
// DIMS is like 2x4 ("" or "scalar" for a scalar); the fed tensor is filled with VALUE (default 1).
// Without --fetch, every node that no other node reads is fetched. Each output is printed with
// its dtype, shape and first values; --trace writes Chrome trace JSON (open it in Perfetto).
#include <typeflow/typeflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace tf = typeflow;

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "run_graph: %s\n", message.c_str());
  return 1;
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
  if (!s.ok()) return s.status();
  auto node = g.find(name);
  if (!node) return tf::errors::invalid_argument("--feed ", arg, ": the graph has no node '", name, "'");
  const tf::dtype type = g[*node].spec.type;
  auto t = tf::tensor::allocate(type, *s);
  if (!t.ok()) return t.status();
  tf::visit(type, [&](auto ty) {
    using T = typename decltype(ty)::type;
    T* p = static_cast<T*>(t->data());
    for (std::int64_t i = 0; i < t->num_elements(); ++i) p[i] = static_cast<T>(static_cast<float>(value));
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

}  // namespace

int main(int argc, char** argv) {
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
    else if (a == "--threads" && v) threads = std::atoi(v);
    else if (a == "--trace" && v) trace_path = v;
    else if (a == "--dot" && v) dot_path = v;
    else return fail("unknown or incomplete argument '" + a + "'");
  }

  auto def = tf::load_graph(argv[1]);
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
  if (!dot_path.empty()) std::ofstream(dot_path) << g->to_dot();

  tf::cpu device;
  tf::runtime_session<tf::cpu> session(g, device, threads);
  tf::run_options options;
  tf::run_metadata metadata;
  if (!trace_path.empty()) options.trace = tf::trace_level::full;
  auto out = session.run(feeds, fetches, targets, options, &metadata);
  if (!out.ok()) return fail(out.status().to_string());
  for (std::size_t i = 0; i < fetches.size(); ++i) print(fetches[i], (*out)[i]);
  if (!trace_path.empty()) {
    std::ofstream(trace_path) << metadata.to_chrome_trace();
    std::printf("trace: %zu nodes written to %s\n", metadata.steps.size(), trace_path.c_str());
  }
  return 0;
}
