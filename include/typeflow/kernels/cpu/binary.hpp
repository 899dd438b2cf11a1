// SPDX-License-Identifier: Apache-2.0
// CPU kernels for the elementwise binary ops. The broadcast is first collapsed to the fewest
// dimensions (detail/broadcast.hpp); then one Eigen expression runs on the policy's Eigen device
// (vectorised; split over threads on thread_pool): flat when both inputs cover the output or one
// is a single value; row by row when the innermost collapsed dimension is long (32 or more);
// otherwise Eigen's broadcast() at rank 4 for collapsed ranks 2 to 4, and a strided loop over
// parallel_for beyond that (rare: the inputs must alternate which one broadcasts five times).
// Compile time: each Eigen broadcast rank instantiated adds 10 to 18 s of g++ 12 -O1 to
// test_binary.cpp (49 op x dtype pairs on two devices; 71 s with ranks 2, 3 and 4, 50 s with 4
// alone), so ranks 2 and 3 are padded to 4 with leading 1s. The price, measured on [1024, 1024]
// f32 adds (one thread, -O2): 5 to 15% slower for [m, n] + [n], [m, n] + [m, 1] and
// [m, 1] + [1, n]. Ranks 5 to 8 would cost four more instantiations.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <type_traits>

#include <typeflow/core/detail/dependent_false.hpp>
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/device/cpu.hpp>
#include <typeflow/device/parallel_assign.hpp>
#include <typeflow/device/thread_pool.hpp>
#include <typeflow/kernels/cpu/detail/broadcast.hpp>
#include <typeflow/kernels/cpu/unary.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/ops/binary.hpp>

namespace typeflow::cpu_kernels {

namespace detail {

// x / y for integers, truncating toward zero. The kernel has checked that no divisor is 0.
// lowest / -1 overflows (and traps on x86), so it wraps to lowest, as two's complement would.
template <class T>
struct integer_quotient {
  T operator()(T x, T y) const {
    if constexpr (std::is_signed_v<T>) {
      using U = std::make_unsigned_t<T>;
      if (y == T(-1)) return static_cast<T>(U(0) - static_cast<U>(x));
    }
    return static_cast<T>(x / y);
  }
};

// x^y for integers by repeated squaring: O(log y) multiplications, exact until it overflows,
// then wrapping (the arithmetic is unsigned, at least as wide as unsigned int so that no
// promotion to int can overflow). The kernel has checked that no exponent is negative.
template <class T>
struct integer_power {
  T operator()(T base, T exponent) const {
    using U = std::common_type_t<unsigned, std::make_unsigned_t<T>>;
    U result = 1;
    U b = static_cast<U>(base);
    for (T e = exponent; e > 0; e /= 2) {
      if (e % 2 != 0) result *= b;
      b *= b;
    }
    return static_cast<T>(result);
  }
};

// The scalar functor of op `Op` on T; Eigen's own where it has one (they carry packet versions
// and costs), ours for integer div and pow.
template <class Op, class T>
auto binary_functor() {
  namespace internal = Eigen::internal;
  using typeflow::detail::dependent_false;
  if constexpr (std::is_same_v<Op, ops::add>) return internal::scalar_sum_op<T, T>();
  else if constexpr (std::is_same_v<Op, ops::sub>) return internal::scalar_difference_op<T, T>();
  else if constexpr (std::is_same_v<Op, ops::mul>) return internal::scalar_product_op<T, T>();
  else if constexpr (std::is_same_v<Op, ops::div>) {
    if constexpr (std::is_integral_v<T>) return integer_quotient<T>();
    else return internal::scalar_quotient_op<T, T>();
  } else if constexpr (std::is_same_v<Op, ops::maximum>) return internal::scalar_max_op<T, T, Eigen::PropagateNaN>();
  else if constexpr (std::is_same_v<Op, ops::minimum>) return internal::scalar_min_op<T, T, Eigen::PropagateNaN>();
  else if constexpr (std::is_same_v<Op, ops::pow>) {
    if constexpr (std::is_integral_v<T>) return integer_power<T>();
    else return internal::scalar_pow_op<T, T>();
  } else if constexpr (std::is_same_v<Op, ops::equal>) return internal::scalar_cmp_op<T, T, internal::cmp_EQ>();
  else if constexpr (std::is_same_v<Op, ops::less>) return internal::scalar_cmp_op<T, T, internal::cmp_LT>();
  else if constexpr (std::is_same_v<Op, ops::greater>) return internal::scalar_cmp_op<T, T, internal::cmp_GT>();
  else static_assert(dependent_false<Op>, "binary_functor<Op, T>: Op is not one of the binary ops of ops/binary.hpp");
}

template <class Op, class T>
using binary_functor_t = decltype(binary_functor<Op, T>());

// Data-dependent errors, found before anything is computed: integer division by zero and
// negative integer exponents. `right` is input 1 (all of it is read when the output is not
// empty, since broadcasting only repeats elements).
template <class Op, class T>
status check_right_operand(std::span<const T> v) {
  if constexpr (std::is_integral_v<T> && std::is_same_v<Op, ops::div>) {
    if (std::find(v.begin(), v.end(), T(0)) != v.end())
      return errors::invalid_argument(Op::name, ": division by zero in input 1");
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && std::is_same_v<Op, ops::pow>) {
    const auto negative = std::find_if(v.begin(), v.end(), [](T e) { return e < 0; });
    if (negative != v.end())
      return errors::invalid_argument(Op::name, ": input 1 holds the negative exponent ",
                                      static_cast<std::int64_t>(*negative), ", but integer powers (dtype ",
                                      dtype_of<T>, ") need exponents >= 0");
  }
  return ok_status();
}

}  // namespace detail

// Elementwise binary ops with broadcasting. Cheap: a thread hand-off costs more than the work.
template <class Op, class Device, class T>
struct eigen_binary_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  using functor = detail::binary_functor_t<Op, T>;
  using output_type = std::remove_cvref_t<std::invoke_result_t<functor, const T&, const T&>>;  // T, or bool
  using layout = detail::broadcast_layout<2>;

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    const tensor& z = ctx.inputs[1];
    const tensor& y = ctx.outputs[0];
    const std::int64_t n = y.num_elements();
    if (n == 0) return ok_status();
    // A few elements, each input as many as the output (so element i of each goes with element i of
    // the output: a broadcast that changes nothing): a plain loop, without the broadcast layout and
    // Eigen's expression set-up, which cost more than the work at this size (bench_schedule's
    // unfused 1-element nodes).
    if (n <= small_elementwise_elements && x.num_elements() == n && z.num_elements() == n)
      return compute_elements(op, {x.data(), z.data()}, y.data(), n);
    if (auto st = detail::check_right_operand<Op, T>(z.unchecked_values<const T>()); !st.ok()) return st;

