// SPDX-License-Identifier: Apache-2.0
// CPU kernels for the elementwise unary ops: one Eigen expression over the flat tensor, evaluated
// by parallel_assign (vectorised; split over threads on thread_pool).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <typeflow/core/detail/dependent_false.hpp>
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/cpu.hpp>
#include <typeflow/device/parallel_assign.hpp>
#include <typeflow/device/thread_pool.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow::cpu_kernels {

using host_devices = devices<cpu, thread_pool>;

namespace detail {

// The Eigen expression of op `Op` applied to the flat input `x`.
template <class Op, class T, class X>
auto unary_expression(const Op& op, const X& x) {
  using typeflow::detail::dependent_false;
  if constexpr (std::is_same_v<Op, ops::neg>) return -x;
  else if constexpr (std::is_same_v<Op, ops::abs>) return x.abs();
  else if constexpr (std::is_same_v<Op, ops::exp>) return x.exp();
  else if constexpr (std::is_same_v<Op, ops::log>) return x.log();
  else if constexpr (std::is_same_v<Op, ops::sqrt>) return x.sqrt();
  else if constexpr (std::is_same_v<Op, ops::rsqrt>) return x.rsqrt();
  else if constexpr (std::is_same_v<Op, ops::square>) return x.square();
  else if constexpr (std::is_same_v<Op, ops::tanh>) return x.tanh();
  else if constexpr (std::is_same_v<Op, ops::sigmoid>) return x.sigmoid();
  else if constexpr (std::is_same_v<Op, ops::relu>) return x.cwiseMax(T(0));
  else if constexpr (std::is_same_v<Op, ops::erf>) return x.erf();
  else if constexpr (std::is_same_v<Op, ops::leaky_relu>) return (x > T(0)).select(x, x * T(op.alpha));
  else if constexpr (std::is_same_v<Op, ops::hard_sigmoid>)
    return (x * T(op.alpha) + T(op.beta)).cwiseMax(T(0)).cwiseMin(T(1));
  else if constexpr (std::is_same_v<Op, ops::clip>) {
    // min(max(x, lo), hi): bounds outside the dtype's range clip nothing; NaN passes (a comparison
    // with NaN is false); lo > hi gives hi.
    const T lo = op.min > static_cast<double>(Eigen::NumTraits<T>::lowest()) ? static_cast<T>(op.min) : Eigen::NumTraits<T>::lowest();
    const T hi = op.max < static_cast<double>(Eigen::NumTraits<T>::highest()) ? static_cast<T>(op.max) : Eigen::NumTraits<T>::highest();
    const auto raised = (x < lo).select(x.constant(lo), x);
    return (raised > hi).select(raised.constant(hi), raised);
  }
  else if constexpr (std::is_same_v<Op, ops::softplus>) {
    // TensorFlow's formulation: x for large x, e^x for very negative x, log1p(e^x) between,
    // with the threshold at log(epsilon) + 2 so neither branch loses precision.
    const T threshold = T(std::log(std::numeric_limits<T>::epsilon())) + T(2);
    return (x > -threshold).select(x, (x < threshold).select(x.exp(), x.exp().log1p()));
  } else if constexpr (std::is_same_v<Op, ops::gelu>) {
    // gelu's attribute picks one of two expression types at run time: see gelu_expression.
    (void)op;
    static_assert(dependent_false<Op>, "gelu is evaluated through gelu_expression<Approximate>");
  } else {
    static_assert(dependent_false<Op>, "unary_expression: no Eigen expression for this unary op");
  }
}

// gelu's two forms as Eigen expressions of x.
template <bool Approximate, class T, class X>
auto gelu_expression(const X& x) {
  const T half(0.5), one(1);
  if constexpr (Approximate) {
    // 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
    const T k(0.7978845608028654), c(0.044715);
    return half * x * (one + (k * (x + c * x.cube())).tanh());
  } else {
    // 0.5 x (1 + erf(x / √2))
    return half * x * (one + (x * T(0.7071067811865476)).erf());
  }
}

}  // namespace detail

