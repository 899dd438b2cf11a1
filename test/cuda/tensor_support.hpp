// SPDX-License-Identifier: Apache-2.0
// What the GPU tests of tensors share: moving a tensor between the host and the GPU (a failed copy fails the
// test with its status), and comparing f32 results within a tolerance.
#pragma once

#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>

namespace typeflow::test {

// x copied from one device to another.
inline tensor moved(const tensor& x, auto& from, auto& to) {
  auto t = copy(x, from, to);
  INFO(t.status().to_string());
  REQUIRE(t.ok());
  return *t;
}

// got and want have one spec and every f32 value within `tol` (relative and absolute).
inline void require_close(const tensor& got, const tensor& want, double tol) {
  REQUIRE(got.spec() == want.spec());
  const auto g = got.unchecked_values<float>();
  const auto w = want.unchecked_values<float>();
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(w[i]).epsilon(tol).margin(tol));
}

}  // namespace typeflow::test
