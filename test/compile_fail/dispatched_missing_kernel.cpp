// SPDX-License-Identifier: Apache-2.0
// An eager call through the dispatch table names its kernel at compile time too: exp has no kernel
// for bool on the CPU, and the error is call<T>'s.
// expect: no kernel for op exp on device CPU with dtype bool
// expect: this op has kernels on this device for: f16, bf16, f32, f64
// max-line: 3000
#include <typeflow/typeflow.hpp>

int main() {
  typeflow::cpu device;
  auto x = typeflow::tensor::from_values<bool>({true, false});
  auto y = typeflow::call<bool, typeflow::dispatched<>>(device, typeflow::ops::exp{}, *x);
  return y.ok() ? 0 : 1;
}
