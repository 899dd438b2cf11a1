// SPDX-License-Identifier: Apache-2.0
// TensorFlow's device names: parsing, matching and the full form.
//   full:    /job:localhost/replica:0/task:0/device:CPU:1
//   partial: /device:CPU:1, /device:CPU, /cpu:1, CPU:1, cpu, GPU, /job:localhost, ""
// A partial name leaves fields unset; it matches a full name when every field it sets is equal
// (device types compare without case, as TensorFlow's legacy "/cpu:0" spelling needs). Used by the
// placer (explicit and partial device constraints) and by device_set lookups.
#pragma once

#include <typeflow/fwd.hpp>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow {

// The job, replica and task of every device in this process.
inline constexpr std::string_view local_job = "localhost";

struct device_name {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> type;  // upper case: "CPU", "GPU"
  std::optional<int> id;

  // "/job:localhost/replica:0/task:0/device:CPU:1"
  static std::string full(std::string_view type, int id) {
    return detail::cat("/job:", local_job, "/replica:0/task:0/device:", type, ":", id).str();
  }

  // Parses a full or partial name; invalid_argument naming the text and what is wrong.
  static result<device_name> parse(std::string_view text) {
    device_name n;
    const std::string_view original = text;
    auto bad = [&](std::string_view why) {
      return errors::invalid_argument("device name '", original, "': ", why,
                                      " (expected e.g. /job:localhost/replica:0/task:0/device:CPU:0, /device:GPU:1 or cpu:0)");
    };
    auto number = [](std::string_view digits) -> std::optional<int> {
      int v = 0;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || v < 0) return std::nullopt;
      return v;
    };
    // "TYPE" or "TYPE:ID" (a device part); the type is letters, digits and '_', starting with a letter.
    auto device_part = [&](std::string_view part) -> status {
      const auto colon = part.find(':');
      std::string_view type = part.substr(0, colon);
      if (type.empty() || !std::isalpha(static_cast<unsigned char>(type[0]))) return bad("a device type must start with a letter");
      for (char c : type)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return bad("a device type is letters, digits and '_'");
      if (n.type) return bad("the device is given twice");
      std::string upper(type);
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      n.type = std::move(upper);
      if (colon != std::string_view::npos) {
        std::string_view digits = part.substr(colon + 1);
        if (digits == "*") return ok_status();
        auto id = number(digits);
        if (!id) return bad("the device id is not a non-negative number");
        n.id = *id;
      }
      return ok_status();
    };
    if (text.empty()) return n;
    if (text[0] != '/') {
      if (auto st = device_part(text); !st.ok()) return st;
      return n;
    }
    while (!text.empty()) {
      if (text[0] != '/') return bad("fields are separated by '/'");
      text.remove_prefix(1);
      const auto end = text.find('/');
      std::string_view field = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
      const auto colon = field.find(':');
      if (colon == std::string_view::npos) return bad("a field has no ':'");
      const std::string_view key = field.substr(0, colon), value = field.substr(colon + 1);
      if (key == "job") {
        if (value.empty()) return bad("empty job");
        n.job = std::string(value);
      } else if (key == "replica" || key == "task") {
        auto v = number(value);
        if (!v) return bad(key == "task" ? "the task is not a non-negative number" : "the replica is not a non-negative number");
        (key == "task" ? n.task : n.replica) = *v;
      } else if (key == "device") {
        if (auto st = device_part(value); !st.ok()) return st;
      } else {
        // The legacy form "/cpu:0", "/gpu:1".
        if (auto st = device_part(field); !st.ok()) return st;
      }
    }
    return n;
  }

  bool is_full() const noexcept { return job && replica && task && type && id; }

  // Whether the device with full name `other` satisfies this (partial) name.
  bool matches(const device_name& other) const {
    if (job && other.job != job) return false;
    if (replica && other.replica != replica) return false;
    if (task && other.task != task) return false;
    if (type && other.type != type) return false;
    if (id && other.id != id) return false;
    return true;
  }

  // Whether this name can name a device of this process at all.
  bool is_local() const noexcept { return (!job || *job == local_job) && (!replica || *replica == 0) && (!task || *task == 0); }

  // The name with the fields it sets ("/device:CPU:*" when only the type is set).
  std::string to_string() const {
    detail::text t;
    if (job) detail::append(t, detail::cat("/job:", *job));
    if (replica) detail::append(t, detail::cat("/replica:", *replica));
    if (task) detail::append(t, detail::cat("/task:", *task));
    if (type) detail::append(t, detail::cat("/device:", *type, ":"));
    if (type) {
      if (id) detail::append_int(t, *id);
      else t.push_back('*');
    }
    return t.str();
  }
};

} // namespace typeflow
