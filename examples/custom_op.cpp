// SPDX-License-Identifier: Apache-2.0
// An op and its kernel defined outside the library: swish(x) = x * sigmoid(beta * x).
// The op is a struct, the kernel a class template listed in a kernel list, and the program's
// registry puts that list before typeflow's own. Nothing is registered at start-up.
// The op then runs three ways, each given the program's registry: called eagerly (tf::call), in a
// static graph (tf::apply<op>(x), tf::session<Graph, Device, Registry>), and in a runtime graph
// read from text (op_attributes names its attribute; runtime_graph and runtime_session take the
// registry, whose table holds the program's kernels and hands the rest to typeflow's default
// table). Without the registry, the op's kernels are not found, and the error says so.
#include <typeflow/typeflow.hpp>
// The default registry's tables are compiled once, in another unit of this build (test/kernels/).
#include <typeflow/registry/extern_kernels.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>

namespace tf = typeflow;

namespace my {

struct swish {
  static constexpr std::string_view name = "swish";
  static constexpr int num_inputs = 1;
  double beta = 1.0;

  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const {
    if (!tf::is_floating(in[0])) return tf::errors::invalid_argument(name, ": needs a floating-point input, got ", in[0]);
    return in[0];
  }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  friend constexpr bool operator==(const swish&, const swish&) = default;
};

// One Eigen expression, evaluated by tf::parallel_assign: vectorised on cpu, and on thread_pool the
// same evaluation split over the pool's threads (no second instantiation of Eigen's executor, and no
// heap allocation).
template <class Op, class Device, class T>
struct swish_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;

  static tf::status compute(const Op& op, tf::kernel_context<Device>& ctx) {
    auto x = ctx.inputs[0].template unchecked_flat<const T>();
    auto y = ctx.outputs[0].template unchecked_flat<T>();
    tf::parallel_assign(ctx.device, y, x * (x * T(op.beta)).sigmoid());
    return tf::ok_status();
  }
};

// The program's kernel list; a struct rather than an alias, so that compiler messages print
// `my::kernels` instead of every family in it.
struct kernels : tf::named_kernel_list<tf::kernel_list<
    tf::kernel_family<swish_kernel, swish, tf::devices<tf::cpu, tf::thread_pool>, tf::dtypes<float, double>>>> {};

// The program's registry: its own kernels first, then typeflow's.
using registry = tf::registry<kernels, tf::cpu_kernel_list>;

// A runtime graph can run any op of its registry. This one's table holds only the program's
// kernels: its last list is typeflow's, whose kernels it finds in the default table, compiled once
// in another unit (registry/extern_kernels.hpp, included above).

}  // namespace my

// The op's attributes by name, for runtime graphs and the text format ("beta=1.5").
template <>
inline constexpr auto typeflow::op_attributes<my::swish> = std::tuple{typeflow::attribute<"beta", &my::swish::beta>{}};

// Shape inference of the new op runs at compile time like any built-in op's.
static_assert(tf::static_infer_v<my::swish{.beta = 2.0}, tf::spec<float, tf::static_shape<tf::dyn, 8>>> ==
              tf::tensor_spec{tf::dtype::f32, tf::shape{tf::dyn, 8}});
static_assert(my::registry::has_kernel<my::swish, tf::cpu, float>);
static_assert(!my::registry::has_kernel<my::swish, tf::cpu, std::int32_t>);

int main() {
  tf::thread_pool device(2);
  auto x = tf::tensor::from_values<float>({-3, -1, 0, 1, 3}, tf::shape{5});
  if (!x.ok()) return 1;

  auto y = tf::call<float, my::registry>(device, my::swish{.beta = 1.5}, *x);
  if (!y.ok()) {
    std::fprintf(stderr, "swish failed: %s\n", y.status().to_string().c_str());
    return 1;
  }
  // Built-in ops are still there, through the same registry.
  auto z = tf::call<float, my::registry>(device, tf::ops::relu{}, *y);
  if (!z.ok()) return 1;

  double max_error = 0;
  for (int i = 0; i < 5; ++i) {
    const double v = *x->at<float>(i);
    const double expected = v / (1 + std::exp(-1.5 * v));
    max_error = std::max(max_error, std::abs(expected - *y->at<float>(i)));
    std::printf("swish(%+.1f) = %+.6f   relu(swish) = %.6f\n", v, *y->at<float>(i), *z->at<float>(i));
  }
  std::printf("max |error| vs std::exp reference: %.2e\n", max_error);

  // In a static graph: apply<op value>(inputs) makes a node of any op; the session takes the registry.
  constexpr auto in = tf::input<"x", float, tf::static_shape<5>>;
  constexpr auto out = tf::relu(tf::apply<my::swish{.beta = 1.5}>(in));
  tf::session<decltype(tf::graph(out)), tf::thread_pool, my::registry> graph_session(tf::graph(out), device);
  auto static_out = graph_session.run(tf::feed(in, *x), tf::fetch(out));
  if (!static_out.ok()) {
    std::fprintf(stderr, "static graph failed: %s\n", static_out.status().to_string().c_str());
    return 1;
  }
  // In a runtime graph from the text format: the same registry for the graph and the session.
  using runtime_graph = tf::runtime_graph<tf::thread_pool, my::registry>;
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[5]\ny = swish(x) beta=1.5\nr = relu(y)\n");
  if (!def.ok()) return 1;
  auto made = runtime_graph::make(*def);
  if (!made.ok()) {
    std::fprintf(stderr, "runtime graph failed: %s\n", made.status().to_string().c_str());
    return 1;
  }
  tf::runtime_session<tf::thread_pool, my::registry> runtime_session(std::make_shared<const runtime_graph>(std::move(*made)), device);
  auto runtime_out = runtime_session.run({{"x", *x}}, {"r"});
  if (!runtime_out.ok()) return 1;
  bool same = true;
  for (int i = 0; i < 5; ++i)
    same = same && std::get<0>(*static_out).values()[static_cast<std::size_t>(i)] == *z->at<float>(i) && *(*runtime_out)[0].at<float>(i) == *z->at<float>(i);
  std::printf("static graph and runtime graph give the eager results: %s\n", same ? "yes" : "NO");
  // The default registry does not know the op: the error says how to give it the program's.
  auto without = tf::runtime_graph<tf::thread_pool>::make(*def);
  std::printf("runtime graph without the registry: %s\n", without.status().to_string().c_str());

  // A bad input is a status, not a crash.
  auto ints = tf::tensor::from_values<std::int32_t>({1, 2});
  auto bad = tf::call<float, my::registry>(device, my::swish{}, *ints);
  std::printf("swish on i32: %s\n", bad.status().to_string().c_str());
  return max_error < 1e-5 && same && !without.ok() && !bad.ok() ? 0 : 1;
}
