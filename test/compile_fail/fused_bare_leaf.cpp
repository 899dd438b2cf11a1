// SPDX-License-Identifier: Apache-2.0
// A fused_elementwise whose tree is a bare leaf (no op: a copy, which the host kernel's range
// evaluation cannot do) is refused where its kernel is instantiated, saying what to do.
// expect: typeflow: fused_elementwise<Tree> needs at least one op in Tree
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
  tf::cpu device;
  auto x = tf::tensor::from_values<float>({1, 2});
  using bare = tf::ops::fused_elementwise<tf::fused::leaf<0, tf::fused::leaf_layout::full>>;
  auto y = tf::call<float>(device, bare{}, *x);
  return y.ok() ? 0 : 1;
}
