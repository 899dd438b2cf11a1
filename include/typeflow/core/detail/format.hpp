// SPDX-License-Identifier: Apache-2.0
// constexpr text building for status messages. std::string is avoided on purpose: GCC 12 rejects
// destroying a moved-from short std::string in a constant expression, and shape inference
// (which builds these messages) runs at compile time. A vector of chars has no such problem.
#pragma once
#include <typeflow/core/detail/internal_header_check.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace typeflow::detail {

class text {
 public:
  constexpr text() = default;
  constexpr explicit text(std::string_view s) { append(s); }
  constexpr void append(std::string_view s) {
    if (!s.empty()) chars_.insert(chars_.end(), s.begin(), s.end());  // an empty view may have a null data()
  }
  constexpr void push_back(char c) { chars_.push_back(c); }
  constexpr std::string_view view() const noexcept { return {chars_.data(), chars_.size()}; }
  constexpr bool empty() const noexcept { return chars_.empty(); }
  std::string str() const { return std::string(view()); }
  friend constexpr bool operator==(const text&, const text&) = default;

 private:
  std::vector<char> chars_;
};

constexpr void append_int(text& out, std::int64_t v) {
  // Work on the magnitude as unsigned: -INT64_MIN overflows a signed value.
  std::uint64_t m = static_cast<std::uint64_t>(v);
  if (v < 0) {
    out.push_back('-');
    m = ~m + 1;
  }
  char digits[20]{};
  int n = 0;
  do { digits[n++] = static_cast<char>('0' + m % 10); m /= 10; } while (m != 0);
  while (n > 0) out.push_back(digits[--n]);
}

constexpr void append(text& out, std::string_view s) { out.append(s); }
constexpr void append(text& out, const char* s) { out.append(std::string_view(s)); }
constexpr void append(text& out, char c) { out.push_back(c); }
constexpr void append(text& out, int v) { append_int(out, v); }
constexpr void append(text& out, long v) { append_int(out, v); }
constexpr void append(text& out, long long v) { append_int(out, static_cast<std::int64_t>(v)); }
constexpr void append(text& out, unsigned v) { append_int(out, static_cast<std::int64_t>(v)); }
constexpr void append(text& out, unsigned long v) { append_int(out, static_cast<std::int64_t>(v)); }
constexpr void append(text& out, unsigned long long v) { append_int(out, static_cast<std::int64_t>(v)); }
constexpr void append(text& out, bool v) { out.append(v ? "true" : "false"); }
constexpr void append(text& out, const text& t) { out.append(t.view()); }
inline void append(text& out, const std::string& s) { out.append(s); }
// A double: at run time the shortest text that reads back (std::to_chars); in a constant
// expression, where std::to_chars is not constexpr here, rounded to 6 decimals.
constexpr void append(text& out, double v) {
  if (!std::is_constant_evaluated()) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(std::string_view(buf, ec == std::errc{} ? end : buf));
    return;
  }
  if (v != v) return out.append("nan");
  if (v < 0) out.push_back('-');
  const double m = v < 0 ? -v : v;
  if (m > 9.0e18) return out.append(m > std::numeric_limits<double>::max() ? "inf" : "a number past 9e18");
  auto whole = static_cast<std::int64_t>(m);
  auto millionths = static_cast<std::int64_t>((m - static_cast<double>(whole)) * 1e6 + 0.5);
  if (millionths == 1000000) ++whole, millionths = 0;
  append_int(out, whole);
  if (millionths == 0) return;
  out.push_back('.');
  for (std::int64_t d = 100000; millionths != 0; d /= 10) {
    out.push_back(static_cast<char>('0' + millionths / d));
    millionths %= d;
  }
}
constexpr void append(text& out, float v) { append(out, static_cast<double>(v)); }
// Anything with `append_to(text&)` (shapes, specs) formats itself.
template <class T>
  requires requires(const T& t, text& o) { t.append_to(o); }
constexpr void append(text& out, const T& v) { v.append_to(out); }

// cat("input ", 1, " has shape ", s) -> "input 1 has shape [2, 3]"
template <class... Parts>
constexpr text cat(const Parts&... parts) {
  text out;
  (append(out, parts), ...);
  return out;
}

} // namespace typeflow::detail
