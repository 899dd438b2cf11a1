// SPDX-License-Identifier: Apache-2.0
// default_registry: the kernels typeflow ships. A program extends or overrides it with
// registry<my_kernels, cpu_kernel_list>.
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/kernels/cpu/kernel_list.hpp>
#include <typeflow/registry/registry.hpp>

namespace typeflow {

// A struct rather than an alias, so that diagnostics print `default_registry`.
struct default_registry : registry<cpu_kernel_list> {};

} // namespace typeflow
