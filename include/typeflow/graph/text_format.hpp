// SPDX-License-Identifier: Apache-2.0
// The text format of runtime graphs (docs/graph_text_format.md): one node per line,
//   name = op(input, input:0, ^control) attr=value attr=value @device   # comment
// parse_graph(text) -> graph_def, or invalid_argument "line L, column C: what was expected";
// to_text(graph_def) writes what parse_graph reads back to the same graph_def; load_graph(path)
// reads a file (not_found naming the path when it cannot).
#pragma once

#include <typeflow/fwd.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/graph/attr_value.hpp>
#include <typeflow/graph/graph_def.hpp>

namespace typeflow {

namespace detail {

class graph_text_parser {
 public:
  explicit graph_text_parser(std::string_view text) : text_(text) {}

  result<graph_def> parse() {
    graph_def g;
    for (;;) {
      const std::size_t end = text_.find('\n', line_start_);
      line_ = text_.substr(line_start_, end == std::string_view::npos ? std::string_view::npos : end - line_start_);
      pos_ = 0;
      skip_space();
      if (!at_end()) {
        node_def n;
        n.line = line_number_;
        if (auto st = parse_node(n); !st.ok()) return st;
        g.nodes.push_back(std::move(n));
      }
      if (end == std::string_view::npos) break;
      line_start_ = end + 1;
      ++line_number_;
    }
    return g;
  }

 private:
  // End of the line's content: its end, or a '#' comment.
  bool at_end() const { return pos_ >= line_.size() || line_[pos_] == '#'; }
  void skip_space() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t' || line_[pos_] == '\r')) ++pos_;
  }
  status error(std::string_view what) const {
    std::string found = at_end() ? std::string("the end of the line") : "'" + std::string(line_.substr(pos_, 24)) + "'";
    return errors::invalid_argument("line ", line_number_, ", column ", pos_ + 1, ": expected ", what, ", found ", found);
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < line_.size() && line_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-';
  }
  std::string_view word() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < line_.size() && name_char(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }

  status parse_node(node_def& n) {
    n.name = std::string(word());
    if (n.name.empty()) return error("a node name");
    if (!accept('=')) return error("'=' after the node name");
    n.op = std::string(word());
    if (n.op.empty()) return error("an op name");
    if (!accept('(')) return error("'(' after the op name");
    if (!accept(')')) {
      do {
        skip_space();
        const bool control = accept('^');
        std::string in(word());
        if (in.empty()) return error("an input name");
        if (!control && accept(':')) {
          skip_space();
          const std::size_t start = pos_;
          while (pos_ < line_.size() && std::isdigit(static_cast<unsigned char>(line_[pos_]))) ++pos_;
          if (start == pos_) return error("a port number after ':'");
          in += ":" + std::string(line_.substr(start, pos_ - start));
        }
        n.inputs.push_back(control ? "^" + in : in);
      } while (accept(','));
      if (!accept(')')) return error("',' or ')' in the input list");
    }
    for (;;) {
      skip_space();
      if (at_end()) return ok_status();
      if (accept('@')) {
        skip_space();
        const std::size_t start = pos_;
        while (pos_ < line_.size() && !std::isspace(static_cast<unsigned char>(line_[pos_])) && line_[pos_] != '#') ++pos_;
        n.device = std::string(line_.substr(start, pos_ - start));
        if (n.device.empty()) return error("a device after '@'");
        skip_space();
        if (!at_end()) return error("the end of the line after the device");
        return ok_status();
      }
      const std::size_t attr_column = pos_;
      const std::string name(word());
      if (name.empty()) return error("an attribute name=value, '@device' or the end of the line");
      if (!accept('=')) return error("'=' after attribute '" + name + "'");
      auto value = parse_value();
      if (!value.ok()) return value.status();
      if (!n.attrs.set(name, std::move(*value))) {
        pos_ = attr_column;
        return errors::invalid_argument("line ", line_number_, ", column ", attr_column + 1, ": attribute '", name,
                                        "' is given twice");
      }
    }
  }

  result<attr_value> parse_value() {
    skip_space();
    if (at_end()) return error("a value");
    const char c = line_[pos_];
    if (c == '"') {
      auto s = parse_string();
      if (!s.ok()) return s.status();
      return attr_value(std::move(*s));
    }
    if (c == '[') return parse_list();
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) {
      bool is_int = false;
      auto number = parse_number(is_int);
      if (!number.ok()) return number.status();
      if (is_int) return attr_value(static_cast<std::int64_t>(*number));
      return attr_value(*number);
    }
    const std::size_t start = pos_;
    const std::string_view w = word();
    if (w == "true") return attr_value(true);
    if (w == "false") return attr_value(false);
    if (w == "shape") return parse_shape();
    if (dtype d; parse_dtype(w, d)) return attr_value(d);
    pos_ = start;
    return error("a value (number, true, false, \"string\", dtype, shape[...], [list])");
  }

