// SPDX-License-Identifier: Apache-2.0
// A small CNN on 28x28x1 inputs (three 3x3 convolutions with ReLU, two max-pools, dense 128 + ReLU,
// dense 10, softmax) as a static graph with deterministic weights.
//   cnn [BATCH] [--threads N]
// Prints the top-1 class of each row, the largest absolute difference from the same network written
// by hand against Eigen in this program, and the median latency of a run.
#include "example_main.hpp"

int main(int argc, char** argv) { return models::example_main<models::cnn>(argc, argv); }