// Elementwise unary ops except cast. Cheap: a thread hand-off costs more than the work.
template <class Op, class Device, class T>
struct eigen_unary_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    auto y = ctx.outputs[0].template unchecked_flat<T>();
    with_expression(op, ctx.inputs[0].template unchecked_flat<const T>(),
                    [&](const auto& e) { parallel_assign(ctx.device, y, e); });
    return ok_status();
  }

  // n elements on bare data (elementwise_data_kernel), through the same evaluator on this thread.
  static status compute_elements(const Op& op, const std::array<const void*, 1>& in, void* out, std::int64_t n) {
    eigen_tensor_map<T, 1> y(static_cast<T*>(out), n);
    with_expression(op, eigen_tensor_map<const T, 1>(static_cast<const T*>(in[0]), n),
                    [&](const auto& e) { assign_range(y, e, 0, n); });
    return ok_status();
  }

 private:
  // assign(expression of op on x).
  template <class X, class Assign>
  static void with_expression(const Op& op, const X& x, Assign&& assign) {
    if constexpr (std::is_same_v<Op, ops::gelu>) {
      if (op.approximate) assign(detail::gelu_expression<true, T>(x));
      else assign(detail::gelu_expression<false, T>(x));
    } else {
      assign(detail::unary_expression<Op, T>(op, x));
    }
  }
};

// A floating value as integer type To, as ops::cast defines it (XLA's rule): truncated toward
// zero, saturated to To's range, NaN to 0.
template <class From, class To>
struct saturating_float_cast {
  To operator()(From v) const {
    const double x = static_cast<double>(static_cast<std::conditional_t<sizeof(From) < 4, float, From>>(v));
    if (x != x) return To(0);
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max()) + 1.0;  // a power of 2: exact
    if (x >= hi) return std::numeric_limits<To>::max();
    if (x <= lo) return std::numeric_limits<To>::min();
    return static_cast<To>(x);
  }
};

// cast: From -> op.to. The target dtype is a run-time attribute, so the kernel switches on it.
template <class Op, class Device, class From>
struct eigen_cast_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = From;
  static constexpr bool expensive = false;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    auto x = ctx.inputs[0].template unchecked_flat<const From>();
    visit(op.to, [&](auto to) {
      using To = typename decltype(to)::type;
      auto y = ctx.outputs[0].template unchecked_flat<To>();
      if constexpr (std::is_same_v<To, bool>) {
        parallel_assign(ctx.device, y, x != x.constant(From(0)));
      } else if constexpr (std::is_same_v<From, To>) {
        parallel_copy(ctx.device, x.data(), y.data(), static_cast<std::int64_t>(ctx.inputs[0].bytes()));
      } else if constexpr (std::is_same_v<From, bool>) {
        parallel_assign(ctx.device, y, x.template cast<std::uint8_t>().template cast<To>());
      } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
        parallel_assign(ctx.device, y, x.unaryExpr(saturating_float_cast<From, To>{}));
      } else {
        parallel_assign(ctx.device, y, x.template cast<To>());
      }
    });
    return ok_status();
  }
};

using float_kernel_types = dtypes<float, double, Eigen::half, Eigen::bfloat16>;
using number_kernel_types =
    dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::uint8_t, std::int32_t, std::int64_t>;
using signed_kernel_types = dtypes<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int32_t, std::int64_t>;

struct unary_kernels : named_kernel_list<kernel_list<
    kernel_family<eigen_unary_kernel, ops::neg, host_devices, signed_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::abs, host_devices, signed_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::square, host_devices, signed_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::relu, host_devices, signed_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::exp, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::log, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::sqrt, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::rsqrt, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::tanh, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::sigmoid, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::softplus, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::gelu, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::erf, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::leaky_relu, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::hard_sigmoid, host_devices, float_kernel_types>,
    kernel_family<eigen_unary_kernel, ops::clip, host_devices, number_kernel_types>,
    kernel_family<eigen_cast_kernel, ops::cast, host_devices, all_types>>> {};

}  // namespace typeflow::cpu_kernels
