// SPDX-License-Identifier: Apache-2.0
// session<Graph, Device, Registry, Fuse>: runs a static graph on a device policy.
//   tf::cpu device;
//   tf::session s(g, device);
//   s.initialize(w, w0);                                    // variables persist across runs
//   auto r = s.run(tf::feed(x, batch), tf::fetch(y));       // result<std::tuple<typed_tensor<float>>>
// At compile time: the plan for the fetches (pruned, fused), the kernel of every step, and these
// errors: a needed input that is not fed, a fed typed_tensor of the wrong dtype, feeding a node
// that is not an input, fetching a node that is not in the graph. At run time: a fed shape that
// does not fit the input's static shape is invalid_argument naming the input and both shapes.
// run() may be called from many threads at once: each run takes a state from a pool.
//   tf::session p(g, device, tf::parallel{2});             // the steps on 2 inter-op threads
// A session made with parallel{n} runs its steps with the static parallel executor on an Eigen
// ThreadPool of n threads (and the calling thread); its intermediates keep buffers of their own
// instead of the memory plan's arena (runtime/static_parallel_executor.hpp).
// Across devices: a graph whose nodes are placed on device types (tf::on<D>) runs on a
// device_group with one device of each type; nodes that are not placed run on its first.
//   tf::session s(g, tf::device_group(host, pool));
//   tf::session p(g, tf::device_group(host, pool), tf::parallel{2});   // the devices' steps at once
// Feeds are copied to their input's device, variables are kept on theirs (initialize copies the
// value there; value_of gives it there), and a fetch on a device whose memory the host cannot read
// is copied to the host. A node placed on a type the group lacks is a compile error naming it.
// On a GPU: a session made with tf::cuda_graph runs its plan as a CUDA graph, captured after one run
// of its steps and replayed by one launch per run (runtime/cuda_graph.hpp, which a program includes
// to use it).
//   tf::cuda_graph_session<G, tf::cuda<0>, registry> s(g, gpu, tf::cuda_graph{});
// run(metadata, feeds..., fetches...) says how each run ran (run_metadata::replay).
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/device/eigen_thread_pool.hpp>
#include <typeflow/core/typed_tensor.hpp>
#include <typeflow/device/copy.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/device_group.hpp>
#include <typeflow/graph/expr.hpp>
#include <typeflow/graph/plan.hpp>
#include <typeflow/graph/static_graph.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/runtime/run_options.hpp>
#include <typeflow/runtime/static_executor.hpp>
#include <typeflow/runtime/static_parallel_executor.hpp>
#include <typeflow/runtime/static_steps.hpp>
#include <typeflow/runtime/variable_store.hpp>

