// SPDX-License-Identifier: Apache-2.0
// The one place typeflow includes Eigen. The thread-pool device needs EIGEN_USE_THREADS before
// Eigen's Tensor module is first seen, so it is defined here (and by typeflow's Meson dependency).
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#if defined(EIGEN_CXX11_TENSOR_MODULE_H) && !defined(EIGEN_USE_THREADS)
#error "typeflow needs EIGEN_USE_THREADS: include typeflow before <unsupported/Eigen/CXX11/Tensor>, or define EIGEN_USE_THREADS"
#endif
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>
