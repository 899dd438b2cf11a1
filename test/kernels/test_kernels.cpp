// SPDX-License-Identifier: Apache-2.0
// The kernel tables of a build with tests, in one unit: tf::default_registry's on tf::cpu and
// tf::thread_pool (as default_kernels.cpp), the placement tests' registry
// (test/unit/placement_registry.hpp) on tf::cpu, tf::thread_pool and remote_device, and the GPU
// runtime-graph tests' registry (test/cuda/gpu_registry.hpp) on tf::cpu. Those registries end with
// typeflow's CPU kernel list, so their tables hold only their own lists' kernels (none, for the GPU
// registry on tf::cpu) and hand the rest to the default tables (registry/kernel_table.hpp). Its
// cuda<0> table is in test/cuda/gpu_kernels.cpp, with the GPU tests, which link libtypeflow_cuda; a
// build without them (the sanitizer builds) leaves that registry out (TYPEFLOW_TEST_GPU_REGISTRY unset).
#include <typeflow/registry/instantiate_kernels.hpp>

#include "../unit/placement_registry.hpp"
#ifdef TYPEFLOW_TEST_GPU_REGISTRY
#include "../cuda/gpu_registry.hpp"
#endif

template const typeflow::kernel_table<typeflow::cpu>& typeflow::kernels_of<typeflow::test::placement_registry, typeflow::cpu>();
template const typeflow::kernel_table<typeflow::thread_pool>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::thread_pool>();
template const typeflow::kernel_table<typeflow::test::remote_device>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::test::remote_device>();
#ifdef TYPEFLOW_TEST_GPU_REGISTRY
template const typeflow::kernel_table<typeflow::cpu>& typeflow::kernels_of<typeflow::test::gpu_registry, typeflow::cpu>();
#endif
