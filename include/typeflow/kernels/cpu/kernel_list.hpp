// SPDX-License-Identifier: Apache-2.0
// cpu_kernel_list: every CPU kernel family typeflow ships, in one Hana type list.
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/cpu/array.hpp>
#include <typeflow/kernels/cpu/binary.hpp>
#include <typeflow/kernels/cpu/conv2d.hpp>
#include <typeflow/kernels/cpu/fused.hpp>
#include <typeflow/kernels/cpu/linalg.hpp>
#include <typeflow/kernels/cpu/nn.hpp>
#include <typeflow/kernels/cpu/pool.hpp>
#include <typeflow/kernels/cpu/reduction.hpp>
#include <typeflow/kernels/cpu/resize.hpp>
#include <typeflow/kernels/cpu/top_k.hpp>
#include <typeflow/kernels/cpu/unary.hpp>

namespace typeflow {

// Named (a struct), so that diagnostics print `cpu_kernel_list`, not every family in it.
struct cpu_kernel_list : named_kernel_list<concat_kernel_lists<
    cpu_kernels::unary_kernels,
    cpu_kernels::binary_kernels,
    cpu_kernels::conv2d_kernels,
    cpu_kernels::linalg_kernels,
    cpu_kernels::nn_kernels,
    cpu_kernels::pool_kernels,
    cpu_kernels::reduction_kernels,
    cpu_kernels::resize_kernels,
    cpu_kernels::top_k_kernels,
    cpu_kernels::array_kernels,
    cpu_kernels::fused_kernels>> {};

} // namespace typeflow
