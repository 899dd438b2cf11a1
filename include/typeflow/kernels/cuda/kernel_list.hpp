// SPDX-License-Identifier: Apache-2.0
// cuda_kernel_list: the GPU kernels typeflow ships, registered for cuda<0>'s family (every cuda<N>),
// in one Hana type list like the CPU's. Put it in a registry next to the CPU list:
//   using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;
// A program whose graph runs an op on the GPU that has no kernel here gets the registry's compile
// error naming the op, the device and the dtype. Using these kernels links libtypeflow_cuda.
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>

#include <typeflow/core/dtype.hpp>
#include <typeflow/device/cuda.hpp>
#include <typeflow/kernels/cuda/array.hpp>
#include <typeflow/kernels/cuda/conv.hpp>
#include <typeflow/kernels/cuda/elementwise.hpp>
#include <typeflow/kernels/cuda/fused.hpp>
#include <typeflow/kernels/cuda/linalg.hpp>
#include <typeflow/kernels/cuda/nn.hpp>
#include <typeflow/kernels/cuda/pool.hpp>
#include <typeflow/kernels/cuda/reduction.hpp>
#include <typeflow/kernels/cuda/resize.hpp>
#include <typeflow/kernels/cuda/top_k.hpp>
#include <typeflow/kernels/kernel.hpp>

namespace typeflow {

namespace cuda_kernels {

using gpu_devices = devices<cuda<0>>;
using gpu_floats = dtypes<float, double, Eigen::half, Eigen::bfloat16>;
using gpu_signed = dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int32_t, std::int64_t>;
using gpu_numbers = dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int32_t, std::int64_t,
                           std::uint8_t>;
using gpu_all = dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int32_t, std::int64_t,
                       std::uint8_t, bool>;

template <class Op, class Types>
using unary = kernel_family<cuda_unary_kernel, Op, gpu_devices, Types>;
template <class Op, class Types>
using binary = kernel_family<cuda_binary_kernel, Op, gpu_devices, Types>;

using elementwise_kernels = kernel_list<
    unary<ops::neg, gpu_signed>, unary<ops::abs, gpu_signed>, unary<ops::square, gpu_signed>,
    unary<ops::relu, gpu_signed>, unary<ops::exp, gpu_floats>, unary<ops::log, gpu_floats>,
    unary<ops::sqrt, gpu_floats>, unary<ops::rsqrt, gpu_floats>, unary<ops::tanh, gpu_floats>,
    unary<ops::sigmoid, gpu_floats>, unary<ops::softplus, gpu_floats>, unary<ops::erf, gpu_floats>,
    unary<ops::gelu, gpu_floats>, unary<ops::leaky_relu, gpu_floats>, unary<ops::hard_sigmoid, gpu_floats>,
    unary<ops::clip, gpu_numbers>,
    binary<ops::add, gpu_numbers>, binary<ops::sub, gpu_numbers>, binary<ops::mul, gpu_numbers>,
    binary<ops::div, gpu_numbers>, binary<ops::maximum, gpu_numbers>, binary<ops::minimum, gpu_numbers>,
    binary<ops::pow, gpu_numbers>, binary<ops::equal, gpu_all>, binary<ops::less, gpu_numbers>,
    binary<ops::greater, gpu_numbers>,
    kernel_family<cuda_cast_kernel, ops::cast, gpu_devices, gpu_all>,
    kernel_template_family<cuda_fused_kernel, ops::fused_elementwise, gpu_devices, gpu_floats>>;

using linalg_kernels = kernel_list<kernel_family<cuda_matmul_kernel, ops::matmul, gpu_devices, gpu_floats>>;

using nn_kernels = kernel_list<
    kernel_family<cuda_bias_add_kernel, ops::bias_add, gpu_devices, gpu_numbers>,
    kernel_family<cuda_layer_norm_kernel, ops::layer_norm, gpu_devices, gpu_floats>,
    kernel_family<cuda_batch_norm_kernel, ops::batch_norm, gpu_devices, gpu_floats>,
    kernel_family<cuda_pool_kernel, ops::max_pool2d, gpu_devices,
                  dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int32_t, std::uint8_t>>,
    kernel_family<cuda_pool_kernel, ops::avg_pool2d, gpu_devices, gpu_floats>,
    kernel_family<cuda_conv2d_kernel, ops::conv2d, gpu_devices, dtypes<float, Eigen::half, Eigen::bfloat16>>,
    kernel_family<cuda_resize_kernel, ops::resize, gpu_devices, gpu_numbers>,
    kernel_family<cuda_top_k_kernel, ops::top_k, gpu_devices,
                  dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t>>>;

// The CPU's reduction dtypes (no 8-bit integers, whose sums wrap at once), with f16 and bf16, which
// accumulate in f32 here.
using gpu_reduced = dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t>;

using reduction_kernels = kernel_list<
    kernel_family<cuda_reduce_kernel, ops::reduce_sum, gpu_devices, gpu_reduced>,
    kernel_family<cuda_reduce_kernel, ops::reduce_mean, gpu_devices, gpu_reduced>,
    kernel_family<cuda_reduce_kernel, ops::reduce_max, gpu_devices, gpu_reduced>,
    kernel_family<cuda_reduce_kernel, ops::reduce_min, gpu_devices, gpu_reduced>,
    kernel_family<cuda_reduce_kernel, ops::reduce_prod, gpu_devices, gpu_reduced>,
    kernel_family<cuda_argmax_kernel, ops::argmax, gpu_devices, gpu_numbers>,
    kernel_family<cuda_softmax_kernel, ops::softmax, gpu_devices, gpu_floats>,
    kernel_family<cuda_softmax_kernel, ops::log_softmax, gpu_devices, gpu_floats>>;

using array_kernels = kernel_list<
    kernel_family<cuda_copy_kernel, ops::reshape, gpu_devices, gpu_all>,
    kernel_family<cuda_copy_kernel, ops::squeeze, gpu_devices, gpu_all>,
    kernel_family<cuda_copy_kernel, ops::expand_dims, gpu_devices, gpu_all>,
    kernel_family<cuda_copy_kernel, ops::identity, gpu_devices, gpu_all>,
    kernel_family<cuda_transpose_kernel, ops::transpose, gpu_devices, gpu_all>,
    kernel_family<cuda_slice_kernel, ops::slice, gpu_devices, gpu_all>,
    kernel_family<cuda_concat_kernel, ops::concat, gpu_devices, gpu_all>,
    kernel_family<cuda_split_kernel, ops::split, gpu_devices, gpu_all>,
    kernel_family<cuda_pad_kernel, ops::pad, gpu_devices, gpu_all>,
    kernel_family<cuda_broadcast_to_kernel, ops::broadcast_to, gpu_devices, gpu_all>,
    kernel_family<cuda_gather_kernel, ops::gather, gpu_devices, gpu_all>,
    kernel_family<cuda_where_kernel, ops::where, gpu_devices, gpu_all>,
    kernel_family<cuda_fill_kernel, ops::fill, gpu_devices, gpu_all>>;

} // namespace cuda_kernels

// Named (a struct), so that diagnostics print `cuda_kernel_list`.
struct cuda_kernel_list : named_kernel_list<concat_kernel_lists<
    cuda_kernels::elementwise_kernels, cuda_kernels::linalg_kernels, cuda_kernels::nn_kernels,
    cuda_kernels::reduction_kernels, cuda_kernels::array_kernels>> {};

} // namespace typeflow
