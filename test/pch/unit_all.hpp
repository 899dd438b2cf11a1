// SPDX-License-Identifier: Apache-2.0
// What every unit test includes (test/unit/support.hpp): Catch2, and what the must-not-compile cases
// include (typeflow and its extern kernel tables), precompiled once with the unit tests' own flags
// (GCC and Clang, test/meson.build) and pre-included in each of them, so that each spends its compile
// time on its own cases rather than on parsing these again (about 7 of test_core's 13.6 seconds).
// Meson's per-target precompiled headers would build one per executable.
// (No #pragma once: it is the main file when precompiled, and pre-included once.)

#include <catch2/catch.hpp>

#include "typeflow_all.hpp"
