// SPDX-License-Identifier: Apache-2.0
// Named tensors in a file: the safetensors format (Hugging Face's), which NumPy, PyTorch and JAX
// read and write, so weights move between typeflow and them without a converter. A file is an
// 8-byte little-endian header length, a JSON header
//   {"__metadata__": {"k": "v"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// and the data: each tensor row-major, little-endian, at its offsets from the end of the header.
//   tensor_file f;  f.add("w", w);  save_safetensors("weights.safetensors", f);
//   auto g = load_safetensors("weights.safetensors");  const tensor* w = g->find("w");
// Reading checks everything before it allocates: a header that is not the format's JSON, an
// unknown key, a dtype typeflow has no type for (I16, U32, F8_E4M3, ...), offsets that do not match
// the shape and dtype, that overlap, leave a hole or pass the end of the file, a duplicate name: each
// is invalid_argument (unimplemented for a dtype) naming the tensor and what is wrong. Saving
// writes a temporary file beside the target and renames it, so a failed save leaves the old file.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/detail/read_file.hpp>
#include <typeflow/core/detail/write_file.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow {

struct named_tensor {
  std::string name;
  tensor value;
};

// The tensors of a safetensors file, in the order of their data, and its string metadata.
struct tensor_file {
  std::vector<named_tensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;

  const tensor* find(std::string_view name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t.value;
    return nullptr;
  }
  // Adds `value` as `name`; invalid_argument if the name is taken or empty, or the tensor is not on the host.
  status add(std::string name, tensor value) {
    if (name.empty()) return errors::invalid_argument("tensor_file::add: a tensor's name is empty");
    if (find(name)) return errors::invalid_argument("tensor_file::add: a tensor named '", name, "' is already there");
    if (auto st = value.check_host_access(); !st.ok())
      return errors::invalid_argument("tensor_file::add: tensor '", name, "': ", st.message());
    tensors.push_back({std::move(name), std::move(value)});
    return ok_status();
  }
};

struct safetensors_options {
  std::size_t max_bytes = std::size_t{1} << 36;        // 64 GiB: the largest file load_safetensors reads
  std::size_t max_header_bytes = std::size_t{100} << 20;  // the format's own limit on the JSON header
};

namespace detail {

// The format's dtype names, for typeflow's dtypes.
inline constexpr std::pair<std::string_view, dtype> safetensors_dtypes[] = {
    {"F16", dtype::f16}, {"BF16", dtype::bf16}, {"F32", dtype::f32}, {"F64", dtype::f64}, {"I8", dtype::i8},
    {"I32", dtype::i32}, {"I64", dtype::i64},  {"U8", dtype::u8},   {"BOOL", dtype::boolean}};

// Swaps each element's bytes on a big-endian host (the format is little-endian).
inline void to_little_endian(char* data, std::size_t bytes, std::size_t element) {
  if constexpr (std::endian::native == std::endian::big)
    for (std::size_t i = 0; i + element <= bytes; i += element) std::reverse(data + i, data + i + element);
}

// The JSON the header holds: objects, arrays, strings and non-negative integers, no deeper than
// the format needs. Errors name the byte offset in the header.
class safetensors_json {
 public:
  explicit safetensors_json(std::string_view text) : s_(text) {}

