// SPDX-License-Identifier: Apache-2.0
// status: the outcome of an operation (a code and a message); result<T>: a value or a status.
// Both are usable in constant expressions, so shape inference can run at compile time.
#pragma once

#include <typeflow/fwd.hpp>

#include <cassert>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <typeflow/core/detail/format.hpp>

namespace typeflow {

// The codes are TensorFlow's (and gRPC's) so that messages read the same.
enum class status_code : std::uint8_t {
  ok,
  invalid_argument,
  not_found,
  already_exists,
  failed_precondition,
  out_of_range,
  resource_exhausted,
  deadline_exceeded,
  cancelled,
  unimplemented,
  internal,
  unavailable,
  aborted,
};

constexpr std::string_view to_string(status_code c) noexcept {
  switch (c) {
    case status_code::ok: return "ok";
    case status_code::invalid_argument: return "invalid_argument";
    case status_code::not_found: return "not_found";
    case status_code::already_exists: return "already_exists";
    case status_code::failed_precondition: return "failed_precondition";
    case status_code::out_of_range: return "out_of_range";
    case status_code::resource_exhausted: return "resource_exhausted";
    case status_code::deadline_exceeded: return "deadline_exceeded";
    case status_code::cancelled: return "cancelled";
    case status_code::unimplemented: return "unimplemented";
    case status_code::internal: return "internal";
    case status_code::unavailable: return "unavailable";
    case status_code::aborted: return "aborted";
  }
  return "unknown";
}

class [[nodiscard]] status {
 public:
  constexpr status() noexcept = default;  // ok
  constexpr status(status_code code, detail::text message) : code_(code), message_(std::move(message)) {}
  constexpr status(status_code code, std::string_view message) : code_(code), message_(message) {}

  constexpr bool ok() const noexcept { return code_ == status_code::ok; }
  constexpr status_code code() const noexcept { return code_; }
  constexpr std::string_view message() const noexcept { return message_.view(); }

  // "invalid_argument: add: input 1 has shape [4] ..." ; "ok" when ok.
  std::string to_string() const {
    if (ok()) return "ok";
    return detail::cat(typeflow::to_string(code_), ": ", message_).str();
  }
  constexpr void append_to(detail::text& out) const {
    if (ok()) { out.append("ok"); return; }
    detail::append(out, typeflow::to_string(code_));
    out.append(": ");
    out.append(message_.view());
  }

  // Keeps the first error: a later update with an error does not overwrite an earlier one.
  constexpr void update(const status& other) {
    if (ok() && !other.ok()) *this = other;
  }

  // Prefixes the message with context ("node 'dense1': ..."); ok stays ok.
  constexpr status with_context(std::string_view context) const {
    if (ok()) return *this;
    return status(code_, detail::cat(context, ": ", message_));
  }

  friend constexpr bool operator==(const status& a, const status& b) = default;

 private:
  status_code code_ = status_code::ok;
  detail::text message_;
};

inline constexpr status ok_status() { return status(); }

// Constructors named as in TensorFlow's errors:: namespace; the parts are concatenated.
namespace errors {
#define TYPEFLOW_DEFINE_ERROR(name)                                          \
  template <class... Parts>                                                  \
  constexpr status name(const Parts&... parts) {                             \
    return status(status_code::name, detail::cat(parts...));                 \
  }
TYPEFLOW_DEFINE_ERROR(invalid_argument)
TYPEFLOW_DEFINE_ERROR(not_found)
TYPEFLOW_DEFINE_ERROR(already_exists)
TYPEFLOW_DEFINE_ERROR(failed_precondition)
TYPEFLOW_DEFINE_ERROR(out_of_range)
TYPEFLOW_DEFINE_ERROR(resource_exhausted)
TYPEFLOW_DEFINE_ERROR(deadline_exceeded)
TYPEFLOW_DEFINE_ERROR(cancelled)
TYPEFLOW_DEFINE_ERROR(unimplemented)
TYPEFLOW_DEFINE_ERROR(internal)
TYPEFLOW_DEFINE_ERROR(unavailable)
TYPEFLOW_DEFINE_ERROR(aborted)
#undef TYPEFLOW_DEFINE_ERROR
} // namespace errors

// A value or the status that explains why there is none. Usable in constant expressions when
// T is trivially destructible (shapes, specs, dtypes), which is what shape inference returns.
template <class T>
class [[nodiscard]] result {
 public:
  constexpr result(T value) : value_(std::move(value)) {}
  constexpr result(typeflow::status s) : status_(std::move(s)) {
    // A result made from a status must carry an error; an ok status has no value to go with it.
    if (status_.ok()) status_ = errors::internal("result<T> constructed from an ok status without a value");
  }

  constexpr bool ok() const noexcept { return status_.ok(); }
  constexpr const typeflow::status& status() const& noexcept { return status_; }
  constexpr typeflow::status take_status() && noexcept { return std::move(status_); }

  // Precondition: ok(). Checked with assert in debug builds.
  constexpr T& value() & { assert(ok()); return *value_; }
  constexpr const T& value() const& { assert(ok()); return *value_; }
  constexpr T&& value() && { assert(ok()); return std::move(*value_); }
  constexpr T& operator*() & { return value(); }
  constexpr const T& operator*() const& { return value(); }
  constexpr T&& operator*() && { return std::move(*this).value(); }
  constexpr T* operator->() { return &value(); }
  constexpr const T* operator->() const { return &value(); }

  constexpr T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  typeflow::status status_;
  std::optional<T> value_;
};

namespace detail {

// Runs f(), a body that returns a status or result, and turns std::bad_alloc and std::system_error
// thrown on this thread into a status naming `what`: status-returning APIs throw nothing.
template <class F>
auto status_boundary(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return errors::resource_exhausted(what, ": out of memory");
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::resource_unavailable_try_again || e.code() == std::errc::not_enough_memory)
      return errors::resource_exhausted(what, ": ", e.what());
    return errors::internal(what, ": ", e.what());
  }
}

}  // namespace detail

} // namespace typeflow
