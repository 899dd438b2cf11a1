// SPDX-License-Identifier: Apache-2.0
// Instantiating the default kernels once per program instead of once per translation unit.
//
// A runtime graph can run any op of its registry, so the first translation unit that makes one
// instantiates every kernel of the registry for every dtype: about 110 s and 3.4 GB with g++ -O2
// for tf::default_registry on tf::cpu, as much again on tf::thread_pool, against a few seconds for the rest. Including this header
// declares that table `extern`: the translation unit compiles in seconds and links against the
// one translation unit of the program that includes <typeflow/registry/instantiate_kernels.hpp>
// (a link error naming kernels_of<...> means no unit does).
//
//   // every file that uses runtime graphs          // kernels.cpp, once in the program
//   #include <typeflow/typeflow.hpp>                 #include <typeflow/registry/instantiate_kernels.hpp>
//   #include <typeflow/registry/extern_kernels.hpp>
//
// The unit that instantiates a table builds every op of the registry from its attributes, so the
// op_attributes specializations of a program's own ops must be visible there (put them in the
// header that defines the ops). A registry whose last list is cpu_kernel_list
// (registry<my_kernels, cpu_kernel_list>) needs nothing more: its table holds only the kernels of
// the lists before it and hands every other lookup to default_registry's table, the one declared
// here (registry/kernel_table.hpp, kernel_table::next), so a program whose units include this
// header and use such a registry links the unit that includes instantiate_kernels.hpp, as for the
// default registry itself. A program with any other registry, or a device of its own, does the same
// for its pair with one line each:
//   extern template const tf::kernel_table<my_device>& tf::kernels_of<my_registry, my_device>();  // header
//   template const tf::kernel_table<my_device>& tf::kernels_of<my_registry, my_device>();         // one .cpp
// A .cpp that holds only such tables includes <typeflow/registry/dispatch_table.hpp> and this header,
// not instantiate_kernels.hpp, which would instantiate the default tables there again
// (test/cuda/gpu_kernels.cpp: 440 s of CPU with it, 38 s without). Tables whose registries share
// kernels are cheapest in one unit, where the shared kernels are instantiated once.
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/device/cpu.hpp>
#include <typeflow/device/thread_pool.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/kernel_table.hpp>

namespace typeflow {

extern template const kernel_table<cpu>& kernels_of<default_registry, cpu>();
extern template const kernel_table<thread_pool>& kernels_of<default_registry, thread_pool>();

}  // namespace typeflow
