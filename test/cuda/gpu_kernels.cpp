// SPDX-License-Identifier: Apache-2.0
// The GPU kernel table of the GPU runtime-graph tests' registry (gpu_registry.hpp): the GPU kernel
// types, which call libtypeflow_cuda. Its CPU table is in test/kernels/test_kernels.cpp, where the
// CPU kernels it shares with the other registries are instantiated once.
// Not instantiate_kernels.hpp, which would instantiate tf::default_registry's CPU tables here again
// (they are in test/kernels/test_kernels.cpp).
#include <typeflow/registry/dispatch_table.hpp>
#include <typeflow/registry/extern_kernels.hpp>

#include "gpu_registry.hpp"

template const typeflow::kernel_table<typeflow::cuda<0>>&
typeflow::kernels_of<typeflow::test::gpu_registry, typeflow::cuda<0>>();
