// SPDX-License-Identifier: Apache-2.0
// The text format of runtime graphs (docs/graph_text_format.md): one node per line,
//   name = op(input, input:0, ^control) attr=value attr=value @device   # comment
// parse_graph(text) -> graph_def, or invalid_argument "line L, column C: what was expected";
// to_text(graph_def) writes what parse_graph reads back to the same graph_def; load_graph(path)
// reads a file (errors name the path; see load_options).
#pragma once

#include <typeflow/fwd.hpp>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>


#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/detail/read_file.hpp>
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
    return errors::invalid_argument("line ", line_number_, ", column ", pos_ + 1, ": ", attribute_context(), "expected ",
                                    what, ", found ", found);
  }
  // "attribute 'axis': " while a value is parsed, so that errors name it.
  std::string attribute_context() const {
    return attribute_.empty() ? std::string() : "attribute '" + std::string(attribute_) + "': ";
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
      attribute_ = name;
      auto value = parse_value();
      attribute_ = {};
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
      auto number = parse_number();
      if (!number.ok()) return number.status();
      return number->is_int ? attr_value(number->i) : attr_value(number->d);
    }
    const std::size_t start = pos_;
    const std::string_view w = word();
    if (w == "true") return attr_value(true);
    if (w == "false") return attr_value(false);
    if (w == "shape") return parse_shape();
    if (w == "inf") return attr_value(std::numeric_limits<double>::infinity());
    if (w == "nan") return attr_value(std::numeric_limits<double>::quiet_NaN());
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

  // A number as written: an integer (no '.', exponent, inf or nan), read exactly as an int64,
  // or a double. Never converted from one to the other here.
  struct number {
    bool is_int = false;
    std::int64_t i = 0;
    double d = 0;
  };
  result<number> parse_number() {
    const std::size_t start = pos_;
    while (pos_ < line_.size() && (std::isalnum(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '.' ||
                                   line_[pos_] == '-' || line_[pos_] == '+'))
      ++pos_;
    std::string_view t = line_.substr(start, pos_ - start);
    if (t.size() > 1 && t[0] == '+' && t[1] != '-') t.remove_prefix(1);
    number n;
    n.is_int = t.find_first_of(".eEnN") == std::string_view::npos;
    const auto [p, ec] = n.is_int ? std::from_chars(t.data(), t.data() + t.size(), n.i)
                                  : std::from_chars(t.data(), t.data() + t.size(), n.d);
    if (ec == std::errc() && p == t.data() + t.size()) return n;
    pos_ = start;
    if (ec == std::errc::result_out_of_range)
      return error(n.is_int ? "an integer in [-9223372036854775808, 9223372036854775807]" : "a number in the range of a double");
    return error("a number");
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
        const std::size_t at = pos_;
        auto d = parse_number();
        if (!d.ok()) return d.status();
        if (!d->is_int || d->i < 0) {
          pos_ = at;
          return error("a dimension: a non-negative integer or '?'");
        }
        dims.push_back(d->i);
      } while (accept(','));
      if (!accept(']')) return error("',' or ']' in the shape");
    }
    auto s = shape::from_span(std::span<const std::int64_t>(dims));
    if (!s.ok()) return errors::invalid_argument("line ", line_number_, ": ", attribute_context(), s.status().message());
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
          auto v = parse_number();
          if (!v.ok()) return v.status();
          all_int = all_int && v->is_int;
          ints.push_back(v->i);
          floats.push_back(v->is_int ? static_cast<double>(v->i) : v->d);
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
  std::string_view attribute_;  // the attribute whose value is being parsed, if any
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

// How load_graph reads a file.
struct load_options {
  // A larger file is refused (resource_exhausted) before it is read.
  std::size_t max_bytes = std::size_t{256} << 20;
};

// The graph in the text file at `path`. Only regular files are read (a directory, a device such as
// /dev/zero or a pipe is invalid_argument); one that cannot be opened is not_found, one larger than
// options.max_bytes is resource_exhausted, a read that fails is unavailable ("I/O error"), and a
// parse error is invalid_argument prefixed by the path.
inline result<graph_def> load_graph(const std::string& path, const load_options& options = {}) {
  auto text = detail::read_regular_file(path, "graph file", options.max_bytes, "load_options::max_bytes",
                                        "give the path of a text-format graph");
  if (!text.ok()) return text.status();
  auto g = parse_graph(*text);
  if (!g.ok()) return g.status().with_context(path);
  return g;
}

}  // namespace typeflow