    const T* a = x.unchecked_data<const T>();
    const T* b = z.unchecked_data<const T>();
    output_type* out = y.unchecked_data<output_type>();
    const layout l = detail::make_broadcast_layout<2>({x.shape(), z.shape()}, y.shape());
    if (by_rows(l)) {
      assign_rows(ctx.device, l, a, b, out);
      return ok_status();
    }
    switch (l.rank) {
      case 1: assign_flat(ctx.device, l, a, b, out); break;
      case 2:
      case 3:
      case 4: assign_broadcast<4>(ctx.device, l, a, b, out); break;
      default: assign_strided(ctx.device, l, a, b, out); break;
    }
    return ok_status();
  }

  // n elements of each input and the output, on bare data (elementwise_data_kernel): a plain loop.
  static status compute_elements(const Op&, const std::array<const void*, 2>& in, void* out, std::int64_t n) {
    const T* a = static_cast<const T*>(in[0]);
    const T* b = static_cast<const T*>(in[1]);
    if (auto st = detail::check_right_operand<Op, T>(std::span<const T>(b, static_cast<std::size_t>(n))); !st.ok())
      return st;
    output_type* y = static_cast<output_type*>(out);
    const functor f{};
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
    return ok_status();
  }

 private:
  // Rows at least this long go row by row (below, Eigen's broadcast and the strided loop win).
  static constexpr std::int64_t min_row_length = 32;

  static bool by_rows(const layout& l) { return l.rank >= 2 && l.out_dims[l.rank - 1] >= min_row_length; }

  // Collapsed rank 2 or more with a long innermost dimension (a bias on an NCHW image: [n, c, hw]
  // + [1, c, 1]; [m, n] + [n]; [m, 1] + [1, n]): each output row is one vectorised 1-D Eigen
  // expression on this thread, an input that broadcasts along the row being a constant, and the
  // rows are split over the policy's threads. Eigen's broadcast() evaluates an index division per
  // packet instead: [8, 16, 1024] + [16, 1] f32 took 112 us that way against 12 us row by row.
  static void assign_rows(Device& device, const layout& l, const T* a, const T* b, output_type* out) {
    const std::size_t inner = l.rank - 1;
    const std::int64_t n = l.out_dims[inner];
    const bool a_along = l.strides[0][inner] != 0;
    const bool b_along = l.strides[1][inner] != 0;
    const double cost = static_cast<double>(n) * (static_cast<double>(Eigen::internal::functor_traits<functor>::Cost) + 2.0);
    device.parallel_for(l.num_elements() / n, cost, [&](std::int64_t first, std::int64_t last) {
      l.for_each_row(first, last, [&](std::int64_t row, const std::array<std::int64_t, 2>& offset) {
        assign_row(a + offset[0], a_along, b + offset[1], b_along, out + row * n, n);
      });
    });
  }

  // Maps that take any address: a row starts wherever the broadcast puts it.
  template <class S>
  using row_map = Eigen::TensorMap<Eigen::Tensor<S, 1, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;

  // out[0, n) = a op b, where an input not `along` the row is one value.
  static void assign_row(const T* a, bool a_along, const T* b, bool b_along, output_type* out, std::int64_t n) {
    row_map<output_type> y(out, n);
    if (a_along && b_along) {
      y = row_map<const T>(a, n).binaryExpr(row_map<const T>(b, n), functor());
    } else if (b_along) {
      const row_map<const T> z(b, n);
      y = z.constant(*a).binaryExpr(z, functor());
    } else {
      const row_map<const T> x(a, n);
      y = x.binaryExpr(x.constant(*b), functor());
    }
  }

  // [n] op [n], [1] op [n] or [n] op [1] -> [n]; a single value becomes an Eigen constant.
  static void assign_flat(const Device& device, const layout& l, const T* a, const T* b, output_type* out) {
    const Eigen::Index n = l.out_dims[0];
    eigen_tensor_map<output_type, 1> y(out, n);
    if (l.is_dense(0) && l.is_dense(1)) {
      parallel_assign(device, y, eigen_const_tensor_map<T, 1>(a, n).binaryExpr(eigen_const_tensor_map<T, 1>(b, n), functor()));
    } else if (l.is_single(0)) {
      const eigen_const_tensor_map<T, 1> z(b, n);
      parallel_assign(device, y, z.constant(*a).binaryExpr(z, functor()));
    } else {
      const eigen_const_tensor_map<T, 1> x(a, n);
      parallel_assign(device, y, x.binaryExpr(x.constant(*b), functor()));
    }
  }

  // Both inputs as rank-Rank maps of their collapsed dims (padded with leading 1s), broadcast
  // to the output's.
  template <int Rank>
  static void assign_broadcast(const Device& device, const layout& l, const T* a, const T* b, output_type* out) {
    const eigen_const_tensor_map<T, Rank> x(a, l.eigen_in_dims<Rank>(0));
    const eigen_const_tensor_map<T, Rank> z(b, l.eigen_in_dims<Rank>(1));
    eigen_tensor_map<output_type, Rank> y(out, l.eigen_out_dims<Rank>());
    parallel_assign(device, y, x.broadcast(l.eigen_factors<Rank>(0)).binaryExpr(z.broadcast(l.eigen_factors<Rank>(1)), functor()));
  }

  // Collapsed ranks 5 to 8: the scalar functor over strided reads.
  static void assign_strided(Device& device, const layout& l, const T* a, const T* b, output_type* out) {
    // Cycles per element: the op, two loads and the index update.
    const double cost = static_cast<double>(Eigen::internal::functor_traits<functor>::Cost) + 4.0;
    device.parallel_for(l.num_elements(), cost, [&](std::int64_t first, std::int64_t last) {
      const functor f;
      l.for_each_offset(first, last, [&](std::int64_t i, const std::array<std::int64_t, 2>& offset) {
        out[i] = f(a[offset[0]], b[offset[1]]);
      });
    });
  }
};

