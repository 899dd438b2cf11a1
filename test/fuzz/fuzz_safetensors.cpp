// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness for safetensors files (core/safetensors.hpp): every input is refused with a
// message or read; what is read is written again and reads back as the same tensors, names and
// metadata. Built by meson -Dfuzzing=enabled with Clang; scripts/fuzz runs it.
#include <typeflow/typeflow.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace tf = typeflow;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto file = tf::parse_safetensors(bytes);
  if (!file.ok()) {
    if (file.status().message().empty()) fail("an error without a message");
    return 0;
  }
  auto written = tf::to_safetensors(*file);
  if (!written.ok()) fail("a file that was read cannot be written");
  auto again = tf::parse_safetensors(*written);
  if (!again.ok()) fail("a file written cannot be read");
  if (again->metadata != file->metadata || again->tensors.size() != file->tensors.size()) fail("the round trip changed the file");
  for (std::size_t i = 0; i < file->tensors.size(); ++i) {
    const auto& a = file->tensors[i];
    const auto& b = again->tensors[i];
    if (a.name != b.name || a.value.spec() != b.value.spec() || std::memcmp(a.value.data(), b.value.data(), a.value.bytes()) != 0)
      fail("the round trip changed a tensor");
  }
  return 0;
}
