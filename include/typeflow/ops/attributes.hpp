// SPDX-License-Identifier: Apache-2.0
// The attributes of each op by name, so that runtime graphs can build op values from attr_maps
// and print them back: op_attributes<Op> is a tuple of attribute<"name", &Op::member>. An op
// with no entry has no attributes. A new op with attributes adds one line here (README: "Add an
// op and a kernel").
//
// from_attrs<Op>(attrs) -> result<Op> checks every attribute: an unknown name, or a value of the
// wrong type (int for a bool, a string that is not a padding) is invalid_argument naming the op,
// the attribute and both types; attributes not given keep the op's defaults.
#pragma once

#include <typeflow/fwd.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/int_list.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/ops/array.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/linalg.hpp>
#include <typeflow/ops/nn.hpp>
#include <typeflow/ops/padding.hpp>
#include <typeflow/ops/pool.hpp>
#include <typeflow/ops/reduction.hpp>
#include <typeflow/ops/resize.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow {

template <detail::fixed_string Name, auto Member>
struct attribute {
  static constexpr std::string_view name = Name.view();
  static constexpr auto member = Member;
};

template <class Op>
inline constexpr auto op_attributes = std::tuple<>{};

namespace detail {
// The attributes conv2d and the pools share, after their first ones.
template <class Op>
constexpr auto window_attributes() {
  return std::tuple{attribute<"padding", &Op::pad>{},         attribute<"dilation_h", &Op::dilation_h>{},
                    attribute<"dilation_w", &Op::dilation_w>{}, attribute<"pad_top", &Op::pad_top>{},
                    attribute<"pad_bottom", &Op::pad_bottom>{}, attribute<"pad_left", &Op::pad_left>{},
                    attribute<"pad_right", &Op::pad_right>{},   attribute<"data_format", &Op::format>{}};
}
template <class Op>
constexpr auto pool_attributes() {
  return std::tuple_cat(std::tuple{attribute<"window_h", &Op::window_h>{}, attribute<"window_w", &Op::window_w>{},
                                   attribute<"stride_h", &Op::stride_h>{}, attribute<"stride_w", &Op::stride_w>{}},
                        window_attributes<Op>(), std::tuple{attribute<"ceil_mode", &Op::ceil_mode>{}});
}
template <class Op>
constexpr auto reduction_attributes() {
  return std::tuple{attribute<"axes", &Op::axes>{}, attribute<"keep_dims", &Op::keep_dims>{}};
}
}  // namespace detail

template <>
inline constexpr auto op_attributes<ops::matmul> =
    std::tuple{attribute<"transpose_a", &ops::matmul::transpose_a>{}, attribute<"transpose_b", &ops::matmul::transpose_b>{}};
template <>
inline constexpr auto op_attributes<ops::conv2d> =
    std::tuple_cat(std::tuple{attribute<"stride_h", &ops::conv2d::stride_h>{}, attribute<"stride_w", &ops::conv2d::stride_w>{}},
                   detail::window_attributes<ops::conv2d>());
template <>
inline constexpr auto op_attributes<ops::max_pool2d> = detail::pool_attributes<ops::max_pool2d>();
template <>
inline constexpr auto op_attributes<ops::avg_pool2d> = std::tuple_cat(
    detail::pool_attributes<ops::avg_pool2d>(), std::tuple{attribute<"count_include_pad", &ops::avg_pool2d::count_include_pad>{}});
template <>
inline constexpr auto op_attributes<ops::softmax> = std::tuple{attribute<"axis", &ops::softmax::axis>{}};
template <>
inline constexpr auto op_attributes<ops::log_softmax> = std::tuple{attribute<"axis", &ops::log_softmax::axis>{}};
template <>
inline constexpr auto op_attributes<ops::batch_norm> = std::tuple{attribute<"epsilon", &ops::batch_norm::epsilon>{}};
template <>
inline constexpr auto op_attributes<ops::reduce_sum> = detail::reduction_attributes<ops::reduce_sum>();
template <>
inline constexpr auto op_attributes<ops::reduce_mean> = detail::reduction_attributes<ops::reduce_mean>();
template <>
inline constexpr auto op_attributes<ops::reduce_max> = detail::reduction_attributes<ops::reduce_max>();
template <>
inline constexpr auto op_attributes<ops::reduce_min> = detail::reduction_attributes<ops::reduce_min>();
template <>
inline constexpr auto op_attributes<ops::reduce_prod> = detail::reduction_attributes<ops::reduce_prod>();
template <>
inline constexpr auto op_attributes<ops::argmax> =
    std::tuple{attribute<"axis", &ops::argmax::axis>{}, attribute<"select_last_index", &ops::argmax::select_last_index>{}};
