// SPDX-License-Identifier: Apache-2.0
// dtype: the element types a tensor can hold, and the traits between C++ types and dtypes.
// The list of element types is one Hana tuple, ordered as the enum, so the two cannot drift.
#pragma once

#include <typeflow/fwd.hpp>

#include <boost/hana/at.hpp>
#include <boost/hana/contains.hpp>
#include <boost/hana/equal.hpp>
#include <boost/hana/index_if.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/detail/format.hpp>

namespace typeflow {

enum class dtype : std::uint8_t { f16, bf16, f32, f64, i8, i32, i64, u8, boolean };

inline constexpr std::size_t num_dtypes = 9;

// The C++ element type of each dtype, in enum order.
inline constexpr auto element_types = boost::hana::tuple_t<Eigen::half, Eigen::bfloat16, float, double,
                                                           std::int8_t, std::int32_t, std::int64_t,
                                                           std::uint8_t, bool>;

// A C++ type that a tensor can hold. float satisfies it; long double does not.
template <class T>
concept element_type = decltype(boost::hana::contains(element_types, boost::hana::type_c<T>))::value;

// dtype_of<float> == dtype::f32
template <element_type T>
inline constexpr dtype dtype_of = static_cast<dtype>(std::remove_cvref_t<decltype(
    boost::hana::index_if(element_types, boost::hana::equal.to(boost::hana::type_c<T>)).value())>::value);

// element_t<dtype::f32> is float
template <dtype D>
using element_t = typename decltype(+boost::hana::at_c<static_cast<std::size_t>(D)>(element_types))::type;

constexpr std::string_view name_of(dtype d) noexcept {
  switch (d) {
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
    case dtype::i8: return "i8";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
    case dtype::u8: return "u8";
    case dtype::boolean: return "bool";
  }
  return "invalid dtype";
}

constexpr std::size_t size_of(dtype d) noexcept {
  switch (d) {
    case dtype::f16: case dtype::bf16: return 2;
    case dtype::f32: case dtype::i32: return 4;
    case dtype::f64: case dtype::i64: return 8;
    case dtype::i8: case dtype::u8: case dtype::boolean: return 1;
  }
  return 0;
}

constexpr bool is_valid(dtype d) noexcept { return static_cast<std::size_t>(d) < num_dtypes; }
constexpr bool is_floating(dtype d) noexcept {
  return d == dtype::f16 || d == dtype::bf16 || d == dtype::f32 || d == dtype::f64;
}
constexpr bool is_integral(dtype d) noexcept {
  return d == dtype::i8 || d == dtype::i32 || d == dtype::i64 || d == dtype::u8;
}
constexpr bool is_signed(dtype d) noexcept { return is_floating(d) || d == dtype::i8 || d == dtype::i32 || d == dtype::i64; }

// Parses "f32", "float32", "float", "int32", "bool", ... ; returns false for anything else.
constexpr bool parse_dtype(std::string_view s, dtype& out) noexcept {
  struct entry { std::string_view name; dtype type; };
  constexpr entry table[] = {
      {"f16", dtype::f16},     {"float16", dtype::f16}, {"half", dtype::f16},     {"bf16", dtype::bf16},
      {"bfloat16", dtype::bf16}, {"f32", dtype::f32},   {"float32", dtype::f32},  {"float", dtype::f32},
      {"f64", dtype::f64},     {"float64", dtype::f64}, {"double", dtype::f64},   {"i8", dtype::i8},
      {"int8", dtype::i8},     {"i32", dtype::i32},     {"int32", dtype::i32},    {"i64", dtype::i64},
      {"int64", dtype::i64},   {"u8", dtype::u8},       {"uint8", dtype::u8},     {"bool", dtype::boolean},
  };
  for (const auto& e : table)
    if (e.name == s) { out = e.type; return true; }
  return false;
}

// Calls f(boost::hana::type_c<T>) with the element type of d: the bridge from a run-time dtype
// to a compile-time type. d must be valid (is_valid(d)).
template <class F>
constexpr decltype(auto) visit(dtype d, F&& f) {
  namespace hana = boost::hana;
  switch (d) {
    case dtype::f16: return f(hana::type_c<Eigen::half>);
    case dtype::bf16: return f(hana::type_c<Eigen::bfloat16>);
    case dtype::f32: return f(hana::type_c<float>);
    case dtype::f64: return f(hana::type_c<double>);
    case dtype::i8: return f(hana::type_c<std::int8_t>);
    case dtype::i32: return f(hana::type_c<std::int32_t>);
    case dtype::i64: return f(hana::type_c<std::int64_t>);
    case dtype::u8: return f(hana::type_c<std::uint8_t>);
    case dtype::boolean: break;
  }
  return f(hana::type_c<bool>);
}

// A compile-time list of element types, used to say which dtypes a kernel family covers.
template <element_type... Ts>
struct dtypes {
  template <class T>
  static constexpr bool contains = (std::is_same_v<T, Ts> || ...);
  static constexpr std::size_t size = sizeof...(Ts);
};

// Sets of element types that kernels commonly cover.
using float_types = dtypes<float, double>;
using signed_types = dtypes<float, double, std::int8_t, std::int32_t, std::int64_t>;
using numeric_types = dtypes<float, double, std::int8_t, std::int32_t, std::int64_t, std::uint8_t>;
using all_types = dtypes<Eigen::half, Eigen::bfloat16, float, double, std::int8_t, std::int32_t, std::int64_t,
                         std::uint8_t, bool>;

} // namespace typeflow

namespace typeflow {
// Lets status messages name a dtype: errors::invalid_argument("got ", dtype::f32) -> "got f32".
inline constexpr void append(detail::text& out, dtype d) { out.append(name_of(d)); }
} // namespace typeflow
