#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""peers.py RESULTS_DIR BENCH_MODELS [--rounds N] [--engines a,b,...]

typeflow against the runtimes people would use instead, on the networks of examples/models.hpp:
the MLP 784-1024-1024-10 and the small CNN (3x3 convolutions 1->32->64, pool, 64->64, pool,
dense 3136->128->10, softmax), batch 1 and 64, 1 and 2 threads, with bench_models' weights and
inputs (models::pattern). The peers: ONNX Runtime, TensorFlow (a graph session and tf.function),
PyTorch (eager and TorchScript). Each peer runs in a process of its own per thread count (their
thread settings are per process), with intra-op threads set to the count and inter-op threads to
1; each checks its outputs against a float64 NumPy forward pass before it is timed. Rounds
interleave every peer with a run of typeflow's own bench_models binary; the figures are medians
over rounds of medians over runs. Writes RESULTS_DIR/peers.json (the benchmark JSON format: one
record per case and peer, typeflow's time against the peer's, and one against the fastest peer;
typeflow with its default kernels, and with oneDNN's, "(oneDNN)", where bench_models has them).

Layouts: typeflow and TensorFlow take the CNN's images as NHWC with HWIO filters; ONNX Runtime and
PyTorch take NCHW with OIHW filters and the first dense layer's rows permuted to match, prepared
once outside the timed runs (each engine gets its native layout).
"""
import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ENGINES = ["onnxruntime", "tensorflow-session", "tf.function", "pytorch-eager", "torchscript"]
NAMES = {
    "onnxruntime": "ONNX Runtime",
    "tensorflow-session": "TensorFlow session",
    "tf.function": "tf.function",
    "pytorch-eager": "PyTorch eager",
    "torchscript": "TorchScript",
}
CASES = [("MLP", 1), ("MLP", 64), ("CNN", 1), ("CNN", 64)]
TOLERANCE = 1e-4  # max |difference| of the softmax outputs against the float64 reference


def case_name(model, batch, threads):
    return f"{model} batch {batch}, {threads} thread{'s' if threads > 1 else ''}"


def pattern(shape, scale, phase):
    """models::pattern: scale * sin(0.37 i + phase), computed in double, stored as float."""
    i = np.arange(math.prod(shape), dtype=np.float64)
    return (scale * np.sin(0.37 * i + phase)).astype(np.float32).reshape(shape)


def weights(model):
    if model == "MLP":
        return {
            "w1": pattern((784, 1024), 1 / math.sqrt(784), 0.1), "b1": pattern((1024,), 0.1, 0.2),
            "w2": pattern((1024, 1024), 1 / math.sqrt(1024), 0.3), "b2": pattern((1024,), 0.1, 0.4),
            "w3": pattern((1024, 10), 1 / math.sqrt(1024), 0.5), "b3": pattern((10,), 0.1, 0.6),
        }
    return {
        "k1": pattern((3, 3, 1, 32), 1 / 3, 0.1), "c1": pattern((32,), 0.05, 0.2),
        "k2": pattern((3, 3, 32, 64), 1 / math.sqrt(288), 0.3), "c2": pattern((64,), 0.05, 0.4),
        "k3": pattern((3, 3, 64, 64), 1 / math.sqrt(576), 0.5), "c3": pattern((64,), 0.05, 0.6),
        "w4": pattern((3136, 128), 1 / math.sqrt(3136), 0.7), "b4": pattern((128,), 0.05, 0.8),
        "w5": pattern((128, 10), 1 / math.sqrt(128), 0.9), "b5": pattern((10,), 0.05, 1.0),
    }


def model_input(model, batch):
    return pattern((batch, 784) if model == "MLP" else (batch, 28, 28, 1), 1.0, 0.0)


def nchw(w):
    """The CNN's weights for NCHW engines: OIHW filters, w4's rows from (h, w, c) to (c, h, w) order."""
    out = dict(w)
    for k in ("k1", "k2", "k3"):
        out[k] = np.ascontiguousarray(w[k].transpose(3, 2, 0, 1))
    out["w4"] = np.ascontiguousarray(w["w4"].reshape(7, 7, 64, 128).transpose(2, 0, 1, 3).reshape(3136, 128))
    return out


# --- the float64 reference ---------------------------------------------------------------------

def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def reference(model, x, w):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)
    if model == "MLP":
        h = np.maximum(x @ w["w1"] + w["b1"], 0)
        h = np.maximum(h @ w["w2"] + w["b2"], 0)
        return softmax(h @ w["w3"] + w["b3"])

    def conv_relu(a, k, c):  # 3x3, stride 1, SAME, NHWC
        n, hh, ww, ci = a.shape
        p = np.pad(a, ((0, 0), (1, 1), (1, 1), (0, 0)))
        cols = np.stack([p[:, i:i + hh, j:j + ww, :] for i in range(3) for j in range(3)], axis=3)
        return np.maximum(cols.reshape(n * hh * ww, 9 * ci) @ k.reshape(9 * ci, -1) + c, 0).reshape(n, hh, ww, -1)

    def pool(a):  # 2x2, stride 2
        n, hh, ww, c = a.shape
        return a.reshape(n, hh // 2, 2, ww // 2, 2, c).max(axis=(2, 4))

    a = pool(conv_relu(conv_relu(x, w["k1"], w["c1"]), w["k2"], w["c2"]))
    a = pool(conv_relu(a, w["k3"], w["c3"]))
    d = np.maximum(a.reshape(a.shape[0], 3136) @ w["w4"] + w["b4"], 0)
    return softmax(d @ w["w5"] + w["b5"])


# --- the peers ---------------------------------------------------------------------------------

def onnxruntime_runner(model, batch, threads):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    w = weights(model) if model == "MLP" else nchw(weights(model))
    x = model_input(model, batch)
    if model == "CNN":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    nodes, inits = [], [numpy_helper.from_array(v, k) for k, v in w.items()]

    def dense(src, wn, bn, out, relu):
        nodes.append(helper.make_node("MatMul", [src, wn], [out + "_mm"]))
        nodes.append(helper.make_node("Add", [out + "_mm", bn], [out + "_pre" if relu else out]))
        if relu:
            nodes.append(helper.make_node("Relu", [out + "_pre"], [out]))

    if model == "MLP":
        dense("x", "w1", "b1", "h1", True)
        dense("h1", "w2", "b2", "h2", True)
        dense("h2", "w3", "b3", "z", False)
    else:
        src = "x"
        for i, (k, c) in enumerate((("k1", "c1"), ("k2", "c2"), ("k3", "c3"))):
            nodes.append(helper.make_node("Conv", [src, k, c], [f"conv{i}"], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"a{i}"]))
            src = f"a{i}"
            if i >= 1:
                nodes.append(helper.make_node("MaxPool", [src], [f"p{i}"], kernel_shape=[2, 2], strides=[2, 2]))
                src = f"p{i}"
        inits.append(numpy_helper.from_array(np.array([-1, 3136], dtype=np.int64), "flat_shape"))
        nodes.append(helper.make_node("Reshape", [src, "flat_shape"], ["flat"]))
        dense("flat", "w4", "b4", "d4", True)
        dense("d4", "w5", "b5", "z", False)
    nodes.append(helper.make_node("Softmax", ["z"], ["y"], axis=1))
    graph = helper.make_graph(nodes, model.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(proto)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda: session.run(["y"], {"x": x})[0]


def tensorflow_graph(tf, model, x, w):
    """The network on TensorFlow ops (NHWC, HWIO), as typeflow's graph has it."""
    if model == "MLP":
        h = tf.nn.relu(tf.matmul(x, w["w1"]) + w["b1"])
        h = tf.nn.relu(tf.matmul(h, w["w2"]) + w["b2"])
        return tf.nn.softmax(tf.matmul(h, w["w3"]) + w["b3"])
    a = tf.nn.relu(tf.nn.conv2d(x, w["k1"], 1, "SAME") + w["c1"])
    a = tf.nn.relu(tf.nn.conv2d(a, w["k2"], 1, "SAME") + w["c2"])
    a = tf.nn.max_pool2d(a, 2, 2, "VALID")
    a = tf.nn.relu(tf.nn.conv2d(a, w["k3"], 1, "SAME") + w["c3"])
    a = tf.nn.max_pool2d(a, 2, 2, "VALID")
    d = tf.nn.relu(tf.matmul(tf.reshape(a, [-1, 3136]), w["w4"]) + w["b4"])
    return tf.nn.softmax(tf.matmul(d, w["w5"]) + w["b5"])


def tensorflow_session_runner(model, batch, threads):
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, model_input(model, batch).shape)
        w = {k: tf.constant(v) for k, v in weights(model).items()}
        y = tensorflow_graph(tf, model, x, w)
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1)
    session = tf.compat.v1.Session(graph=g, config=config)
    feed = {x: model_input(model, batch)}
    return lambda: session.run(y, feed_dict=feed)


