// SPDX-License-Identifier: Apache-2.0
// onednn_kernel_list: matmul and conv2d on oneDNN for float on the host policies. matmul is the
// default list's kernel (blocks of the product split over the policy's threads) with oneDNN's sgemm
// instead of Eigen's contraction; conv2d is oneDNN's direct convolution on NHWC images
// (kernels/onednn/conv2d.hpp), and im2col + sgemm on NCHW ones. A program puts it first in its
// registry:
//   using fast_registry = tf::registry<tf::onednn_kernel_list, tf::cpu_kernel_list>;
// and every other (op, device, dtype) comes from the lists after it. Needs libdnnl-dev; link with
// pkg-config typeflow-onednn.
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/kernels/cpu/linalg.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/onednn/conv2d.hpp>
#include <typeflow/kernels/onednn/gemm.hpp>

namespace typeflow {

namespace onednn {

template <class Op, class Device, class T>
struct onednn_matmul_kernel : cpu_kernels::basic_matmul_kernel<Op, Device, T, onednn_gemm> {};

}  // namespace onednn

struct onednn_kernel_list
    : named_kernel_list<kernel_list<kernel_family<onednn::onednn_matmul_kernel, ops::matmul, cpu_kernels::host_devices, dtypes<float>>,
                                    kernel_family<onednn::onednn_conv2d_kernel, ops::conv2d, cpu_kernels::host_devices, dtypes<float>>>> {};

}  // namespace typeflow
