#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpu_peers.py RESULTS_DIR

PyTorch on GPU:0 against typeflow's bench_gpu on the same GPU: the MLP and the CNN of
examples/models.hpp at batch 1 and 64, with the weights and inputs of peers.py (models::pattern),
in eager mode and replayed as a CUDA graph (torch.cuda.CUDAGraph). Each run copies the input in and
the softmax out, as bench_gpu's static session does; each peer's output is checked against the
float64 reference before it is timed. Reads RESULTS_DIR/bench_gpu.json (typeflow's times) and
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
    ours = {}
    typeflow_json = results / "bench_gpu.json"
    if typeflow_json.exists():
        for r in json.loads(typeflow_json.read_text()):
            ours[r["case"]] = r["typeflow"]
    records = []
    for model in ("MLP", "CNN"):
        for batch in (1, 64):
            expected = peers.reference(model, peers.model_input(model, batch), peers.weights(model))
            for name, graph in (("PyTorch eager (CUDA)", False), ("PyTorch CUDA graph", True)):
                run = torch_gpu_runner(torch, np, peers, model, batch, graph)
                diff = float(np.abs(run() - expected).max())
                if diff > peers.TOLERANCE:
                    print(f"gpu_peers: {name}, {model} batch {batch}: output differs from the reference by {diff}")
                    continue
                ms = peers.time_ms(run)
                case = f"{model.lower()} batch {batch}, static session"
                mine = ours.get(case)
                if mine is not None:
                    records.append({"benchmark": "gpu peers", "case": f"{model} batch {batch}", "metric": "time",
                                    "unit": "ms", "typeflow": mine, "baseline": ms, "baseline_name": name,
                                    "ratio": mine / ms, "spread": 0})
                print(f"{name:24} {model} batch {batch:3}: {ms:.3f} ms"
                      + (f", typeflow {mine:.3f} ms ({mine / ms:.2f}x)" if mine is not None else ""))
    (results / "gpu_peers.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
