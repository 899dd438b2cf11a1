// SPDX-License-Identifier: Apache-2.0
// The one translation unit of a program that instantiates tf::default_registry's kernel table on
// tf::cpu and tf::thread_pool for every unit that includes <typeflow/registry/extern_kernels.hpp>.
// Include it in exactly one .cpp file of a program (in two, the program is ill-formed and no
// diagnostic is required: GCC and Clang emit the instantiations as weak symbols and keep one).
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/device/cpu.hpp>
#include <typeflow/device/thread_pool.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/dispatch_table.hpp>
// The extern declarations first: an explicit instantiation declaration may not follow the definition.
#include <typeflow/registry/extern_kernels.hpp>

namespace typeflow {

template const kernel_table<cpu>& kernels_of<default_registry, cpu>();
template const kernel_table<thread_pool>& kernels_of<default_registry, thread_pool>();

}  // namespace typeflow
