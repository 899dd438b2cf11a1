#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compile_time.py SOURCE_ROOT CXX [--json FILE] [--only TEXT]

Compile time and peak memory (BENCHMARKS.md, "Compile time"), with release flags:
  - `#include <typeflow/typeflow.hpp>` alone, against including Eigen's Tensor module alone
    (the part of the cost typeflow cannot avoid);
  - each unit-test translation unit, against the same include-only baseline;
  - a unit that runs a runtime graph on the default registry: on its own (it instantiates every
    kernel of the registry), with registry/extern_kernels.hpp (the kernels compiled elsewhere), and
    the one unit that compiles them (registry/instantiate_kernels.hpp), against the same baseline;
  - static graphs of 64, 256, 1024 and 4096 trivial nodes (a chain of adds), a layered random DAG
    of 1024 adds (two inputs a node) and residual stacks
    x = relu(matmul(x, w_i)) + x of 16, 64 and 256 blocks (4 nodes a block), each built, planned,
    put in a session and run once, against the same include-only baseline: written with
    expressions ("static graph, ...") and by a graph_builder's build function ("graph_builder, ...");
  - examples/transformer.cpp, the 12-layer transformer encoder (with GCC also with the collector
    flags of this project's own build, meson.build), and that model's static graph alone
    in a session on cpu (what a program pays for the model as a type), its kernels compiled in place
    and from the program's kernel table (tf::dispatched<>), and in sessions on cpu and thread_pool
    (what a second device costs), against the same baseline.
Each figure is the median of three compilations (one for the graphs, the transformer and the unit
tests), measured with /usr/bin/time. --only TEXT measures
only the cases whose name contains TEXT (and the baselines).
"""
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile

root = pathlib.Path(sys.argv[1]).resolve()
cxx = sys.argv[2]
json_path = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
flags = ["-std=c++20", "-O3", "-DNDEBUG", "-march=native", "-DEIGEN_USE_THREADS", f"-I{root/'include'}",
         "-isystem", "/usr/include/eigen3", "-c", "-o", os.devnull]


def is_gcc():
    """Whether the compiler is GCC: Clang and the compilers built on it define __GNUC__ too, and __clang__."""
    predefined = subprocess.run([cxx, "-dM", "-E", "-x", "c++", os.devnull], capture_output=True, text=True).stdout
    return "__GNUC__" in predefined and "__clang__" not in predefined


def measure(source: pathlib.Path, reps: int = 3, extra=()):
    seconds, peaks = [], []
    for _ in range(reps):
        proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", cxx, *flags, *extra, str(source)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"compiling {source} failed:\n{proc.stderr[-3000:]}")
        wall, peak_kb = proc.stderr.strip().splitlines()[-1].split()
        seconds.append(float(wall))
        peaks.append(int(peak_kb) / 1024)
    return statistics.median(seconds), max(peaks)


records = []


def wanted(case):
    return only in case


def report(case, ours, base, base_name):
    for metric, unit, i in (("compile time", "s", 0), ("peak memory", "MiB", 1)):
        r = {"benchmark": "compile", "case": case, "metric": metric, "unit": unit, "typeflow": round(ours[i], 3),
             "baseline": round(base[i], 3), "baseline_name": base_name, "ratio": round(ours[i] / base[i], 3)}
        records.append(r)
        print(f"{'compile':<34} {case + ' (' + metric + ')':<46} {ours[i]:>9.2f}{unit:<3} {base[i]:>9.2f}{unit:<3}"
              f" {r['ratio']:>7.3f}  {base_name}", flush=True)


def graph_source(leaf, lines, output, dims):
    """A translation unit that builds a static graph from `lines`, then plans and runs it once."""
    body = "\n".join("  " + l for l in lines)
    return f"""#include <typeflow/typeflow.hpp>
namespace tf = typeflow;
constexpr auto n0 = tf::input<"{leaf}", float, tf::static_shape<{dims}>>;
constexpr auto x = n0;
int main() {{
{body}
  tf::cpu device;
  tf::session s(tf::graph({output}), device);
  auto t = tf::tensor::filled<float>(tf::static_shape<{dims}>::value, 1.0f);
  auto r = s.run(tf::feed(x, *t), tf::fetch({output}));
  return r.ok() ? 0 : 1;
}}
"""


def builder_source(leaf, lines, output, dims):
    """The same graph written as a graph_builder's build function (graph/graph_builder.hpp): `lines`
    are statements of its body, with `b` the builder; planned and run once as graph_source's."""
    body = "\n".join("  " + l for l in lines)
    return f"""#include <typeflow/typeflow.hpp>
namespace tf = typeflow;
constexpr auto build(tf::graph_builder& b) {{
  auto n0 = b.input("{leaf}", tf::dtype::f32, tf::shape{{{dims}}});
  auto x = n0;
{body}
  return {output};
}}
using model = tf::built<build>;
int main() {{
  tf::cpu device;
  tf::session s(model::graph{{}}, device);
  auto t = tf::tensor::filled<float>(tf::shape{{{dims}}}, 1.0f);
  auto r = s.run(tf::feed(model::node<"{leaf}">, *t), tf::fetch(model::output<0>));
  return r.ok() ? 0 : 1;
}}
"""


def layered_dag(layers=32, width=32, seed=17):
    """A layered random DAG of 1024 adds: 31 layers of 32 nodes, node j of a layer the sum of node j
    of the layer before it and a node drawn (fixed seed) from any earlier layer, the last layer
    summed by a tree: every node is live. (name, a, b) per node, in order, and the output's name."""
    rng = random.Random(seed)
    names = [["x"]]
    nodes = []
    for l in range(1, layers):
        row = []
        earlier = [n for r in names for n in r]
        for j in range(width):
            a, b = names[-1][j % len(names[-1])], rng.choice(earlier)
            nodes.append((f"d{l}_{j}", a, b))
            row.append(f"d{l}_{j}")
        names.append(row)
    level = names[-1]
    k = 0
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            nodes.append((f"s{k}", level[i], level[i + 1]))
            nxt.append(f"s{k}")
            k += 1
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return nodes, level[0]


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    (tmp / "eigen_only.cpp").write_text("#include <unsupported/Eigen/CXX11/Tensor>\nint main() { return 0; }\n")
    (tmp / "typeflow_only.cpp").write_text("#include <typeflow/typeflow.hpp>\nint main() { return 0; }\n")
    base = measure(tmp / "eigen_only.cpp")
    included = measure(tmp / "typeflow_only.cpp")
    report("#include <typeflow/typeflow.hpp>", included, base, "#include Eigen Tensor")
    base = included
    runtime_unit = """#include <typeflow/typeflow.hpp>
{extern}namespace tf = typeflow;
int main() {{
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[2]\\ny = exp(x)\\n");
  auto g = tf::runtime_graph<tf::cpu>::make(std::move(*def));
  tf::cpu device;
  tf::runtime_session<tf::cpu> s(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), device);
  auto x = tf::tensor::filled<float>(tf::shape{{2}}, 1.0f);
  return s.run({{{{"x", *x}}}}, {{"y"}}).ok() ? 0 : 1;
}}
"""
    (tmp / "runtime_alone.cpp").write_text(runtime_unit.format(extern=""))
    (tmp / "runtime_extern.cpp").write_text(
        runtime_unit.format(extern="#include <typeflow/registry/extern_kernels.hpp>\n"))
    (tmp / "kernels.cpp").write_text("#include <typeflow/registry/instantiate_kernels.hpp>\n")
    for case, source in (("runtime graph unit, kernels instantiated in it", "runtime_alone.cpp"),
                         ("runtime graph unit, extern_kernels.hpp", "runtime_extern.cpp"),
                         ("instantiate_kernels.hpp (once per program)", "kernels.cpp")):
        if wanted(case):
            report(case, measure(tmp / source, reps=1), base, "#include <typeflow/typeflow.hpp>")
    for n in (64, 256, 1024, 4096):
        if not wanted(f"static graph, chain of {n} nodes"):
            continue
        lines = [f"constexpr auto n{i} = n{i - 1} + x;" for i in range(1, n)]
        (tmp / f"chain_{n}.cpp").write_text(graph_source("x", lines, f"n{n - 1}", "2"))
        report(f"static graph, chain of {n} nodes", measure(tmp / f"chain_{n}.cpp", reps=1), base,
               "#include <typeflow/typeflow.hpp>")
    for blocks in (16, 64, 256):
        if not wanted(f"static graph, residual stack of {blocks} blocks"):
            continue
        lines = []
        for i in range(1, blocks + 1):
            lines.append(f'constexpr auto w{i} = tf::variable<"w{i}", float, tf::static_shape<8, 8>>;')
            lines.append(f"constexpr auto n{i} = tf::relu(tf::matmul(n{i - 1}, w{i})) + n{i - 1};")
        (tmp / f"residual_{blocks}.cpp").write_text(graph_source("x", lines, f"n{blocks}", "2, 8"))
        report(f"static graph, residual stack of {blocks} blocks", measure(tmp / f"residual_{blocks}.cpp", reps=1),
               base, "#include <typeflow/typeflow.hpp>")
    # The layered random DAG of 1024 adds (layered_dag), written with expressions.
    case = "static graph, layered random DAG of 1024 nodes"
    if wanted(case):
        nodes, out = layered_dag()
        lines = [f"constexpr auto {n} = {a} + {b};" for n, a, b in nodes]
        (tmp / "dag_1024.cpp").write_text(graph_source("x", lines, out, "2"))
        report(case, measure(tmp / "dag_1024.cpp", reps=1), base, "#include <typeflow/typeflow.hpp>")
    # The same graphs written by a graph_builder's build function.
    for n in (64, 256, 1024, 4096):
        case = f"graph_builder, chain of {n} nodes"
        if wanted(case):
            (tmp / f"built_chain_{n}.cpp").write_text(
                builder_source("x", [f"for (int i = 1; i < {n}; ++i) x = x + n0;"], "x", "2"))
            report(case, measure(tmp / f"built_chain_{n}.cpp", reps=1), base, "#include <typeflow/typeflow.hpp>")
    for blocks in (16, 64, 256):
        case = f"graph_builder, residual stack of {blocks} blocks"
        if wanted(case):
            lines = [f"for (int i = 1; i <= {blocks}; ++i)",
                     "  x = tf::relu(tf::matmul(x, b.variable(tf::scoped(\"w\", i), tf::dtype::f32, tf::shape{8, 8}))) + x;"]
            (tmp / f"built_residual_{blocks}.cpp").write_text(builder_source("x", lines, "x", "2, 8"))
            report(case, measure(tmp / f"built_residual_{blocks}.cpp", reps=1), base,
                   "#include <typeflow/typeflow.hpp>")
    case = "graph_builder, layered random DAG of 1024 nodes"
    if wanted(case):
        nodes, out = layered_dag()
        lines = [f"auto {n} = {a} + {b};" for n, a, b in nodes]
        (tmp / "built_dag_1024.cpp").write_text(builder_source("x", lines, out, "2"))
        report(case, measure(tmp / "built_dag_1024.cpp", reps=1), base, "#include <typeflow/typeflow.hpp>")
    # The 12-layer transformer encoder (examples/transformer.cpp): its static graph of about 530
    # nodes in static sessions on cpu, thread_pool and the parallel executor, the hand-written Eigen
    # network, and the same graph as a runtime graph on two policies (kernels extern).
    case = "examples/transformer.cpp (12 layers, static + runtime graph)"
    if wanted(case):
        report(case, measure(root / "examples" / "transformer.cpp", reps=1), base, "#include <typeflow/typeflow.hpp>")
    # The same file with the garbage-collector flags this project's own build gives GCC (meson.build,
    # gcc_collector_args): faster for more memory. GCC only.
    case = "examples/transformer.cpp with GCC's collector flags (this project's build)"
    if wanted(case) and is_gcc():
        report(case, measure(root / "examples" / "transformer.cpp", reps=1,
                             extra=["--param=ggc-min-expand=200", "--param=ggc-min-heapsize=1048576"]),
               base, "#include <typeflow/typeflow.hpp>")
    # What a program pays for the model as a type: its static graph in one session on cpu, run once,
    # with the kernels compiled in place, and with the kernels of the program's kernel table
    # (tf::dispatched<>, the table declared extern: registry/dispatched.hpp); and in two sessions, on
    # cpu and on thread_pool: what a second device costs.
    for case, extern, registry, devices in (
            ("transformer 12 layers as a static graph, one cpu session", "", "", ["tf::cpu device;"]),
            ("transformer 12 layers as a static graph, one cpu session, kernels from the table",
             "#include <typeflow/registry/extern_kernels.hpp>", ", tf::dispatched<>", ["tf::cpu device;"]),
            ("transformer 12 layers as a static graph, cpu and thread_pool sessions, kernels from the table",
             "#include <typeflow/registry/extern_kernels.hpp>", ", tf::dispatched<>",
             ["tf::cpu device;", "tf::thread_pool device(2);"])):
        if not wanted(case):
            continue
        source = tmp / f"transformer_static_{len(devices)}{'_dispatched' if registry else ''}.cpp"
        runs = "\n".join(f"  {{\n    {d}\n    if (run_once(device) != 0) return 1;\n  }}" for d in devices)
        source.write_text(f"""#include "{root / 'examples' / 'transformer.hpp'}"
{extern}
namespace tf = typeflow;
using model = models::transformer<models::transformer_config{{.layers = 12, .hidden = 256, .heads = 4, .ffn = 1024, .sequence = 128}}>;
template <class Device>
int run_once(Device& device) {{
  tf::session<model::built::graph, Device{registry}> s(model::built::graph{{}}, device);
  const model::weights w;
  if (!model::initialize(s, w).ok()) return 1;
  auto r = s.run(tf::feed(model::built::node<"x">, model::input(1)), tf::fetch(model::built::output<0>));
  return r.ok() ? 0 : 1;
}}
int main() {{
{runs}
  return 0;
}}
""")
        report(case, measure(source, reps=1), base, "#include <typeflow/typeflow.hpp>")
    for test in sorted((root / "test" / "unit").glob("test_*.cpp")):
        if not wanted(f"unit test {test.stem}"):
            continue
        report(f"unit test {test.stem}", measure(test, reps=1), base, "#include Eigen Tensor")

if json_path:
    pathlib.Path(json_path).write_text(json.dumps(records, indent=2) + "\n")