  result<std::string> parse_string() {
    const std::size_t start = pos_;
    ++pos_;  // "
    std::string s;
    while (pos_ < line_.size() && line_[pos_] != '"') {
      if (line_[pos_] == '\\' && pos_ + 1 < line_.size()) ++pos_;
      s.push_back(line_[pos_++]);
    }
    if (pos_ >= line_.size()) {
      pos_ = start;
      return errors::invalid_argument("line ", line_number_, ", column ", start + 1, ": the string is not closed by '\"'");
    }
    ++pos_;
    return s;
  }

  // An integer when `is_int` (no '.', exponent, inf or nan), else a double.
  result<double> parse_number(bool& is_int) {
    const std::size_t start = pos_;
    while (pos_ < line_.size() && (std::isalnum(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '.' ||
                                   line_[pos_] == '-' || line_[pos_] == '+'))
      ++pos_;
    std::string_view t = line_.substr(start, pos_ - start);
    if (!t.empty() && t[0] == '+') t.remove_prefix(1);
    is_int = t.find_first_of(".eEnN") == std::string_view::npos;
    if (is_int) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec == std::errc() && p == t.data() + t.size()) return static_cast<double>(v);
      pos_ = start;
      return error(ec == std::errc::result_out_of_range ? "an integer that fits in 64 bits" : "a number");
    }
    double v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc() && p == t.data() + t.size()) return v;
    pos_ = start;
    return error(ec == std::errc::result_out_of_range ? "a number in the range of a double" : "a number");
  }

  result<attr_value> parse_shape() {
    if (!accept('[')) return error("'[' after shape");
    std::vector<std::int64_t> dims;
    if (!accept(']')) {
      do {
        skip_space();
        if (accept('?')) {
          dims.push_back(dyn);
          continue;
        }
        bool is_int = false;
        const std::size_t at = pos_;
        auto d = parse_number(is_int);
        if (!d.ok()) return d.status();
        if (!is_int || *d < 0) {
          pos_ = at;
          return error("a dimension: a non-negative integer or '?'");
        }
        dims.push_back(static_cast<std::int64_t>(*d));
      } while (accept(','));
      if (!accept(']')) return error("',' or ']' in the shape");
    }
    auto s = shape::from_span(std::span<const std::int64_t>(dims));
    if (!s.ok()) return errors::invalid_argument("line ", line_number_, ": ", s.status().message());
    return attr_value(*s);
  }

  result<attr_value> parse_list() {
    ++pos_;  // [
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
    std::vector<std::string> strings;
    bool all_int = true, any_string = false, any_number = false;
    if (!accept(']')) {
      do {
        skip_space();
        if (pos_ < line_.size() && line_[pos_] == '"') {
          auto s = parse_string();
          if (!s.ok()) return s.status();
          strings.push_back(std::move(*s));
          any_string = true;
        } else {
          bool is_int = false;
          auto v = parse_number(is_int);
          if (!v.ok()) return v.status();
          all_int = all_int && is_int;
          ints.push_back(static_cast<std::int64_t>(*v));
          floats.push_back(*v);
          any_number = true;
        }
        if (any_string && any_number) return error("list elements of one type (numbers or strings)");
      } while (accept(','));
      if (!accept(']')) return error("',' or ']' in the list");
    }
    if (any_string) return attr_value(std::move(strings));
    if (all_int) return attr_value(std::move(ints));
    return attr_value(std::move(floats));
  }

  std::string_view text_;
  std::string_view line_;
  std::size_t line_start_ = 0;
  std::size_t pos_ = 0;
  int line_number_ = 1;
};

}  // namespace detail

inline result<graph_def> parse_graph(std::string_view text) { return detail::graph_text_parser(text).parse(); }

inline std::string to_text(const graph_def& g) {
  detail::text t;
  for (const node_def& n : g.nodes) {
    detail::append(t, detail::cat(n.name, " = ", n.op, "("));
    for (std::size_t i = 0; i < n.inputs.size(); ++i) detail::append(t, detail::cat(i ? ", " : "", n.inputs[i]));
    t.push_back(')');
    for (const auto& [name, value] : n.attrs) {
      detail::append(t, detail::cat(" ", name, "="));
      value.append_to(t);
    }
    if (!n.device.empty()) detail::append(t, detail::cat(" @", n.device));
    t.push_back('\n');
  }
  return t.str();
}

inline result<graph_def> load_graph(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errors::not_found("cannot open graph file '", path, "'");
  std::ostringstream s;
  s << in.rdbuf();
  auto g = parse_graph(s.str());
  if (!g.ok()) return g.status().with_context(path);
  return g;
}

}  // namespace typeflow
