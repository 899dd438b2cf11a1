#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpu_peers.py RESULTS_DIR

PyTorch and JAX on GPU:0 against typeflow's bench_gpu on the same GPU: the MLP and the CNN of
examples/models.hpp at batch 1 and 64, with the weights and inputs of peers.py (models::pattern):
PyTorch eager against typeflow's static session run step by step; PyTorch replayed as a CUDA graph
(torch.cuda.CUDAGraph) and JAX's jit (XLA, exact f32 products) against typeflow's session run as a
CUDA graph (tf::cuda_graph). Each run copies the input in and the softmax out, as bench_gpu's
sessions do; each peer's output is checked against the float64 reference before it is timed. Reads RESULTS_DIR/bench_gpu.json (typeflow's times) and
writes RESULTS_DIR/gpu_peers.json in the benchmark JSON format: typeflow's time against each peer's.
Without PyTorch or a CUDA device it says so and writes nothing.
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def torch_gpu_runner(torch, np, peers, model, batch, graph):
    net = peers.torch_module(torch, model).cuda()
    x = peers.model_input(model, batch)
    if model == "CNN":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    host_in = torch.from_numpy(x).pin_memory()
    host_out = torch.empty((batch, 10), dtype=torch.float32).pin_memory()
    device_in = torch.empty_like(host_in, device="cuda")
    if not graph:
        def run():
            with torch.inference_mode():
                device_in.copy_(host_in, non_blocking=True)
                host_out.copy_(net(device_in), non_blocking=True)
                torch.cuda.synchronize()
            return host_out.numpy()
        return run
    # Warm up on a side stream, capture, then replay (PyTorch's documented recipe).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode(), torch.cuda.stream(side):
        for _ in range(3):
            net(device_in)
    torch.cuda.current_stream().wait_stream(side)
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(cuda_graph):
        device_out = net(device_in)

    def replay():
        device_in.copy_(host_in, non_blocking=True)
        cuda_graph.replay()
        host_out.copy_(device_out, non_blocking=True)
        torch.cuda.synchronize()
        return host_out.numpy()
    return replay


def jax_gpu_runner(jax, np, peers, model, batch):
    jnp, lax = jax.numpy, jax.lax
    gpu = jax.devices("gpu")[0]
    w = {k: jax.device_put(v, gpu) for k, v in peers.weights(model).items()}
    x = np.ascontiguousarray(peers.model_input(model, batch))
    if model == "MLP":
        def forward(w, x):
            h = jax.nn.relu(x @ w["w1"] + w["b1"])
            h = jax.nn.relu(h @ w["w2"] + w["b2"])
            return jax.nn.softmax(h @ w["w3"] + w["b3"], axis=1)
    else:
        def conv_relu(a, k, c):  # 3x3, stride 1, SAME, NHWC with HWIO filters, as typeflow's
            return jax.nn.relu(lax.conv_general_dilated(a, k, (1, 1), "SAME",
                                                        dimension_numbers=("NHWC", "HWIO", "NHWC")) + c)

        def pool(a):  # 2x2, stride 2
            return lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

        def forward(w, x):
            a = conv_relu(x, w["k1"], w["c1"])
            a = pool(conv_relu(a, w["k2"], w["c2"]))
            a = pool(conv_relu(a, w["k3"], w["c3"]))
            d = jax.nn.relu(a.reshape(a.shape[0], 3136) @ w["w4"] + w["b4"])
            return jax.nn.softmax(d @ w["w5"] + w["b5"], axis=1)
    compiled = jax.jit(forward)

    def run():
        return np.asarray(compiled(w, jax.device_put(x, gpu)))
    return run


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = pathlib.Path(sys.argv[1])
    try:
        import numpy as np
        import torch

        import peers  # weights, inputs, the float64 reference, the torch modules
    except ImportError as e:
        print(f"gpu_peers: skipped: {e}")
        return
    if not torch.cuda.is_available():
        print("gpu_peers: skipped: PyTorch sees no CUDA device")
        return
    # Exact f32, as typeflow's default and JAX's "highest" below: PyTorch's cuDNN convolutions use
    # TF32 tensor cores unless told not to (its matmuls do not, by default).
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    ours = {}
    typeflow_json = results / "bench_gpu.json"
    if typeflow_json.exists():
        for r in json.loads(typeflow_json.read_text()):
            ours[r["case"]] = r["typeflow"]
    try:
        import jax
        jax.config.update("jax_default_matmul_precision", "highest")  # exact f32, as typeflow's default
        if not jax.devices("gpu"):
            jax = None
    except Exception as e:  # no JAX, or a JAX without a GPU backend
        print(f"gpu_peers: JAX skipped: {e}")
        jax = None
    records = []
    for model in ("MLP", "CNN"):
        for batch in (1, 64):
            expected = peers.reference(model, peers.model_input(model, batch), peers.weights(model))
            runners = [("PyTorch eager (CUDA)", "static session", lambda: torch_gpu_runner(torch, np, peers, model, batch, False)),
                       ("PyTorch CUDA graph", "static session as a CUDA graph",
                        lambda: torch_gpu_runner(torch, np, peers, model, batch, True))]
            if jax is not None:
                runners.append(("JAX jit (XLA)", "static session as a CUDA graph",
                                lambda: jax_gpu_runner(jax, np, peers, model, batch)))
            for name, ours_case, make in runners:
                run = make()
                diff = float(np.abs(run() - expected).max())
                if diff > peers.TOLERANCE:
                    print(f"gpu_peers: {name}, {model} batch {batch}: output differs from the reference by {diff}")
                    continue
                ms = peers.time_ms(run)
                case = f"{model.lower()} batch {batch}, {ours_case}"
                mine = ours.get(case)
                if mine is not None:
                    records.append({"benchmark": "gpu peers", "case": f"{model} batch {batch}, {ours_case}", "metric": "time",
                                    "unit": "ms", "typeflow": mine, "baseline": ms, "baseline_name": name,
                                    "ratio": mine / ms, "spread": 0})
                print(f"{name:24} {model} batch {batch:3}: {ms:.3f} ms"
                      + (f", typeflow {mine:.3f} ms ({mine / ms:.2f}x)" if mine is not None else ""))
    (results / "gpu_peers.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
