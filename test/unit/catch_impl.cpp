// SPDX-License-Identifier: Apache-2.0
// Catch2's implementation and runner, compiled once and linked into every test executable: the unit
// tests' main (main.cpp), the GPU tests' (test/cuda/main.cpp) and the generated ONNX models'
// (test/onnx) are then a few lines each, not another copy of it (15 s of compile time apiece).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_runner.hpp"

int typeflow::test::run_catch(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
