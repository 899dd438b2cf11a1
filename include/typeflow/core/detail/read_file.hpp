// SPDX-License-Identifier: Apache-2.0
// The whole of a regular file, read with a size limit, for the loaders of graphs and models: a
// directory, a device such as /dev/zero or a pipe is invalid_argument, a file that cannot be opened
// is not_found, one larger than the limit is resource_exhausted (checked before reading and while
// reading, as a file may grow), a read that fails is unavailable ("I/O error"). `what` names the
// file in messages ("graph file"), `hint` ends the message for a path that is not a file.
#pragma once

#include <typeflow/core/detail/internal_header_check.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <typeflow/core/status.hpp>

namespace typeflow::detail {

inline result<std::string> read_regular_file(const std::string& path, std::string_view what, std::size_t max_bytes,
                                             std::string_view limit_name, std::string_view hint) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errors::not_found("cannot open ", what, " '", path, "': ", std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_on_return{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) return errors::unavailable("I/O error on ", what, " '", path, "': ", std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return errors::invalid_argument(what, " '", path, "' is ", S_ISDIR(info.st_mode) ? "a directory" : "not a regular file",
                                    "; ", hint);
  const auto too_large = [&] {
    return errors::resource_exhausted(what, " '", path, "' is larger than the limit of ", max_bytes, " bytes (",
                                      limit_name, ")");
  };
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) return too_large();
  std::string text;
  text.reserve(static_cast<std::size_t>(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errors::unavailable("I/O error reading ", what, " '", path, "' after ", text.size(), " bytes: ",
                                 std::strerror(errno));
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) return too_large();  // it grew
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace typeflow::detail
