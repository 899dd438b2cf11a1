// SPDX-License-Identifier: Apache-2.0
// tf::default_registry's kernel tables on tf::cpu and tf::thread_pool, instantiated once for every
// example and benchmark that includes <typeflow/registry/extern_kernels.hpp> in a build without
// tests (test_kernels.cpp does it with tests): the one unit a program that runs runtime graphs adds
// (README, "Compile time").
#include <typeflow/registry/instantiate_kernels.hpp>