  status fail(std::string_view what) const {
    return errors::invalid_argument("safetensors header: ", what, " at byte ", pos_ + 8, " of the file");
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool at_end() {
    skip_space();
    return pos_ == s_.size();
  }

  status string(std::string& out) {
    out.clear();
    if (!consume('"')) return fail("expected a string");
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return ok_status();
      if (static_cast<unsigned char>(c) < 0x20) return fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = 0;
          if (auto st = hex4(cp); !st.ok()) return st;
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            std::uint32_t low = 0;
            if (s_.substr(pos_, 2) != "\\u") return fail("a lone UTF-16 surrogate in a string");
            pos_ += 2;
            if (auto st = hex4(low); !st.ok()) return st;
            if (low < 0xDC00 || low >= 0xE000) return fail("a lone UTF-16 surrogate in a string");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return fail("a lone UTF-16 surrogate in a string");
          }
          append_utf8(out, cp);
          break;
        }
        default: return fail("an unknown escape in a string");
      }
    }
    return fail("an unterminated string");
  }

  status integer(std::uint64_t& out) {
    skip_space();
    if (pos_ == s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("expected a non-negative integer");
    out = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(s_[pos_] - '0');
      if (out > (UINT64_MAX - digit) / 10) return fail("an integer too large");
      out = out * 10 + digit;
      ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) return fail("expected an integer");
    return ok_status();
  }

  // [n, n, ...] of at most `max` integers.
  status integers(std::vector<std::uint64_t>& out, std::size_t max) {
    out.clear();
    if (!consume('[')) return fail("expected an array");
    if (consume(']')) return ok_status();
    do {
      if (out.size() == max) return fail(detail::cat("an array longer than ", max).str());
      std::uint64_t v = 0;
      if (auto st = integer(v); !st.ok()) return st;
      out.push_back(v);
    } while (consume(','));
    if (!consume(']')) return fail("expected ',' or ']'");
    return ok_status();
  }

  // {"key": f(key), ...}: f reads the value after the colon.
  template <class F>
  status object(F&& member) {
    if (!consume('{')) return fail("expected an object");
    if (consume('}')) return ok_status();
    std::string key;
    do {
      if (auto st = string(key); !st.ok()) return st;
      if (!consume(':')) return fail("expected ':'");
      if (auto st = member(key); !st.ok()) return st;
    } while (consume(','));
    if (!consume('}')) return fail("expected ',' or '}'");
    return ok_status();
  }

 private:
  status hex4(std::uint32_t& out) {
    if (s_.size() - pos_ < 4) return fail("a short \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      out <<= 4;
      if (h >= '0' && h <= '9') out |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') out |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') out |= static_cast<std::uint32_t>(h - 'A' + 10);
      else return fail("a bad \\u escape");
    }
    return ok_status();
  }
  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace detail