template <>
inline constexpr auto op_attributes<ops::gelu> = std::tuple{attribute<"approximate", &ops::gelu::approximate>{}};
template <>
inline constexpr auto op_attributes<ops::broadcast_to> = std::tuple{attribute<"shape", &ops::broadcast_to::dims>{}};
template <>
inline constexpr auto op_attributes<ops::layer_norm> =
    std::tuple{attribute<"axis", &ops::layer_norm::axis>{}, attribute<"epsilon", &ops::layer_norm::epsilon>{}};
template <>
inline constexpr auto op_attributes<ops::leaky_relu> = std::tuple{attribute<"alpha", &ops::leaky_relu::alpha>{}};
template <>
inline constexpr auto op_attributes<ops::hard_sigmoid> =
    std::tuple{attribute<"alpha", &ops::hard_sigmoid::alpha>{}, attribute<"beta", &ops::hard_sigmoid::beta>{}};
template <>
inline constexpr auto op_attributes<ops::clip> =
    std::tuple{attribute<"min", &ops::clip::min>{}, attribute<"max", &ops::clip::max>{}};
template <>
inline constexpr auto op_attributes<ops::cast> = std::tuple{attribute<"to", &ops::cast::to>{}};
template <>
inline constexpr auto op_attributes<ops::reshape> = std::tuple{attribute<"shape", &ops::reshape::to>{}};
template <>
inline constexpr auto op_attributes<ops::transpose> = std::tuple{attribute<"perm", &ops::transpose::perm>{}};
template <>
inline constexpr auto op_attributes<ops::concat> = std::tuple{attribute<"axis", &ops::concat::axis>{}};
template <>
inline constexpr auto op_attributes<ops::split> =
    std::tuple{attribute<"axis", &ops::split::axis>{}, attribute<"num_split", &ops::split::num_split>{}};
template <>
inline constexpr auto op_attributes<ops::top_k> =
    std::tuple{attribute<"k", &ops::top_k::k>{}, attribute<"sorted", &ops::top_k::sorted>{}};
template <>
inline constexpr auto op_attributes<ops::slice> =
    std::tuple{attribute<"begin", &ops::slice::begin>{}, attribute<"size", &ops::slice::size>{},
               attribute<"strides", &ops::slice::strides>{}, attribute<"clamp", &ops::slice::clamp>{}};
template <>
inline constexpr auto op_attributes<ops::squeeze> = std::tuple{attribute<"axes", &ops::squeeze::axes>{}};
template <>
inline constexpr auto op_attributes<ops::expand_dims> = std::tuple{attribute<"axis", &ops::expand_dims::axis>{}};
template <>
inline constexpr auto op_attributes<ops::pad> =
    std::tuple{attribute<"paddings", &ops::pad::paddings>{}, attribute<"value", &ops::pad::value>{},
               attribute<"mode", &ops::pad::mode>{}};
template <>
inline constexpr auto op_attributes<ops::gather> = std::tuple{attribute<"axis", &ops::gather::axis>{}};
template <>
inline constexpr auto op_attributes<ops::resize> = std::tuple{
    attribute<"height", &ops::resize::height>{}, attribute<"width", &ops::resize::width>{},
    attribute<"scale_h", &ops::resize::scale_h>{}, attribute<"scale_w", &ops::resize::scale_w>{},
    attribute<"method", &ops::resize::method>{}, attribute<"coordinates", &ops::resize::coordinates>{},
    attribute<"nearest_mode", &ops::resize::rounding>{}, attribute<"data_format", &ops::resize::format>{}};
template <>
inline constexpr auto op_attributes<ops::fill> = std::tuple{
    attribute<"shape", &ops::fill::dims>{}, attribute<"value", &ops::fill::value>{}, attribute<"dtype", &ops::fill::type>{}};

namespace detail {

template <ops::named_enum V>
constexpr bool parse_enum_name(std::string_view s, V& out) {
  const auto names = names_of(V{});
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == s) {
      out = static_cast<V>(i);
      return true;
    }
  return false;
}

template <class M>
struct member_value;
template <class C, class V>
struct member_value<V C::*> {
  using type = V;
};

// The attr_type an op member is read from.
template <class V>
constexpr attr_type attr_type_of() {
  if constexpr (std::is_same_v<V, bool>) return attr_type::bool_;
  else if constexpr (std::is_integral_v<V>) return attr_type::int_;
  else if constexpr (std::is_floating_point_v<V>) return attr_type::float_;
  else if constexpr (std::is_same_v<V, dtype>) return attr_type::dtype;
  else if constexpr (std::is_same_v<V, shape>) return attr_type::shape;
  else if constexpr (std::is_same_v<V, int_list>) return attr_type::int_list;
  else if constexpr (ops::named_enum<V>) return attr_type::string;
  else static_assert(sizeof(V) == 0, "op_attributes: unsupported member type");
}

