// SPDX-License-Identifier: Apache-2.0
// run_batches checks its feeds as run() does: an input the fetches need and feeds_of does not feed
// is named.
// expect: session::run: input
// expect: b\' is needed by the fetches but not fed: add feed(b, value)
#include <tuple>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto a = tf::input<"a", float, tf::static_shape<2>>;
  constexpr auto b = tf::input<"b", float, tf::static_shape<2>>;
  constexpr auto y = a + b;
  using graph = decltype(tf::graph(y));
  tf::cuda<0> gpu;
  tf::cuda_graph_session<graph, tf::cuda<0>, tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>, false> s(
      graph{}, gpu, tf::cuda_graph{});
  auto t = tf::tensor::from_values<float>({1, 2}, tf::shape{2});
  auto st = s.run_batches(
      2, [&](std::size_t) { return std::tuple(tf::feed(a, *t)); }, [](std::size_t, auto) {}, tf::fetch(y));
  return st.ok() ? 0 : 1;
}