// The tensors of a safetensors file held in `bytes`; `origin` names it in messages.
inline result<tensor_file> parse_safetensors(std::string_view bytes, std::string_view origin = "safetensors data",
                                             const safetensors_options& options = {}) {
  auto bad = [&](auto&&... what) { return errors::invalid_argument(origin, ": ", what...); };
  if (bytes.size() < 8) return bad("shorter (", bytes.size(), " bytes) than the 8-byte header length");
  std::uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (header_bytes > options.max_header_bytes)
    return bad("a header of ", header_bytes, " bytes, more than the limit of ", options.max_header_bytes,
               " (safetensors_options::max_header_bytes)");
  if (header_bytes > bytes.size() - 8)
    return bad("the header is ", header_bytes, " bytes, the file has ", bytes.size() - 8, " after the length");
  const std::string_view header = bytes.substr(8, static_cast<std::size_t>(header_bytes));
  const std::string_view data = bytes.substr(8 + static_cast<std::size_t>(header_bytes));

  struct entry {
    std::string name;
    dtype type{};
    shape dims;
    std::uint64_t begin = 0, end = 0;
    std::size_t order = 0;  // in the header
  };
  std::vector<entry> entries;
  tensor_file file;
  detail::safetensors_json json(header);
  status st = json.object([&](const std::string& key) -> status {
    if (key == "__metadata__") {
      if (!file.metadata.empty()) return json.fail("a second __metadata__");
      std::string value;
      return json.object([&](const std::string& k) -> status {
        if (auto s = json.string(value); !s.ok()) return s;
        file.metadata.emplace_back(k, value);
        return ok_status();
      });
    }
    if (key.empty()) return json.fail("a tensor with an empty name");
    for (const auto& e : entries)
      if (e.name == key) return json.fail(detail::cat("a second tensor named '", key, "'").str());
    entry e;
    e.name = key;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    std::vector<std::uint64_t> ints;
    if (auto s = json.object([&](const std::string& field) -> status {
          if (field == "dtype") {
            std::string name;
            if (auto s2 = json.string(name); !s2.ok()) return s2;
            const auto* found = std::find_if(std::begin(detail::safetensors_dtypes), std::end(detail::safetensors_dtypes),
                                             [&](const auto& d) { return d.first == name; });
            if (found == std::end(detail::safetensors_dtypes))
              return errors::unimplemented("tensor '", key, "' has dtype ", name,
                                           ", which typeflow has no type for (it reads F16, BF16, F32, F64, I8, I32, "
                                           "I64, U8 and BOOL)");
            e.type = found->second;
            has_dtype = true;
          } else if (field == "shape") {
            if (auto s2 = json.integers(ints, max_rank); !s2.ok()) return s2;
            std::vector<std::int64_t> dims;
            for (const auto d : ints) {
              if (d > static_cast<std::uint64_t>(max_num_elements))
                return json.fail(detail::cat("tensor '", key, "' has a dimension of ", d).str());
              dims.push_back(static_cast<std::int64_t>(d));
            }
            auto s2 = shape::from_span(std::span<const std::int64_t>(dims));
            if (!s2.ok()) return json.fail(detail::cat("tensor '", key, "': ", s2.status().message()).str());
            e.dims = *s2;
            has_shape = true;
          } else if (field == "data_offsets") {
            if (auto s2 = json.integers(ints, 2); !s2.ok()) return s2;
            if (ints.size() != 2) return json.fail(detail::cat("tensor '", key, "': data_offsets must be [begin, end]").str());
            e.begin = ints[0];
            e.end = ints[1];
            has_offsets = true;
          } else {
            return json.fail(detail::cat("tensor '", key, "' has an unknown key '", field,
                                         "' (a tensor has dtype, shape and data_offsets)").str());
          }
          return ok_status();
        });
        !s.ok())
      return s;
    if (!has_dtype || !has_shape || !has_offsets)
      return json.fail(detail::cat("tensor '", key, "' lacks ", !has_dtype ? "dtype" : !has_shape ? "shape" : "data_offsets").str());
    e.order = entries.size();
    entries.push_back(std::move(e));
    return ok_status();
  });
  if (st.ok() && !json.at_end()) st = json.fail("more after the header's object");
  if (!st.ok()) return st.with_context(origin);  // invalid_argument, or unimplemented for a dtype

  // The data: each tensor's size from its dtype and shape, the offsets tiling the data exactly.
  // In the header's order where the offsets tie (std::sort with a tie-break: std::stable_sort's
  // temporary buffer draws a deprecation warning from Clang 19 with libstdc++ 12).
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end != b.end ? a.end < b.end : a.order < b.order;
  });
  std::uint64_t expected_begin = 0;
  for (const auto& e : entries) {
    const auto need = static_cast<std::uint64_t>(e.dims.num_elements()) * size_of(e.type);
    if (e.end < e.begin || e.end - e.begin != need)
      return bad("tensor '", e.name, "' (", e.type, e.dims, ") needs ", need, " bytes, its data_offsets [", e.begin, ", ",
                 e.end, "] give ", e.end < e.begin ? std::string("a negative size") : std::to_string(e.end - e.begin));
    if (e.begin != expected_begin)
      return bad("tensor '", e.name, "' starts at byte ", e.begin, " of the data, where ", expected_begin,
                 e.begin < expected_begin ? " (it overlaps the tensor before it)" : " (a hole before it)");
    if (e.end > data.size())
      return bad("tensor '", e.name, "' ends at byte ", e.end, " of the data, which has ", data.size());
    expected_begin = e.end;
  }
  if (expected_begin != data.size())
    return bad(data.size() - expected_begin, " bytes after the last tensor's data");

  for (const auto& e : entries) {
    auto t = tensor::allocate(e.type, e.dims);
    if (!t.ok()) return t.status();
    if (t->bytes() > 0) {
      std::memcpy(t->data(), data.data() + e.begin, t->bytes());
      detail::to_little_endian(static_cast<char*>(t->data()), t->bytes(), size_of(e.type));
    }
    if (e.type == dtype::boolean)
      for (std::size_t i = 0; i < t->bytes(); ++i)
        if (static_cast<unsigned char>(static_cast<const char*>(t->data())[i]) > 1)
          return bad("tensor '", e.name, "' (bool) holds byte ", static_cast<int>(static_cast<const unsigned char*>(t->data())[i]),
                     " at element ", i, "; a bool is 0 or 1");
    file.tensors.push_back({e.name, std::move(*t)});
  }
  return file;
}