// Reads `value` into `out`; an error says what was expected.
template <class V>
status read_attr(std::string_view op, std::string_view name, const attr_value& value, V& out) {
  auto wrong = [&] {
    return errors::invalid_argument("op ", op, ": attribute '", name, "' must be ", to_string(attr_type_of<V>()),
                                    ", got ", to_string(value.type()), " ", value.to_string());
  };
  if constexpr (std::is_same_v<V, bool>) {
    const bool* b = value.get<bool>();
    if (!b) return wrong();
    out = *b;
  } else if constexpr (std::is_integral_v<V>) {
    const std::int64_t* i = value.get<std::int64_t>();
    if (!i) return wrong();
    if (!std::in_range<V>(*i))
      return errors::invalid_argument("op ", op, ": attribute '", name, "' is ", *i, ", out of the range [",
                                      std::numeric_limits<V>::min(), ", ", std::numeric_limits<V>::max(), "]");
    out = static_cast<V>(*i);
  } else if constexpr (std::is_floating_point_v<V>) {
    double d = 0;
    if (const double* f = value.get<double>()) d = *f;
    else if (const std::int64_t* i = value.get<std::int64_t>()) d = static_cast<double>(*i);
    else return wrong();
    if (std::isfinite(d) && (d > static_cast<double>(std::numeric_limits<V>::max()) ||
                             d < static_cast<double>(std::numeric_limits<V>::lowest())))
      return errors::invalid_argument("op ", op, ": attribute '", name, "' is ", value.to_string(),
                                      ", out of the range of a ", sizeof(V) == 4 ? "float" : "double");
    out = static_cast<V>(d);
  } else if constexpr (std::is_same_v<V, dtype>) {
    const dtype* d = value.get<dtype>();
    if (!d) return wrong();
    out = *d;
  } else if constexpr (std::is_same_v<V, shape>) {
    if (const shape* s = value.get<shape>()) {
      out = *s;
    } else if (const auto* l = value.get<std::vector<std::int64_t>>()) {  // [2, -1] for reshape
      auto s2 = shape::from_span(std::span<const std::int64_t>(*l));
      if (!s2.ok()) return errors::invalid_argument("op ", op, ": attribute '", name, "': ", s2.status().message());
      out = *s2;
    } else {
      return wrong();
    }
  } else if constexpr (std::is_same_v<V, int_list>) {
    const auto* l = value.get<std::vector<std::int64_t>>();
    if (!l) return wrong();
    if (l->size() > int_list::capacity)
      return errors::invalid_argument("op ", op, ": attribute '", name, "' has ", l->size(), " values, at most ",
                                      int_list::capacity, " are allowed");
    int_list r;
    for (std::int64_t v : *l) r.push_back(v);
    out = r;
  } else if constexpr (ops::named_enum<V>) {
    const std::string* s = value.get<std::string>();
    if (!s) return wrong();
    if (!parse_enum_name(*s, out)) {
      detail::text names;
      for (std::string_view n : names_of(V{})) names.append(names.empty() ? "\"" : ", \""), names.append(n), names.append("\"");
      return errors::invalid_argument("op ", op, ": attribute '", name, "' must be one of ", names.view(), ", got \"", *s, "\"");
    }
  }
  return ok_status();
}

template <class V>
attr_value write_attr(const V& v) {
  if constexpr (std::is_same_v<V, bool>) return attr_value(v);
  else if constexpr (std::is_integral_v<V>) return attr_value(static_cast<std::int64_t>(v));
  else if constexpr (std::is_floating_point_v<V>) return attr_value(static_cast<double>(v));
  else if constexpr (std::is_same_v<V, dtype> || std::is_same_v<V, shape>) return attr_value(v);
  else if constexpr (std::is_same_v<V, int_list>) return attr_value(std::vector<std::int64_t>(v.begin(), v.end()));
  else if constexpr (ops::named_enum<V>) return attr_value(std::string(names_of(V{})[static_cast<std::size_t>(v)]));
}

}  // namespace detail

// The op value that `attrs` describe; unknown attributes and wrong types are invalid_argument.
template <class Op>
result<Op> from_attrs(const attr_map& attrs) {
  Op op{};
  status st;
  for (const auto& entry : attrs) {
    const std::string_view name = entry.first;  // named, not a structured binding: lambdas capture it
    const attr_value& value = entry.second;
    bool known = false;
    std::apply(
        [&](auto... a) {
          (
              [&] {
                if (known || decltype(a)::name != name) return;
                known = true;
                st.update(detail::read_attr(Op::name, name, value, op.*decltype(a)::member));
              }(),
              ...);
        },
        op_attributes<Op>);
    if (!known) {
      detail::text names;
      std::apply([&](auto... a) { ((names.append(names.empty() ? "" : ", "), names.append(decltype(a)::name)), ...); },
                 op_attributes<Op>);
      return errors::invalid_argument("op ", Op::name, " has no attribute '", name, "'",
                                      names.empty() ? std::string_view("; it takes none") : std::string_view("; it takes: "),
                                      names.view());
    }
    if (!st.ok()) return st;
  }
  return op;
}

