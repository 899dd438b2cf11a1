// SPDX-License-Identifier: Apache-2.0
// A 784-1024-1024-10 MLP (bias, ReLU, softmax) as a static graph with deterministic weights.
//   mlp [BATCH] [--threads N]
// Prints the top-1 class of each row, the largest absolute difference from the same network written
// by hand against Eigen in this program, and the median latency of a run.
#include "example_main.hpp"

int main(int argc, char** argv) { return models::example_main<models::mlp>(argc, argv); }
