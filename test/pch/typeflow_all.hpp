// SPDX-License-Identifier: Apache-2.0
// What the must-not-compile cases and the README's blocks include, precompiled once (GCC) for all of
// them: each then spends its time on the error it checks, not on parsing typeflow again (about 9 of
// its 11 seconds). The default kernel tables are declared extern, as the README checker needs.
// (No #pragma once: it is the main file when precompiled, and pre-included once.)

#include <typeflow/typeflow.hpp>
#include <typeflow/registry/extern_kernels.hpp>