def tf_function_runner(model, batch, threads):
    import tensorflow as tf

    w = {k: tf.constant(v) for k, v in weights(model).items()}
    f = tf.function(lambda x: tensorflow_graph(tf, model, x, w))
    x = tf.constant(model_input(model, batch))
    return lambda: f(x).numpy()


def torch_module(torch, model):
    F = torch.nn.functional

    class MLP(torch.nn.Module):
        def forward(self, x):
            h = F.relu(torch.addmm(self.b1, x, self.w1))
            h = F.relu(torch.addmm(self.b2, h, self.w2))
            return F.softmax(torch.addmm(self.b3, h, self.w3), dim=1)

    class CNN(torch.nn.Module):
        def forward(self, x):
            a = F.relu(F.conv2d(x, self.k1, self.c1, padding=1))
            a = F.max_pool2d(F.relu(F.conv2d(a, self.k2, self.c2, padding=1)), 2)
            a = F.max_pool2d(F.relu(F.conv2d(a, self.k3, self.c3, padding=1)), 2)
            d = F.relu(torch.addmm(self.b4, a.reshape(a.shape[0], 3136), self.w4))
            return F.softmax(torch.addmm(self.b5, d, self.w5), dim=1)

    net = MLP() if model == "MLP" else CNN()
    for k, v in (weights(model) if model == "MLP" else nchw(weights(model))).items():
        net.register_buffer(k, torch.from_numpy(v))
    return net.eval()


