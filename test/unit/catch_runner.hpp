// SPDX-License-Identifier: Apache-2.0
// Catch2's runner, defined once in catch_impl.cpp (Catch2 declares its Session only where it compiles
// its implementation).
#pragma once

namespace typeflow::test {

// Runs the test cases linked into the executable with Catch2's command line; its exit status.
int run_catch(int argc, char* argv[]);

}  // namespace typeflow::test