namespace typeflow {

namespace detail {
template <class T>
inline constexpr bool is_feedable = std::is_same_v<T, tensor>;
template <class T>
inline constexpr bool is_tuple = false;
template <class... Ts>
inline constexpr bool is_tuple<std::tuple<Ts...>> = true;
template <class T>
inline constexpr bool is_feedable<typed_tensor<T>> = true;

// The first input or variable of Graph with the name of an earlier one of its kind, or Graph::size.
// Once per graph, not per session type: a program may run a graph on several devices, and Clang 19
// evaluated the sort below three times per session, 0.7-0.9 s each on the 12-layer transformer's
// 193 leaves (-ftime-trace).
template <class Graph>
inline constexpr std::size_t same_name_leaf = [] {
  // Sorted by (kind, name, position), a name's second leaf follows its first: O(n log n)
  // comparisons, where comparing every pair ran past Clang's constant-evaluation step limit on a
  // model's few hundred variables.
  auto leaves = Graph::leaf_positions;
  std::sort(leaves.begin(), leaves.end(), [](std::size_t a, std::size_t b) {
    if (Graph::kinds[a] != Graph::kinds[b]) return Graph::kinds[a] < Graph::kinds[b];
    if (Graph::names[a] != Graph::names[b]) return Graph::names[a] < Graph::names[b];
    return a < b;
  });
  std::size_t first = Graph::size;
  for (std::size_t i = 1; i < leaves.size(); ++i)
    if (Graph::kinds[leaves[i - 1]] == Graph::kinds[leaves[i]] && Graph::names[leaves[i - 1]] == Graph::names[leaves[i]])
      first = std::min(first, leaves[i]);
  return first;
}();
}  // namespace detail

// feed(x, t): the value of input x for one run. t is a typed_tensor<T> (its dtype checked at
// compile time) or a tensor (checked at run time). The feed holds a share of t's buffer, so it
// may be made before the run that uses it.
template <expression E, class Value>
struct feed_value {
  using expr_type = E;
  Value value;
};
template <expression E, class Value>
feed_value<E, Value> feed(E, Value value) {
  static_assert(detail::is_feedable<Value>,
                "typeflow::feed(x, value): value must be a typeflow::tensor or a typeflow::typed_tensor<T>");
  return {std::move(value)};
}

// fetch(y): an output wanted from a run.
template <expression E>
struct fetch_handle {
  using expr_type = E;
};
template <expression E>
constexpr fetch_handle<E> fetch(E) {
  return {};
}

namespace detail {
template <class T>
inline constexpr bool is_feed = false;
template <class E, class V>
inline constexpr bool is_feed<feed_value<E, V>> = true;
template <class T>
inline constexpr bool is_fetch = false;
template <class E>
inline constexpr bool is_fetch<fetch_handle<E>> = true;
}  // namespace detail

// How many inter-op threads a parallel session's pool has: 1 to max_pool_threads (a parallel
// session always has a pool, unlike runtime_session, where 0 threads selects the sequential
// executor). Another count, or threads the system cannot start, leave the session unusable: every
// run returns that status (also given by init_status()).
struct parallel {
  int threads = 2;
};

// Runs a static executor's plan as a CUDA graph on Device (defined in runtime/cuda_graph.hpp).
template <class Executor, class Device>
class cuda_graph_replay;

// Whether a session on Device fuses elementwise groups unless told: when the device that runs the
// unplaced nodes (the group's first) has the fused kernel (the host policies do, the GPU not yet).
template <static_devices Device>
inline constexpr bool fuses_by_default = fuses_elementwise<typename device_group_t<Device>::template type<0>>;

// Fuse = false runs every node on its own; PlanMemory = false gives every output a buffer of its
// own instead of the compile-time memory plan's arena (both exist to compare and test against).
// Parallel = true runs the steps with the static parallel executor (made by session(g, device,
// parallel{n})); PlanMemory does not apply to it. Replay = true runs it as a CUDA graph (made by
// session(g, gpu, cuda_graph{}); runtime/cuda_graph.hpp).
template <class Graph, static_devices Device, class Registry = default_registry, bool Fuse = fuses_by_default<Device>,
          bool PlanMemory = true, bool Parallel = false, bool Replay = false>
class session {
  static_assert(!(Parallel && Replay), "session: a session runs as a CUDA graph or on the parallel executor, not both");
  using group = device_group_t<Device>;

 public:
  using graph_type = Graph;
  using state = static_state<Graph::num_slots, Graph::num_input_nodes>;

  // One device policy, or a device_group (its first device runs what is not placed).
  session(Graph, Device& device) requires(!Parallel && device_policy<Device>) : session(as_device_group(device)) {}
  session(Graph, const Device& devices) requires(!Parallel && detail::is_device_group<Device>) : session(devices) {}
  session(Graph, Device& device, parallel p) requires(Parallel && device_policy<Device>) : session(as_device_group(device)) {
    make_pool(p);
  }
  session(Graph, const Device& devices, parallel p) requires(Parallel && detail::is_device_group<Device>)
      : session(devices) {
    make_pool(p);
  }
  // The plan as a CUDA graph on one GPU policy, every node on it (runtime/cuda_graph.hpp). Runs from
  // several threads take turns.
  session(Graph, Device& device, cuda_graph options) requires(Replay && device_policy<Device>)
      : session(as_device_group(device)) {
    if (options.branches < 1 || options.branches > 16)
      init_ = errors::invalid_argument("session: cuda_graph{.branches = ", options.branches,
                                       "}: a CUDA graph's steps run on 1 to 16 streams");
    graph_options_ = options;
  }
  // Why the session cannot run (a parallel session whose pool could not be made, a CUDA-graph
  // session's option out of range), else ok.
  const status& init_status() const noexcept { return init_; }