def torch_runner(model, batch, threads, script):
    import torch

    net = torch_module(torch, model)
    x = model_input(model, batch)
    if model == "CNN":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    x = torch.from_numpy(x)
    if script:
        with torch.inference_mode():
            net = torch.jit.freeze(torch.jit.script(net))

    def run():
        with torch.inference_mode():
            return net(x).numpy()
    return run


def torch_threads(threads):
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def tensorflow_threads(threads):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)


# Thread settings, once per process (PyTorch refuses a second call).
SETUP = {
    "onnxruntime": lambda t: None,  # per session, in SessionOptions
    "tensorflow-session": lambda t: None,  # per session, in ConfigProto
    "tf.function": tensorflow_threads,
    "pytorch-eager": torch_threads,
    "torchscript": torch_threads,
}

RUNNERS = {
    "onnxruntime": onnxruntime_runner,
    "tensorflow-session": tensorflow_session_runner,
    "tf.function": tf_function_runner,
    "pytorch-eager": lambda m, b, t: torch_runner(m, b, t, False),
    "torchscript": lambda m, b, t: torch_runner(m, b, t, True),
}


def time_ms(run, min_reps=11, min_seconds=0.5):
    for _ in range(3):
        run()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def worker(engine, threads):
    """One peer at one thread count: {case: ms, or an error message}."""
    out = {}
    SETUP[engine](threads)
    for model, batch in CASES:
        name = case_name(model, batch, threads)
        try:
            run = RUNNERS[engine](model, batch, threads)
            y = np.asarray(run(), dtype=np.float64)
            diff = float(np.abs(y - reference(model, model_input(model, batch), weights(model))).max())
            if not diff <= TOLERANCE:
                out[name] = f"outputs differ from the reference by {diff:.3g}"
                continue
            out[name] = time_ms(run)
        except Exception as e:  # a peer that cannot run a case is reported, not fatal
            out[name] = f"{type(e).__name__}: {e}"
    print(json.dumps(out))