// The file's bytes: the header (names escaped, padded with spaces to 8 bytes) and the data in the
// order of `file.tensors`.
inline result<std::string> to_safetensors(const tensor_file& file) {
  std::string header = "{";
  bool first = true;
  auto comma = [&] {
    if (!first) header += ',';
    first = false;
  };
  if (!file.metadata.empty()) {
    comma();
    header += "\"__metadata__\":{";
    for (std::size_t i = 0; i < file.metadata.size(); ++i) {
      if (i) header += ',';
      detail::append_json_string(header, file.metadata[i].first);
      header += ':';
      detail::append_json_string(header, file.metadata[i].second);
    }
    header += '}';
  }
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    const auto& [name, t] = file.tensors[i];
    if (name.empty() || name == "__metadata__")
      return errors::invalid_argument("to_safetensors: tensor ", i, " is named '", name, "', which the format cannot hold");
    for (std::size_t j = 0; j < i; ++j)
      if (file.tensors[j].name == name) return errors::invalid_argument("to_safetensors: two tensors are named '", name, "'");
    if (auto st = t.check_host_access(); !st.ok())
      return errors::invalid_argument("to_safetensors: tensor '", name, "': ", st.message());
    const auto* found = std::find_if(std::begin(detail::safetensors_dtypes), std::end(detail::safetensors_dtypes),
                                     [&](const auto& d) { return d.second == t.dtype(); });
    if (found == std::end(detail::safetensors_dtypes))
      return errors::invalid_argument("to_safetensors: tensor '", name, "' has an invalid dtype");
    comma();
    detail::append_json_string(header, name);
    header += ":{\"dtype\":\"";
    header += found->first;
    header += "\",\"shape\":[";
    for (std::size_t d = 0; d < t.rank(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.dim(d));
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes()) + "]}";
    offset += t.bytes();
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  out += header;
  out.reserve(out.size() + offset);
  for (const auto& [name, t] : file.tensors) {
    const std::size_t at = out.size();
    out.append(static_cast<const char*>(t.data()), t.bytes());
    detail::to_little_endian(out.data() + at, t.bytes(), size_of(t.dtype()));
  }
  return out;
}

inline result<tensor_file> load_safetensors(const std::string& path, const safetensors_options& options = {}) {
  auto bytes = detail::read_regular_file(path, "safetensors file", options.max_bytes, "safetensors_options::max_bytes",
                                         "give the path of a .safetensors file");
  if (!bytes.ok()) return bytes.status();
  return parse_safetensors(*bytes, "safetensors file '" + path + "'", options);
}

// Writes `file` to `path` through `path`.tmp and a rename: on an error the old file is as it was.
inline status save_safetensors(const std::string& path, const tensor_file& file) {
  auto bytes = to_safetensors(file);
  if (!bytes.ok()) return bytes.status();
  return detail::write_whole_file(path, *bytes, "safetensors file");
}

}  // namespace typeflow
