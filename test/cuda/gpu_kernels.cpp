// SPDX-License-Identifier: Apache-2.0
// The kernel tables of the GPU runtime-graph tests' registry (gpu_registry.hpp), in one unit.
#include <typeflow/registry/instantiate_kernels.hpp>

#include "gpu_registry.hpp"

template const typeflow::kernel_table<typeflow::cpu>& typeflow::kernels_of<typeflow::test::gpu_registry, typeflow::cpu>();
template const typeflow::kernel_table<typeflow::cuda<0>>&
typeflow::kernels_of<typeflow::test::gpu_registry, typeflow::cuda<0>>();
