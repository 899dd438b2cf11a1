// SPDX-License-Identifier: Apache-2.0
// Typed attribute values of runtime-graph nodes, as TensorFlow's AttrValue: int, float, bool,
// string, dtype, shape, and lists of int, float, string. attr_map keeps them by name, sorted.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow {

enum class attr_type : unsigned char { int_, float_, bool_, string, dtype, shape, int_list, float_list, string_list };

constexpr std::string_view to_string(attr_type t) {
  switch (t) {
    case attr_type::int_: return "int";
    case attr_type::float_: return "float";
    case attr_type::bool_: return "bool";
    case attr_type::string: return "string";
    case attr_type::dtype: return "dtype";
    case attr_type::shape: return "shape";
    case attr_type::int_list: return "list(int)";
    case attr_type::float_list: return "list(float)";
    case attr_type::string_list: return "list(string)";
  }
  return "?";
}

class attr_value {
 public:
  using storage = std::variant<std::int64_t, double, bool, std::string, dtype, shape, std::vector<std::int64_t>,
                               std::vector<double>, std::vector<std::string>>;

  attr_value() = default;
  attr_value(std::int64_t v) : v_(v) {}
  attr_value(int v) : v_(std::int64_t{v}) {}
  attr_value(double v) : v_(v) {}
  attr_value(bool v) : v_(v) {}
  attr_value(std::string v) : v_(std::move(v)) {}
  attr_value(const char* v) : v_(std::string(v)) {}
  attr_value(dtype v) : v_(v) {}
  attr_value(shape v) : v_(v) {}
  attr_value(std::vector<std::int64_t> v) : v_(std::move(v)) {}
  attr_value(std::vector<double> v) : v_(std::move(v)) {}
  attr_value(std::vector<std::string> v) : v_(std::move(v)) {}

  attr_type type() const noexcept { return static_cast<attr_type>(v_.index()); }
  template <class T>
  const T* get() const noexcept { return std::get_if<T>(&v_); }

  // The text format's spelling: 3, 1.5, true, "same", f32, shape[2, ?], [1, 2], [0.5], ["a"].
  void append_to(detail::text& out) const {
    std::visit([&](const auto& v) { append_value(out, v); }, v_);
  }
  std::string to_string() const {
    detail::text t;
    append_to(t);
    return t.str();
  }

  friend bool operator==(const attr_value&, const attr_value&) = default;

 private:
  static void append_value(detail::text& out, std::int64_t v) { detail::append_int(out, v); }
  static void append_value(detail::text& out, double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);  // reads back as the same double
    std::string s = buffer;
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a float when read back
    out.append(s);
  }
  static void append_value(detail::text& out, bool v) { out.append(v ? "true" : "false"); }
  static void append_value(detail::text& out, const std::string& v) {
    out.push_back('"');
    for (char c : v) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  static void append_value(detail::text& out, dtype v) { out.append(name_of(v)); }
  static void append_value(detail::text& out, const shape& v) {
    out.append("shape[");
    for (std::size_t i = 0; i < v.rank(); ++i) {
      if (i) out.append(", ");
      if (v[i] == dyn) out.push_back('?');
      else detail::append_int(out, v[i]);
    }
    out.push_back(']');
  }
  template <class T>
  static void append_value(detail::text& out, const std::vector<T>& v) {
    out.push_back('[');
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out.append(", ");
      append_value(out, v[i]);
    }
    out.push_back(']');
  }

  storage v_;
};

// Attributes by name, kept sorted so that equal maps compare equal and print the same.
class attr_map {
 public:
  attr_map() = default;
  attr_map(std::initializer_list<std::pair<std::string, attr_value>> values) {
    for (const auto& [k, v] : values) set(k, v);
  }

  // Sets `name`; returns false when it was already set (the old value is replaced).
  bool set(std::string_view name, attr_value value) {
    auto it = lower(name);
    if (it != entries_.end() && it->first == name) {
      it->second = std::move(value);
      return false;
    }
    entries_.insert(it, {std::string(name), std::move(value)});
    return true;
  }
  const attr_value* find(std::string_view name) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                               [](const auto& e, std::string_view n) { return e.first < n; });
    return it != entries_.end() && it->first == name ? &it->second : nullptr;
  }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  friend bool operator==(const attr_map&, const attr_map&) = default;

 private:
  std::vector<std::pair<std::string, attr_value>>::iterator lower(std::string_view name) {
    return std::lower_bound(entries_.begin(), entries_.end(), name,
                            [](const auto& e, std::string_view n) { return e.first < n; });
  }
  std::vector<std::pair<std::string, attr_value>> entries_;
};

}  // namespace typeflow
