// SPDX-License-Identifier: Apache-2.0
// A whole file written at once, for the savers of tensors and the tools that write text: the bytes
// go to `path`.tmp, which is then renamed over `path`, so an error (a full disk, a directory that
// does not exist) leaves what was at `path` as it was. `what` names the file in messages
// ("safetensors file"); a file that cannot be created is not_found, a failed write or rename
// unavailable, each with the system's reason.
#pragma once

#include <typeflow/core/detail/internal_header_check.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <typeflow/core/status.hpp>

namespace typeflow::detail {

inline status write_whole_file(const std::string& path, std::string_view bytes, std::string_view what) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return errors::not_found("cannot write ", what, " '", path, "': ", std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_errno = errno;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    return errors::unavailable("I/O error writing ", what, " '", path, "': ", std::strerror(written ? close_errno : write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    return errors::unavailable("cannot write ", what, " '", path, "': ", std::strerror(rename_errno));
  }
  return ok_status();
}

}  // namespace typeflow::detail
