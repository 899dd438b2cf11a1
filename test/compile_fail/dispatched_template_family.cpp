// SPDX-License-Identifier: Apache-2.0
// A fused group's kernel comes from a kernel template family, which dispatch tables do not hold:
// an eager call through the table is a compile error that says to call it with call<T>.
// expect: the kernel of op fused_elementwise comes from a kernel template family
// expect: call it with call<T>
// max-line: 3000
#include <typeflow/typeflow.hpp>

int main() {
  typeflow::cpu device;
  auto x = typeflow::tensor::from_values<float>({-1.0f, 2.0f});
  using tree = typeflow::fused::unary<typeflow::ops::relu{}, typeflow::fused::leaf<0, typeflow::fused::leaf_layout::full>>;
  auto y = typeflow::call<float, typeflow::dispatched<>>(device, typeflow::ops::fused_elementwise<tree>{}, *x);
  return y.ok() ? 0 : 1;
}
