// SPDX-License-Identifier: Apache-2.0
// The unit tests' main: Catch2's runner (catch_impl.cpp, compiled once).
#include "catch_runner.hpp"

int main(int argc, char* argv[]) { return typeflow::test::run_catch(argc, argv); }
