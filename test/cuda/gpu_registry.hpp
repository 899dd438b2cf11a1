// SPDX-License-Identifier: Apache-2.0
// The registry of the GPU runtime-graph tests: the GPU kernels first, then the CPU's. Its kernel
// tables are instantiated once (extern here): tf::cpu's in test/kernels/test_kernels.cpp, with the
// other registries' CPU tables, and tf::cuda<0>'s in gpu_kernels.cpp. A runtime graph over both
// devices can run any op of either list.
#pragma once

#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

namespace typeflow::test {

using gpu_registry = registry<cuda_kernel_list, cpu_kernel_list>;

}  // namespace typeflow::test

extern template const typeflow::kernel_table<typeflow::cpu>& typeflow::kernels_of<typeflow::test::gpu_registry, typeflow::cpu>();
extern template const typeflow::kernel_table<typeflow::cuda<0>>&
typeflow::kernels_of<typeflow::test::gpu_registry, typeflow::cuda<0>>();