  // Sets a variable's value. A tensor that owns its buffer is shared, not copied; borrowed memory
  // (tensor::borrow) is copied, since the session cannot know how long it stays valid.
  // A variable placed on a device keeps its value there: a host value is copied to it.
  // The session takes the value as it is: changing it in place afterwards, through a tensor that
  // shares its buffer, is not supported (kernels keep forms of a value across runs, such as a
  // matmul's packed b: derived_forms(), so a run would read the old values in one kernel and the new
  // in another); initialize the variable again with the changed tensor instead.
  template <expression Var>
  status initialize(Var, const tensor& value) {
    constexpr std::size_t p = Graph::template position<Var>();
    static_assert(Graph::kinds[p] == node_kind::variable, "session::initialize(v, value): v must be a variable<...>");
    return initialize_at<node_device_index[p]>(p, value);
  }
  // Sets the variable named `name` as initialize(v, value) does; not_found when the graph has no
  // variable of that name. One function for every variable, found at run time: what a program
  // that loads hundreds of weights by name calls, where initialize(v, value) is a function per variable.
  status initialize(std::string_view name, const tensor& value) {
    for (std::size_t p : Graph::leaf_positions)
      if (Graph::kinds[p] == node_kind::variable && Graph::names[p] == name)
        return [&]<std::size_t... Ds>(std::index_sequence<Ds...>) {
          status st;
          (void)((node_device_index[p] == Ds && (st = initialize_at<Ds>(p, value), true)) || ...);
          return st;
        }(std::make_index_sequence<group::size>{});
    return errors::not_found("session::initialize: the graph has no variable named '", name, "'");
  }

  // Sets every element of a variable to `value`.
  template <expression Var, class Number>
    requires std::is_arithmetic_v<Number>
  status initialize(Var v, Number value) {
    constexpr std::size_t p = Graph::template position<Var>();
    using T = element_t<Graph::specs[p].type>;
    auto t = tensor::filled<T>(Graph::specs[p].dims, static_cast<T>(value));
    if (!t.ok()) return std::move(t).take_status();
    return initialize(v, *t);
  }

  // The current value of a variable, on the variable's device: the session's own buffer, to read
  // (writing into it is changing the variable in place; see initialize).
  template <expression Var>
  result<tensor> value_of(Var) const {
    constexpr std::size_t p = Graph::template position<Var>();
    static_assert(Graph::kinds[p] == node_kind::variable, "session::value_of(v): v must be a variable<...>");
    tensor t;
    if (auto st = variables_.read(Graph::variable_index[p], Graph::names[p], t); !st.ok()) return st;
    return t;
  }

  // How many forms of variables' values kernels keep across runs (kernels/packed_operand.hpp: each
  // matmul whose b is a variable, f32 or f64 on Eigen, keeps b packed: b's size rounded up to whole
  // blocks of its GEMM).
  std::size_t derived_forms() const { return variables_.derived_count(); }

  // run(feed(x, t)..., fetch(y)...): the fetched values, in the order of the fetches.
  template <class... Args>
    requires((detail::is_feed<Args> || detail::is_fetch<Args>) && ...)
  auto run(const Args&... args) {
    constexpr std::size_t num_fetches = (std::size_t{0} + ... + detail::is_fetch<Args>);
    static_assert(num_fetches > 0, "session::run: fetch at least one node: run(feed(x, t), fetch(y))");
    return run_fetches<fetch_positions<Args...>()>(std::make_index_sequence<num_fetches>{}, nullptr, args...);
  }
  // The same, and what the run says of itself in `metadata` (for now how a session run as a CUDA
  // graph ran: metadata.replay and graph_branches; graph_replay::none for the others).
  template <class... Args>
    requires((detail::is_feed<Args> || detail::is_fetch<Args>) && ...)
  auto run(run_metadata& metadata, const Args&... args) {
    constexpr std::size_t num_fetches = (std::size_t{0} + ... + detail::is_fetch<Args>);
    static_assert(num_fetches > 0, "session::run: fetch at least one node: run(metadata, feed(x, t), fetch(y))");
    metadata.replay = graph_replay::none;
    metadata.graph_branches = 0;
    return run_fetches<fetch_positions<Args...>()>(std::make_index_sequence<num_fetches>{}, &metadata, args...);
  }

