// SPDX-License-Identifier: Apache-2.0
// cpu_kernel_list: every CPU kernel family typeflow ships, in one Hana type list.
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/cpu/conv2d.hpp>
#include <typeflow/kernels/cpu/pool.hpp>
#include <typeflow/kernels/cpu/unary.hpp>

namespace typeflow {

using cpu_kernel_list = concat_kernel_lists<
    cpu_kernels::unary_kernels,
    cpu_kernels::conv2d_kernels,
    cpu_kernels::pool_kernels>;

} // namespace typeflow