using binary_arithmetic_types = dtypes<float, double, std::int32_t, std::int64_t, Eigen::half, Eigen::bfloat16>;
using binary_numeric_types = dtypes<float, double, std::int32_t, std::int64_t>;
using binary_equality_types = dtypes<float, double, std::int32_t, std::int64_t, bool>;

struct binary_kernels : named_kernel_list<kernel_list<
    kernel_family<eigen_binary_kernel, ops::add, host_devices, binary_arithmetic_types>,
    kernel_family<eigen_binary_kernel, ops::sub, host_devices, binary_arithmetic_types>,
    kernel_family<eigen_binary_kernel, ops::mul, host_devices, binary_arithmetic_types>,
    kernel_family<eigen_binary_kernel, ops::div, host_devices, binary_arithmetic_types>,
    kernel_family<eigen_binary_kernel, ops::maximum, host_devices, binary_numeric_types>,
    kernel_family<eigen_binary_kernel, ops::minimum, host_devices, binary_numeric_types>,
    kernel_family<eigen_binary_kernel, ops::pow, host_devices, binary_numeric_types>,
    kernel_family<eigen_binary_kernel, ops::equal, host_devices, binary_equality_types>,
    kernel_family<eigen_binary_kernel, ops::less, host_devices, binary_numeric_types>,
    kernel_family<eigen_binary_kernel, ops::greater, host_devices, binary_numeric_types>>> {};

}  // namespace typeflow::cpu_kernels