  // A CUDA-graph session's loop over a data set, overlapped: n batches, feeds_of(i) giving batch i's
  // feeds as a std::tuple of feed(x, t) values and done(i, fetched) receiving its fetches (the tuple
  // run() gives), in order. Two runners take turns: while batch i's graph runs, batch i + 1's feeds
  // are copied in (through pinned staging) and its graph queued, and batch i's fetches are copied
  // out while batch i + 1 computes. done may return a status: not ok stops the loop with it. Stops
  // at the first error, named by its batch.
  //   s.run_batches(n, [&](std::size_t i) { return std::tuple(tf::feed(x, batches[i])); },
  //                 [&](std::size_t i, auto fetched) { use(std::get<0>(fetched)); }, tf::fetch(y));
  template <class FeedsOf, class Done, class... Fetches>
    requires(Replay && sizeof...(Fetches) > 0 && (detail::is_fetch<Fetches> && ...))
  status run_batches(std::size_t n, FeedsOf&& feeds_of, Done&& done, Fetches...) {
    if (!init_.ok()) return init_;
    if (n == 0) return ok_status();
    using feeds_type = std::remove_cvref_t<decltype(feeds_of(std::size_t{0}))>;
    static_assert(detail::is_tuple<feeds_type>,
                  "session::run_batches: feeds_of(i) must return a std::tuple of feed(x, t): "
                  "[&](std::size_t i) { return std::tuple(tf::feed(x, batches[i])); }");
    return run_batches_of<fetch_positions<Fetches...>()>(std::make_index_sequence<sizeof...(Fetches)>{},
                                                         static_cast<feeds_type*>(nullptr), n, feeds_of, done);
  }

  // The plan a run with these fetches executes: its steps and fused groups, one per line.
  template <class... Fetches>
    requires(detail::is_fetch<Fetches> && ...)
  static std::string describe_plan(Fetches...) {
    return static_plan<Graph, Fuse, Graph::template position<typename Fetches::expr_type>()...>::describe();
  }

  // The memory plan of a run with these fetches: the arena's size and each intermediate's
  // lifetime and offset.
  template <class... Fetches>
    requires(detail::is_fetch<Fetches> && ...)
  static std::string describe_memory(Fetches...) {
    return static_memory_plan<
        static_plan<Graph, Fuse, Graph::template position<typename Fetches::expr_type>()...>>::describe();
  }

 private:
  explicit session(const group& devices) : devices_(devices), variables_(Graph::num_variables) {
    static_assert(detail::same_name_leaf<Graph> == Graph::size || compile_error<detail::text_constant<[] {
                    constexpr std::size_t u = detail::same_name_leaf<Graph>;
                    if constexpr (u == Graph::size) return detail::text();
                    else
                      return detail::cat("session: the graph has two ", to_string(Graph::kinds[u]), "s named '",
                                         Graph::names[u], "' (node ", u,
                                         " is the second); a leaf given to tf::on<D> is a new node: place it once, "
                                         "as constexpr auto x = tf::on<D>(tf::input<...>), and use that expression "
                                         "everywhere");
                  }>::value>::value,
                  "session: inputs and variables must have distinct names");
  }

  void make_pool(parallel p) {
    auto pool = make_eigen_thread_pool(p.threads, "session: parallel{threads}");
    if (pool.ok()) pool_ = std::move(*pool);
    else init_ = pool.status();
  }

  // The position in the group of every node's device.
  static constexpr const auto& node_device_index = node_device_indices<group, typename Graph::nodes>::value;

  // Variable p (on device D) set to `value`, as initialize describes.
  template <std::size_t D>
  status initialize_at(std::size_t p, const tensor& value) {
    if (value.spec() != Graph::specs[p])
      return errors::invalid_argument("variable '", Graph::names[p], "': initial value is ", value.spec(),
                                      ", the variable is ", Graph::specs[p]);
    if (!value.valid()) return errors::invalid_argument("variable '", Graph::names[p], "': initial value has no storage");
    auto placed = to_device(value, devices_.template get<D>());
    if (!placed.ok()) return placed.status().with_context(detail::cat("variable '", Graph::names[p], "'").view());
    if (placed->owns_buffer()) {
      variables_.write(Graph::variable_index[p], std::move(*placed));
    } else {
      auto copy = value.clone();
      if (!copy.ok()) return std::move(copy).take_status();
      variables_.write(Graph::variable_index[p], std::move(*copy));
    }
    return ok_status();
  }

  // What a run gives for the fetch of node p (on device D): its tensor, or a host copy of it when
  // the host cannot read its memory (the node keeps its buffer on the device for the next run).
  template <std::size_t D>
  status fetch_to_host(std::size_t p, const tensor& t, tensor& out) {
    if (t.space().host_accessible()) {
      out = t;
      return ok_status();
    }
    auto host = to_host(t, devices_.template get<D>());
    if (!host.ok()) return host.status().with_context(detail::cat("fetch of node ", p, " (", Graph::names[p], ")").view());
    out = std::move(*host);
    return ok_status();
  }