// attr<"name">(value): one attribute of an op value made with op_with, by its name in op_attributes
// (the names of the text format and of to_attrs).
template <detail::fixed_string Name, class V>
struct attr_arg {
  V value;
};
template <detail::fixed_string Name, class V>
constexpr attr_arg<Name, V> attr(V value) {
  return {value};
}

namespace detail {

// Called only when a value does not fit its attribute: a constant expression cannot call it, so
// op_with fails to compile at that argument.
inline void op_with_value_out_of_range() {}
inline void op_with_name_not_of_the_enum() {}

template <class M, class V>
constexpr M attr_from(const V& v) {
  if constexpr (std::is_same_v<M, bool>) {
    static_assert(std::is_same_v<V, bool>, "typeflow::op_with: a bool attribute takes true or false");
    return v;
  } else if constexpr (std::is_integral_v<M>) {
    static_assert(std::is_integral_v<V> && !std::is_same_v<V, bool>, "typeflow::op_with: an integer attribute takes an integer");
    if (!std::in_range<M>(v)) op_with_value_out_of_range();
    return static_cast<M>(v);
  } else if constexpr (std::is_floating_point_v<M>) {
    static_assert(std::is_arithmetic_v<V> && !std::is_same_v<V, bool>, "typeflow::op_with: a float attribute takes a number");
    return static_cast<M>(v);
  } else if constexpr (ops::named_enum<M>) {
    if constexpr (std::is_same_v<V, M>) {
      return v;
    } else {
      static_assert(std::is_convertible_v<V, std::string_view>, "typeflow::op_with: this attribute takes one of its names");
      M out{};
      if (!parse_enum_name(std::string_view(v), out)) op_with_name_not_of_the_enum();
      return out;
    }
  } else {
    static_assert(std::is_convertible_v<V, M>, "typeflow::op_with: the value's type is not the attribute's");
    return static_cast<M>(v);
  }
}

template <class Op, fixed_string Name>
constexpr bool has_attribute() {
  return std::apply([](auto... a) { return ((decltype(a)::name == Name.view()) || ... || false); }, op_attributes<Op>);
}

template <class Op, fixed_string Name, class V>
constexpr void set_attribute(Op& op, const V& value) {
  static_assert(has_attribute<Op, Name>() || compile_error<text_constant<[] {
                  if (has_attribute<Op, Name>()) return text();
                  text names;
                  std::apply([&](auto... a) { ((names.append(names.empty() ? "" : ", "), names.append(decltype(a)::name)), ...); },
                             op_attributes<Op>);
                  return cat("op_with: op ", Op::name, " has no attribute named ", Name.view(),
                             names.empty() ? std::string_view("; it takes none") : std::string_view("; it takes: "), names.view());
                }>::value>::value,
                "typeflow::op_with<Op>(attr<\"name\">(value)...): the op has no attribute of that name");
  std::apply(
      [&](auto... a) {
        (
            [&] {
              if constexpr (decltype(a)::name == Name.view()) {
                using M = typename member_value<std::remove_cv_t<decltype(decltype(a)::member)>>::type;
                op.*decltype(a)::member = attr_from<M>(value);
              }
            }(),
            ...);
      },
      op_attributes<Op>);
}

}  // namespace detail

// The op value with the attributes given by name, the others at their defaults; what onnx2cpp and
// to_cpp write, and usable as a template argument:
//   tf::apply<tf::op_with<tf::ops::conv2d>(tf::attr<"stride_h">(2), tf::attr<"padding">("same"))>(x, k)
// An unknown name, a value of the wrong kind or out of the attribute's range does not compile.
template <class Op, detail::fixed_string... Names, class... Vs>
constexpr Op op_with(attr_arg<Names, Vs>... args) {
  Op op{};
  (detail::set_attribute<Op, Names>(op, args.value), ...);
  return op;
}

// The op's attributes, every one of them (defaults included).
template <class Op>
attr_map to_attrs(const Op& op) {
  attr_map m;
  std::apply([&](auto... a) { (m.set(decltype(a)::name, detail::write_attr(op.*decltype(a)::member)), ...); },
             op_attributes<Op>);
  return m;
}

}  // namespace typeflow
