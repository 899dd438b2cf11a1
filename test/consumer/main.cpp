// SPDX-License-Identifier: Apache-2.0
// A downstream program: includes typeflow, runs an op eagerly and a small static graph (with its
// compile-time memory plan), checks the answers. Built with -O2 -Wall -Wextra -Werror.
#include <typeflow/typeflow.hpp>

#include <cstdio>
#include <tuple>

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
  constexpr auto in = typeflow::input<"x", float, typeflow::static_shape<3>>;
  constexpr auto out = typeflow::relu(in * in - in);
  typeflow::session s(typeflow::graph(out), device);
  auto r = s.run(typeflow::feed(in, *x), typeflow::fetch(out));
  if (!r.ok()) return 1;
  const float squared[] = {2.0f, 0.0f, 2.0f};  // relu(x * x - x)
  for (int i = 0; i < 3; ++i)
    if (std::get<0>(*r).values()[static_cast<std::size_t>(i)] != squared[i]) return 1;
  std::puts("consumer: ok");
  return 0;
}