  template <class... Args>
  static constexpr auto fetch_positions() {
    std::array<std::size_t, (std::size_t{0} + ... + detail::is_fetch<Args>)> f{};
    std::size_t k = 0;
    (
        [&] {
          if constexpr (detail::is_fetch<Args>) f[k++] = Graph::template position<typename Args::expr_type>();
        }(),
        ...);
    return f;
  }

  // Input numbers of the feeds, in argument order (Graph::size for fetches).
  template <class... Args>
  static constexpr auto feed_inputs() {
    std::array<std::size_t, sizeof...(Args)> f{};
    std::size_t k = 0;
    (
        [&] {
          if constexpr (detail::is_feed<Args>) {
            constexpr std::size_t p = Graph::template position<typename Args::expr_type>();
            f[k] = Graph::input_node_index[p];
          } else {
            f[k] = Graph::size;
          }
          ++k;
        }(),
        ...);
    return f;
  }

  // The first input that Plan needs and no argument feeds, or Graph::size; the same for an
  // input fed twice.
  template <class Plan, class... Args>
  static constexpr std::size_t first_unfed() {
    constexpr auto fed = feed_inputs<Args...>();
    for (std::size_t i = 0; i < Graph::size; ++i) {
      if (Graph::kinds[i] != node_kind::input || !Plan::needed[i]) continue;
      bool found = false;
      for (std::size_t f : fed) found = found || f == Graph::input_node_index[i];
      if (!found) return i;
    }
    return Graph::size;
  }
  template <class... Args>
  static constexpr std::size_t first_fed_twice() {
    constexpr auto fed = feed_inputs<Args...>();
    for (std::size_t a = 0; a < fed.size(); ++a)
      for (std::size_t b = a + 1; b < fed.size(); ++b)
        if (fed[a] != Graph::size && fed[a] == fed[b])
          for (std::size_t i = 0; i < Graph::size; ++i)
            if (Graph::kinds[i] == node_kind::input && Graph::input_node_index[i] == fed[a]) return i;
    return Graph::size;
  }

  // Compile errors naming an input that Plan needs and Args do not feed, or that they feed twice.
  template <class Plan, class... Args>
  static constexpr void check_feeds() {
    constexpr std::size_t unfed = first_unfed<Plan, Args...>();
    static_assert(unfed == Graph::size || compile_error<detail::text_constant<[] {
                    constexpr std::size_t u = first_unfed<Plan, Args...>();
                    if constexpr (u == Graph::size) return detail::text();
                    else
                      return detail::cat("session::run: input '", Graph::names[u],
                                         "' is needed by the fetches but not fed: add feed(", Graph::names[u], ", value)");
                  }>::value>::value,
                  "session::run: every input the fetches need must be fed");
    constexpr std::size_t twice = first_fed_twice<Args...>();
    static_assert(twice == Graph::size || compile_error<detail::text_constant<[] {
                    constexpr std::size_t u = first_fed_twice<Args...>();
                    if constexpr (u == Graph::size) return detail::text();
                    else return detail::cat("session::run: input '", Graph::names[u], "' is fed twice");
                  }>::value>::value,
                  "session::run: feed each input once");
  }

  template <class Arg>
  static status bind_feed(const Arg& arg, std::array<const tensor*, Graph::num_input_nodes + 1>& feeds) {
    if constexpr (detail::is_feed<Arg>) {
      using E = typename Arg::expr_type;
      constexpr std::size_t p = Graph::template position<E>();
      static_assert(Graph::kinds[p] == node_kind::input ||
                        compile_error<detail::text_constant<[] {
                          constexpr std::size_t q = Graph::template position<E>();
                          if (Graph::kinds[q] == node_kind::input) return detail::text();
                          return detail::cat("session::run: feed(", Graph::names[q], ", ...): node ", q, " (",
                                             Graph::names[q], ") is not an input (its kind is ",
                                             to_string(Graph::kinds[q]), "); only input<...> nodes are fed");
                        }>::value>::value,
                    "session::run: only input<...> nodes can be fed");
      constexpr tensor_spec want = Graph::specs[p];
      using value_type = std::remove_cvref_t<decltype(arg.value)>;  // tensor or typed_tensor<T>
      if constexpr (!std::is_same_v<value_type, tensor>) {
        static_assert(dtype_of<typename value_type::value_type> == want.type ||
                          compile_error<detail::text_constant<[] {
                            constexpr std::size_t q = Graph::template position<E>();
                            if (dtype_of<typename value_type::value_type> == Graph::specs[q].type) return detail::text();
                            return detail::cat("session::run: input '", Graph::names[q], "' is ", Graph::specs[q].type,
                                               " but is fed a typed_tensor of ",
                                               dtype_of<typename value_type::value_type>);
                          }>::value>::value,
                      "session::run: the fed typed_tensor's dtype must be the input's");
      }
      const tensor& t = arg.value;
      if (auto st = detail::check_fed(Graph::names[p], want, t); !st.ok()) return st;
      feeds[Graph::input_node_index[p]] = &t;
    }
    return ok_status();
  }

