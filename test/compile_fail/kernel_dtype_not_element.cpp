// SPDX-License-Identifier: Apache-2.0
// A kernel looked up for a type that no tensor can hold is rejected by the element_type concept.
// expect: element_type
// output: all
#include <typeflow/typeflow.hpp>

int main() {
  typeflow::cpu device;
  auto x = typeflow::tensor::from_values<float>({1.0f});
  auto y = typeflow::call<long double>(device, typeflow::ops::exp{}, *x);
  return y.ok() ? 0 : 1;
}
