// SPDX-License-Identifier: Apache-2.0
// A user's op in a static graph whose session is left on the default registry: the error says
// that the op's kernels must be in the session's registry, and how to give it one.
// expect: give the session a registry that lists its kernels first
// The registry prints by its name (default_registry), not as the list of every kernel family in it
// (30 KB a line before kernel lists and the default registry were named types).
// max-line: 3000
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

struct swish {
  static constexpr std::string_view name = "swish";
  static constexpr int num_inputs = 1;
  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const { return in[0]; }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  friend constexpr bool operator==(const swish&, const swish&) = default;
};

int main() {
  constexpr auto x = tf::input<"x", float, tf::static_shape<4>>;
  constexpr auto y = tf::apply<swish{}>(x);
  tf::cpu device;
  tf::session<decltype(tf::graph(y)), tf::cpu> s(tf::graph(y), device);
  auto t = tf::tensor::from_values<float>({1, 2, 3, 4}, tf::shape{4});
  auto r = s.run(tf::feed(x, *t), tf::fetch(y));
  return r.ok() ? 0 : 1;
}