  template <auto Fetches, std::size_t... Fs, class... Args>
  auto run_fetches(std::index_sequence<Fs...>, run_metadata* metadata, const Args&... args)
      -> result<std::tuple<typed_tensor<element_t<Graph::specs[Fetches[Fs]].type>>...>> {
    using Plan = static_plan<Graph, Fuse, Fetches[Fs]...>;
    check_feeds<Plan, Args...>();
    if (!init_.ok()) return init_;
    std::array<const tensor*, Graph::num_input_nodes + 1> feeds{};
    status st;
    (void)((st = bind_feed(args, feeds), st.ok()) && ...);
    if (!st.ok()) return st;

    // A parallel session's steps are its parallel executor's (its state, its release_leaves).
    using executor = std::conditional_t<Parallel, static_parallel_steps<Plan, group, Registry>,
                                        static_executor<Plan, group, Registry, PlanMemory>>;
    const static_environment env{std::span<const tensor* const>(feeds), &variables_};
    std::array<tensor, sizeof...(Fs)> fetched;
    if constexpr (Replay) {
      // A CUDA-graph session's runs take turns on the state its graph was captured from; the runner
      // copies the fetches out itself.
      std::lock_guard replay_lock(replay_mutex_);
      auto found = replay_of<executor>();
      if (!found.ok()) return std::move(found).take_status();
      cuda_graph_replay<executor, Device>& r = **found;
      static constexpr std::array<std::size_t, sizeof...(Fs)> fetch_slots{Plan::fetches[Fs]...};
      st = r.run(devices_, env, std::span<const std::size_t>(fetch_slots), std::span<tensor>(fetched), metadata);
      executor::release_leaves(r.state());
    } else {
      (void)metadata;
      std::unique_ptr<state> s = acquire();
      if constexpr (Parallel) st = static_parallel_executor<Plan, group, Registry>::run(devices_, *pool_, *s, env);
      else st = executor::run(devices_, *s, env);
      (void)((st.ok() && (st = fetch_to_host<node_device_index[Plan::fetches[Fs]]>(Plan::fetches[Fs], s->slots[Plan::fetches[Fs]], fetched[Fs]),
                           st.ok())) && ...);
      executor::release_leaves(*s);
      release(std::move(s));
    }
    if (!st.ok()) return st;
    return std::tuple<typed_tensor<element_t<Graph::specs[Plan::fetches[Fs]].type>>...>{
        typed_tensor<element_t<Graph::specs[Plan::fetches[Fs]].type>>::adopt(std::move(fetched[Fs]))...};
  }

  // The CUDA-graph runner of the plan Executor runs, made on its first run (one per set of fetches).
  // run() uses the first; run_batches takes turns between two.
  template <class Executor>
  result<cuda_graph_replay<Executor, Device>*> replay_of(int which = 0) {
    const std::pair<const void*, int> key{&Executor::memory::tag, which};
    for (auto& [k, r] : replays_)
      if (k == key) return static_cast<cuda_graph_replay<Executor, Device>*>(r.get());
    auto made = cuda_graph_replay<Executor, Device>::create(devices_.template get<0>(), graph_options_.branches);
    if (!made.ok()) return std::move(made).take_status();
    cuda_graph_replay<Executor, Device>* raw = made->get();
    replays_.emplace_back(key, std::move(*made));
    return raw;
  }

