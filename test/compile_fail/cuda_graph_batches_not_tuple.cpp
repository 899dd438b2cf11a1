// SPDX-License-Identifier: Apache-2.0
// run_batches' feeds_of must return a std::tuple of feeds: the message shows how.
// expect: session::run_batches: feeds_of(i) must return a std::tuple of feed(x, t)
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto a = tf::input<"a", float, tf::static_shape<2>>;
  constexpr auto y = tf::relu(a);
  using graph = decltype(tf::graph(y));
  tf::cuda<0> gpu;
  tf::cuda_graph_session<graph, tf::cuda<0>, tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>, false> s(
      graph{}, gpu, tf::cuda_graph{});
  auto t = tf::tensor::from_values<float>({1, 2}, tf::shape{2});
  auto st = s.run_batches(2, [&](std::size_t) { return tf::feed(a, *t); }, [](std::size_t, auto) {}, tf::fetch(y));
  return st.ok() ? 0 : 1;
}
