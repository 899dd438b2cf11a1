// SPDX-License-Identifier: Apache-2.0
// A graph that assigns a variable cannot run as a CUDA graph: the message names the assign's node.
// expect: tf::cuda_graph: node 3 (assign) assigns a variable
// expect: run a graph that assigns without tf::cuda_graph
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/runtime/cuda_graph.hpp>
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto v = tf::variable<"v", float, tf::static_shape<2>>;
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto a = tf::assign(v, v + x);
  using graph = decltype(tf::graph(a));
  tf::cuda<0> gpu;
  tf::cuda_graph_session<graph, tf::cuda<0>, tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>, false> s(
      graph{}, gpu, tf::cuda_graph{});
  auto t = tf::tensor::from_values<float>({1, 2}, tf::shape{2});
  auto r = s.run(tf::feed(x, *t), tf::fetch(a));
  return r.ok() ? 0 : 1;
}