  template <auto Fetches, std::size_t... Fs, class... Feeds, class FeedsOf, class Done>
  status run_batches_of(std::index_sequence<Fs...>, std::tuple<Feeds...>*, std::size_t n, FeedsOf& feeds_of, Done& done) {
    static_assert((detail::is_feed<Feeds> && ...), "session::run_batches: feeds_of(i) must return a std::tuple of feed(x, t)");
    using Plan = static_plan<Graph, Fuse, Fetches[Fs]...>;
    check_feeds<Plan, Feeds...>();
    using executor = static_executor<Plan, group, Registry, PlanMemory>;
    using runner = cuda_graph_replay<executor, Device>;
    using fetched_type = std::tuple<typed_tensor<element_t<Graph::specs[Plan::fetches[Fs]].type>>...>;
    std::unique_lock lock(replay_mutex_);
    std::array<runner*, 2> runners{};
    for (int r = 0; r < 2; ++r) {
      auto found = replay_of<executor>(r);
      if (!found.ok()) return std::move(found).take_status();
      runners[static_cast<std::size_t>(r)] = *found;
    }
    static constexpr std::array<std::size_t, sizeof...(Fs)> fetch_slots{Plan::fetches[Fs]...};
    const auto finish = [&](std::size_t i) -> status {
      runner& r = *runners[i % 2];
      std::array<tensor, sizeof...(Fs)> out;
      status st = r.end(std::span<tensor>(out));
      executor::release_leaves(r.state());
      if (!st.ok()) return st;
      fetched_type fetched{typed_tensor<element_t<Graph::specs[Plan::fetches[Fs]].type>>::adopt(std::move(out[Fs]))...};
      if constexpr (std::is_same_v<decltype(done(i, std::move(fetched))), void>) {
        done(i, std::move(fetched));
        return ok_status();
      } else {
        return done(i, std::move(fetched));
      }
    };
    status st;
    std::size_t i = 0;
    for (; i < n && st.ok(); ++i) {
      const auto feeds = feeds_of(i);
      std::array<const tensor*, Graph::num_input_nodes + 1> bound{};
      std::apply([&](const auto&... f) { (void)((st = bind_feed(f, bound), st.ok()) && ...); }, feeds);
      if (st.ok()) {
        const static_environment env{std::span<const tensor* const>(bound), &variables_};
        graph_replay how = graph_replay::none;
        st = runners[i % 2]->begin(devices_, env, std::span<const std::size_t>(fetch_slots), how);
        if (!st.ok()) executor::release_leaves(runners[i % 2]->state());
      }
      if (!st.ok()) {
        st = st.with_context(detail::cat("run_batches: batch ", i).view());
        break;
      }
      if (i > 0) {
        if (status f = finish(i - 1); !f.ok()) st = f.with_context(detail::cat("run_batches: batch ", i - 1).view());
      }
    }
    // The last batch's results when all went well; else whatever is still in flight, waited for.
    if (st.ok()) {
      if (status f = finish(n - 1); !f.ok()) st = f.with_context(detail::cat("run_batches: batch ", n - 1).view());
    } else {
      for (runner* r : runners) {
        r->wait();
        executor::release_leaves(r->state());
      }
    }
    return st;
  }

  std::unique_ptr<state> acquire() {
    {
      std::lock_guard lock(states_mutex_);
      if (!states_.empty()) {
        auto s = std::move(states_.back());
        states_.pop_back();
        return s;
      }
    }
    return std::make_unique<state>();
  }
  void release(std::unique_ptr<state> s) {
    std::lock_guard lock(states_mutex_);
    states_.push_back(std::move(s));
  }

  group devices_;
  variable_store variables_;
  std::unique_ptr<Eigen::ThreadPool> pool_;  // the inter-op threads of a parallel session
  status init_;
  std::mutex states_mutex_;
  std::vector<std::unique_ptr<state>> states_;
  // A CUDA-graph session's runners (each owns its state), declared last: destroyed first.
  cuda_graph graph_options_;
  std::mutex replay_mutex_;
  std::vector<std::pair<std::pair<const void*, int>, std::unique_ptr<detail::replay_base>>> replays_;
};

template <class Graph, device_policy Device>
session(Graph, Device&, parallel) -> session<Graph, Device, default_registry, fuses_by_default<Device>, true, true>;
template <class Graph, class... Ds>
session(Graph, device_group<Ds...>, parallel)
    -> session<Graph, device_group<Ds...>, default_registry, fuses_by_default<device_group<Ds...>>, true, true>;

} // namespace typeflow
