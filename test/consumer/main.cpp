// SPDX-License-Identifier: Apache-2.0
// A downstream program: includes typeflow, runs an op eagerly, checks the answer.
#include <typeflow/typeflow.hpp>

#include <cstdio>

int main() {
  typeflow::cpu device;
  auto x = typeflow::tensor::from_values<float>({-1.0f, 0.5f, 2.0f});
  if (!x.ok()) return 1;
  auto y = typeflow::call<float>(device, typeflow::ops::relu{}, *x);
  if (!y.ok()) {
    std::fprintf(stderr, "%s\n", y.status().to_string().c_str());
    return 1;
  }
  const float expected[] = {0.0f, 0.5f, 2.0f};
  for (int i = 0; i < 3; ++i)
    if (*y->at<float>(i) != expected[i]) return 1;
  std::puts("consumer: ok");
  return 0;
}
