// SPDX-License-Identifier: Apache-2.0
// What every unit test includes (test/unit/support.hpp): Catch2, typeflow and its extern kernel
// tables, precompiled once (GCC) with the unit tests' own flags and pre-included in each of them, so
// that each spends its compile time on its own cases rather than on parsing these again (about 7 of
// test_core's 13.6 seconds). Meson's per-target precompiled headers would build one per executable.
// (No #pragma once: it is the main file when precompiled, and pre-included once.)

#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>
#include <typeflow/registry/extern_kernels.hpp>