def run_worker(engine, threads):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS=str(threads))
    p = subprocess.run([sys.executable, __file__, "--worker", engine, str(threads)], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {case_name(m, b, threads): f"exited {p.returncode}: {tail}" for m, b in CASES}
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_typeflow(binary):
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "models.json"
        subprocess.run([binary, "--json", str(path)], check=True, stdout=subprocess.DEVNULL)
        return {r["case"]: r["typeflow"] for r in json.loads(path.read_text())}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="?")
    parser.add_argument("bench_models", nargs="?")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "THREADS"))
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], int(args.worker[1]))
    if not args.results or not args.bench_models:
        parser.error("RESULTS_DIR and BENCH_MODELS are required")
    engines = args.engines.split(",")
    for e in engines:
        if e not in RUNNERS:
            parser.error(f"unknown engine {e!r}; the engines are {', '.join(ENGINES)}")

    ours, theirs, errors = {}, {}, {}
    for r in range(args.rounds):
        for case, ms in run_typeflow(args.bench_models).items():
            ours.setdefault(case, []).append(ms)
        for threads in (1, 2):
            for engine in engines:
                for case, ms in run_worker(engine, threads).items():
                    if isinstance(ms, str):
                        errors[(engine, case)] = ms
                    else:
                        theirs.setdefault((engine, case), []).append(ms)
        print(f"peers: round {r + 1} of {args.rounds} done", file=sys.stderr)

    for (engine, case), message in sorted(errors.items()):
        print(f"peers: {NAMES[engine]}, {case}: {message}", file=sys.stderr)
    records = []
    for threads in (1, 2):
        for model, batch in CASES:
            case = case_name(model, batch, threads)
            peers = {e: statistics.median(theirs[(e, case)]) for e in engines
                     if (e, case) in theirs and (e, case) not in errors}
            if not peers:
                continue
            fastest = min(peers, key=peers.get)
            # typeflow with its default kernels, and with oneDNN's where bench_models has them.
            for variant in (case, case + " (oneDNN)"):
                if variant not in ours:
                    continue
                tf_ms = statistics.median(ours[variant])
                for engine, peer in peers.items():
                    times = theirs[(engine, case)]
                    records.append({"benchmark": "peers", "case": variant, "metric": "time", "unit": "ms",
                                    "typeflow": tf_ms, "baseline": peer, "baseline_name": NAMES[engine],
                                    "ratio": tf_ms / peer, "spread": (max(times) - min(times)) / peer})
                records.append({"benchmark": "peers", "case": variant + " vs fastest", "metric": "time",
                                "unit": "ms", "typeflow": tf_ms, "baseline": peers[fastest],
                                "baseline_name": NAMES[fastest], "ratio": tf_ms / peers[fastest], "spread": 0.0})
    results = pathlib.Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    (results / "peers.json").write_text(json.dumps(records, indent=1) + "\n")
    for r in records:
        print(f"{r['case']:<34} typeflow {r['typeflow']:8.3f} ms  {r['baseline_name']:<20} {r['baseline']:8.3f} ms"
              f"  {r['ratio']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
