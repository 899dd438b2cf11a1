// SPDX-License-Identifier: Apache-2.0
// The kernel tables of a build with tests, in one unit: tf::default_registry's on tf::cpu and
// tf::thread_pool (as default_kernels.cpp), and the placement tests' registry
// (test/unit/placement_registry.hpp) on tf::cpu, tf::thread_pool and remote_device. Both registries
// hold typeflow's CPU kernels; in one unit those are instantiated once for both tables.
#include <typeflow/registry/instantiate_kernels.hpp>

#include "../unit/placement_registry.hpp"

template const typeflow::kernel_table<typeflow::cpu>& typeflow::kernels_of<typeflow::test::placement_registry, typeflow::cpu>();
template const typeflow::kernel_table<typeflow::thread_pool>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::thread_pool>();
template const typeflow::kernel_table<typeflow::test::remote_device>&
typeflow::kernels_of<typeflow::test::placement_registry, typeflow::test::remote_device>();
