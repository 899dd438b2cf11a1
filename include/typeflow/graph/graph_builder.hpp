// SPDX-License-Identifier: Apache-2.0
// A static graph written as a constexpr function: its nodes are records in the builder, its
// handles are their numbers, and the graph's type is made once, from the finished records.
//
//   constexpr auto chain(tf::graph_builder& b) {
//     auto x = b.input("x", tf::dtype::f32, tf::shape{2});
//     auto n = x;
//     for (int i = 0; i < 4096; ++i) n = n + x;           // ordinary loops: layers, blocks
//     return n;                                            // or std::array{y, z}
//   }
//   using model = tf::built<chain>;
//   tf::session s(model::graph{}, device);
//   auto r = s.run(tf::feed(model::node<"x">, t), tf::fetch(model::output<0>));
//
// Why a second way to write a static graph: an expression's type (graph/expr.hpp) spells every
// node it depends on, so a graph of N nodes written with expressions makes N types of up to N
// nodes each, and the compiler names each of them: more than linear in N (docs/design.md). Here
// writing a node costs a constexpr push_back, the function runs twice (to size the records, then to
// fill them), and node I of the graph is built_node<Build, I>, a type whose spelling does not grow
// with the graph. The plan, the executors, fusion and the memory plan are the same as for an
// expression's graph: they read nodes through the same members (graph/node.hpp).
//
// What the expressions do that the builder does not: identical sub-expressions are not merged
// (a handle is reused instead: writing `x` twice is one node), and nodes are not placed on devices
// (tf::on): a built graph runs on the session's first device. Every mistake is a compile error
// naming the node by its number: "graph_builder: node 3: add: shapes [2, 3] and [4, 3] do not broadcast...".
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/detail/fixed_string.hpp>
#include <typeflow/core/detail/format.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/graph/expr.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/graph/static_graph.hpp>
#include <typeflow/ops/elementwise.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/ops/standard_ops.hpp>

namespace typeflow {

template <class Ops>
class graph_builder_of;

// The builder for typeflow's own ops.
using graph_builder = graph_builder_of<standard_ops>;

// A node of a graph being built: its number in the builder, and the builder (so that `a + b`
// needs no builder named). Valid while the builder lives, inside the build function.
template <class Ops>
struct node_ref {
  graph_builder_of<Ops>* builder = nullptr;
  std::uint32_t index = 0;
  constexpr tensor_spec spec() const { return builder->spec_of(*this); }
};

namespace detail {

// One node as the builder records it.
struct built_record {
  node_kind kind{};
  std::uint32_t op_type = 0;  // an op: the position of its type in the op list
  std::uint32_t op_slot = 0;  // and of its value among the values of that type
  tensor_spec spec{};
  std::uint32_t input_begin = 0, num_inputs = 0;
  std::uint32_t name_begin = 0, name_size = 0;
  double value = 0;            // a constant's
  std::uint32_t port = 0;      // an output node: which output of its input
  std::uint32_t variable = 0;  // an assign: the variable's number
  std::uint32_t num_outputs = 1;
  bool multi_output = false;
};

template <std::size_t NumOpTypes>
struct built_sizes {
  std::size_t nodes = 0, edges = 0, chars = 0, outputs = 0, error = 0;
  std::array<std::size_t, NumOpTypes> ops{};
};

// The values a builder keeps of op type Op: none for an op without attributes.
struct no_op_values {};
template <class Op>
using op_values = std::conditional_t<std::is_empty_v<Op>, no_op_values, std::vector<Op>>;

template <class Ops, std::size_t I>
struct built_op_type;
template <class... Ops, std::size_t I>
struct built_op_type<op_list<Ops...>, I> {
  using type = std::tuple_element_t<I, std::tuple<Ops...>>;
};
template <class Ops>
struct op_names;
template <class... Ops>
struct op_names<op_list<Ops...>> {
  static constexpr std::array<std::string_view, sizeof...(Ops)> value{Ops::name...};
};

// A node's name: an input's or variable's own (kept in `names`), else its op's or its kind's.
template <class Ops>
constexpr std::string_view built_name(const built_record& r, const char* names) {
  switch (r.kind) {
    case node_kind::input:
    case node_kind::variable: return std::string_view(names + r.name_begin, r.name_size);
    case node_kind::op: return op_names<Ops>::value[r.op_type];
    default: return to_string(r.kind);
  }
}

}  // namespace detail

// A name made of pieces, at compile time or at run time: tf::scoped("layer", l, "/wq") is
// "layer3/wq" for l = 3. It converts to std::string_view for as long as it lives (a build function's
// input and variable names, session::initialize's). Not a std::string: libstdc++'s is not usable in
// Clang's constant evaluation.
class scoped_text {
 public:
  constexpr explicit scoped_text(detail::text t) : text_(std::move(t)) {}
  constexpr std::string_view view() const noexcept { return text_.view(); }
  constexpr operator std::string_view() const noexcept { return text_.view(); }
  std::string str() const { return text_.str(); }

 private:
  detail::text text_;
};
template <class... Pieces>
constexpr scoped_text scoped(const Pieces&... pieces) {
  return scoped_text(detail::cat(pieces...));
}

template <class... Ops>
class graph_builder_of<op_list<Ops...>> {
 public:
  using op_list_type = op_list<Ops...>;
  using node = node_ref<op_list_type>;

  constexpr graph_builder_of() = default;
  // Room for a graph of these sizes (the second run of a build function knows them).
  template <class Sizes>
  constexpr explicit graph_builder_of(const Sizes& s) {
    nodes_.reserve(s.nodes);
    inputs_.reserve(s.edges);
    names_.reserve(s.chars);
  }
  graph_builder_of(const graph_builder_of&) = delete;  // handles point at it
  graph_builder_of& operator=(const graph_builder_of&) = delete;

  // Fed at each run (dims may be dyn).
  constexpr node input(std::string_view name, dtype type, shape dims) {
    return leaf(node_kind::input, name, tensor_spec{type, dims});
  }
  // State held by the session; its shape must be fully known.
  constexpr node variable(std::string_view name, dtype type, shape dims) {
    if (!dims.is_fully_defined())
      fail(nodes_.size(), "variable '", name, "': a variable's shape must be fully known (no dyn), got ", dims);
    return leaf(node_kind::variable, name, tensor_spec{type, dims});
  }
  // A scalar known at compile time (exact as double: every f16/bf16/f32 value, integers to 2^53).
  constexpr node constant(double value, dtype type) {
    detail::built_record r;
    r.kind = node_kind::constant;
    r.spec = tensor_spec{type, shape{}};
    r.value = value;
    return add(r, {});
  }

  // op applied to the inputs; its output's dtype and shape are inferred here. An op with several
  // outputs (split, top_k) is read through output(node, k).
  template <class Op, class... In>
    requires(std::same_as<In, node> && ...)
  constexpr node apply(const Op& op, In... inputs) {
    const std::array<node, sizeof...(In)> list{inputs...};
    return apply(op, std::span<const node>(list));
  }
  template <class Op>
  constexpr node apply(const Op& op, std::span<const node> inputs) {
    constexpr std::size_t type = detail::op_index_in<Op, Ops...>();
    static_assert(type < sizeof...(Ops),
                  "graph_builder: this op's type is not in the builder's op list: build with "
                  "graph_builder_of<op_list_cat<standard_ops, op_list<your_op>>>");
    detail::built_record r;
    r.kind = node_kind::op;
    r.op_type = static_cast<std::uint32_t>(type);
    if constexpr (!std::is_empty_v<Op>) r.op_slot = static_cast<std::uint32_t>(std::get<type>(values_).size());
    r.num_outputs = static_cast<std::uint32_t>(num_outputs_of(op));
    r.multi_output = multi_output_op<Op>;
    r.input_begin = static_cast<std::uint32_t>(inputs_.size());
    r.num_inputs = static_cast<std::uint32_t>(inputs.size());
    for (const node& in : inputs)
      if (!read(in, Op::name)) return placeholder(r);
    for (const node& in : inputs) inputs_.push_back(in.index);
    auto spec = infer_cached(op, type, r);
    if constexpr (multi_output_op<Op>)  // every output's, as the expressions check them
      for (std::size_t k = 1; spec.ok() && k < r.num_outputs; ++k)
        if (auto other = infer_output_of(op, r, k); !other.ok()) spec = std::move(other).take_status();
    if (!spec.ok()) {
      inputs_.resize(r.input_begin);
      fail(nodes_.size(), spec.status().message());
      return placeholder(r);
    }
    r.spec = *spec;
    if constexpr (!std::is_empty_v<Op>) std::get<type>(values_).push_back(op);
    return add(r, {});
  }

  // Output `port` of an op node with several outputs.
  constexpr node output(node of, std::size_t port) {
    detail::built_record r;
    r.kind = node_kind::output;
    if (!owned(of, "output")) return placeholder(r);
    const detail::built_record& src = nodes_[of.index];
    if (src.kind != node_kind::op || !src.multi_output) {
      fail(nodes_.size(), "output(node ", of.index, ", ", port, "): node ", of.index,
           " is not an op with several outputs");
      return placeholder(r);
    }
    if (port >= src.num_outputs) {
      fail(nodes_.size(), "output(node ", of.index, ", ", port, "): the op has ", src.num_outputs, " outputs");
      return placeholder(r);
    }
    auto spec = infer_output(src, port);
    if (!spec.ok()) {
      fail(nodes_.size(), spec.status().message());
      return placeholder(r);
    }
    r.spec = *spec;
    r.port = static_cast<std::uint32_t>(port);
    r.input_begin = static_cast<std::uint32_t>(inputs_.size());
    r.num_inputs = 1;
    inputs_.push_back(of.index);
    return add(r, {});
  }

  // Stores `value` into the variable `var` when it runs; its output is the value stored.
  constexpr node assign(node var, node value) {
    detail::built_record r;
    r.kind = node_kind::assign;
    if (!owned(var, "assign") || !read(value, "assign")) return placeholder(r);
    const detail::built_record& v = nodes_[var.index];
    if (v.kind != node_kind::variable) {
      fail(nodes_.size(), "assign: node ", var.index, " is not a variable");
      return placeholder(r);
    }
    if (v.spec != nodes_[value.index].spec) {
      fail(nodes_.size(), "assign to variable '", name_of(var.index), "': the value is ", nodes_[value.index].spec,
           ", the variable is ", v.spec);
      return placeholder(r);
    }
    r.spec = v.spec;
    r.variable = var.index;
    r.input_begin = static_cast<std::uint32_t>(inputs_.size());
    r.num_inputs = 1;
    inputs_.push_back(value.index);
    return add(r, {});
  }

  constexpr tensor_spec spec_of(node n) const { return n.index < nodes_.size() ? nodes_[n.index].spec : tensor_spec{}; }

  // A node the build function returns: one of this builder's, and a value (not an op with several
  // outputs, whose values are its output nodes).
  constexpr std::uint32_t returned(node n) {
    if (read(n, "a result of the build function")) return n.index;
    return 0;
  }
  constexpr std::size_t size() const { return nodes_.size(); }
  constexpr std::string_view error() const { return error_.view(); }

  // What built<Build> reads once the function has run.
  constexpr detail::built_sizes<sizeof...(Ops)> sizes(std::size_t outputs) const {
    detail::built_sizes<sizeof...(Ops)> s;
    s.nodes = nodes_.size();
    s.edges = inputs_.size();
    s.chars = names_.size();
    s.outputs = outputs;
    s.error = error_.view().size();
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((s.ops[I] = value_count<I>()), ...);
    }(std::make_index_sequence<sizeof...(Ops)>{});
    return s;
  }
  constexpr const std::vector<detail::built_record>& records() const { return nodes_; }
  constexpr const std::vector<std::uint32_t>& edges() const { return inputs_; }
  constexpr const std::vector<char>& names() const { return names_; }
  template <std::size_t I>
  constexpr const auto& values() const { return std::get<I>(values_); }
  template <std::size_t I>
  constexpr std::size_t value_count() const {
    if constexpr (std::is_empty_v<std::tuple_element_t<I, std::tuple<Ops...>>>) return 0;
    else return std::get<I>(values_).size();
  }

  // The first mistake found, and which node it was: the build goes on with a placeholder node, so
  // one mistake gives one message.
  template <class... Parts>
  constexpr void fail(std::size_t at, const Parts&... parts) {
    if (!error_.empty()) return;
    error_ = detail::cat("graph_builder: node ", at, ": ", parts...);
  }

 private:
  constexpr node leaf(node_kind kind, std::string_view name, tensor_spec spec) {
    if (name.empty()) fail(nodes_.size(), "an ", to_string(kind), " needs a name");
    detail::built_record r;
    r.kind = kind;
    r.spec = spec;
    return add(r, name);
  }

  // Appends record r; `name` is kept for an input or a variable (other nodes are named by their op
  // or their kind, detail::built_name).
  constexpr node add(detail::built_record r, std::string_view name) {
    if (r.kind == node_kind::input || r.kind == node_kind::variable) {
      r.name_begin = static_cast<std::uint32_t>(names_.size());
      r.name_size = static_cast<std::uint32_t>(name.size());
      names_.insert(names_.end(), name.begin(), name.end());
    }
    nodes_.push_back(r);
    return node{this, static_cast<std::uint32_t>(nodes_.size() - 1)};
  }
  // A node after a mistake: no inputs, so that the build can go on.
  constexpr node placeholder(detail::built_record r) {
    r.input_begin = static_cast<std::uint32_t>(inputs_.size());
    r.num_inputs = 0;
    r.kind = node_kind::constant;
    return add(r, {});
  }

  constexpr bool owned(node n, std::string_view what) {
    if (n.builder == this && n.index < nodes_.size()) return true;
    fail(nodes_.size(), what, ": an input is a node of another graph_builder");
    return false;
  }
  // `n` as an input of a node: a node of this builder, and not an op with several outputs.
  constexpr bool read(node n, std::string_view what) {
    if (!owned(n, what)) return false;
    if (nodes_[n.index].multi_output) {
      fail(nodes_.size(), what, ": input node ", n.index, " (", name_of(n.index),
           ") has several outputs: read one with output(node, k)");
      return false;
    }
    return true;
  }
  constexpr std::string_view name_of(std::uint32_t i) const { return detail::built_name<op_list_type>(nodes_[i], names_.data()); }
  // The value of op type I at `slot` (an op type without attributes keeps no values).
  template <std::size_t I>
  constexpr auto op_value(std::uint32_t slot) const {
    using op_type = std::tuple_element_t<I, std::tuple<Ops...>>;
    if constexpr (std::is_empty_v<op_type>) return op_type{};
    else return std::get<I>(values_)[slot];
  }

  // The inference of op node r: the last one of this op type again when the op and its inputs'
  // specs are the same (a chain, the layers of a model), which costs far less at compile time.
  template <class Op>
  constexpr result<tensor_spec> infer_cached(const Op& op, std::size_t type, const detail::built_record& r) {
    inferred& last = last_inferred_[type];
    bool same = false;
    if constexpr (std::is_empty_v<Op> || std::equality_comparable<Op>) {
      bool same_op = true;
      if constexpr (!std::is_empty_v<Op>) same_op = last.valid && std::get<type_index<Op>>(values_).back() == op;
      if (last.valid && same_op && last.num_inputs == r.num_inputs) {
        same = true;
        for (std::uint32_t j = 0; same && j < r.num_inputs; ++j)
          same = nodes_[inputs_[last.input_begin + j]].spec == nodes_[inputs_[r.input_begin + j]].spec;
      }
    }
    if (same) return last.spec;
    auto spec = infer_output_of(op, r, 0);
    if (spec.ok()) last = inferred{true, r.input_begin, r.num_inputs, *spec};
    return spec;
  }
  template <class Op>
  static constexpr std::size_t type_index = detail::op_index_in<Op, Ops...>();
  struct inferred {
    bool valid = false;
    std::uint32_t input_begin = 0, num_inputs = 0;
    tensor_spec spec{};
  };

  // Output `port`'s spec of op node r, whose op is `op`, from its inputs' specs.
  template <class Op>
  constexpr result<tensor_spec> infer_output_of(const Op& op, const detail::built_record& r, std::size_t port) const {
    std::vector<tensor_spec> specs;
    for (std::uint32_t j = 0; j < r.num_inputs; ++j) specs.push_back(nodes_[inputs_[r.input_begin + j]].spec);
    return infer(op, std::span<const tensor_spec>(specs), port);
  }

  // Output `port`'s spec of op node `src`, inferred again from its inputs.
  constexpr result<tensor_spec> infer_output(const detail::built_record& src, std::size_t port) const {
    result<tensor_spec> out = tensor_spec{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (([&] {
         if constexpr (multi_output_op<std::tuple_element_t<I, std::tuple<Ops...>>>)
           if (I == src.op_type) out = infer_output_of(op_value<I>(src.op_slot), src, port);
       }()),
       ...);
    }(std::make_index_sequence<sizeof...(Ops)>{});
    return out;
  }

  std::vector<detail::built_record> nodes_;
  std::vector<std::uint32_t> inputs_;
  std::vector<char> names_;
  std::tuple<detail::op_values<Ops>...> values_;  // nothing for an op type without attributes
  std::array<inferred, sizeof...(Ops)> last_inferred_{};
  detail::text error_;
};

namespace detail {

template <class F>
struct build_function;
template <class R, class Ops>
struct build_function<R (*)(graph_builder_of<Ops>&)> {
  using ops = Ops;
};

// The output handles a build function returned: one node, or an array of them.
template <class Ops>
constexpr std::vector<std::uint32_t> output_indices(graph_builder_of<Ops>& b, node_ref<Ops> n) {
  return {b.returned(n)};
}
template <class Ops, std::size_t N>
constexpr std::vector<std::uint32_t> output_indices(graph_builder_of<Ops>& b, const std::array<node_ref<Ops>, N>& a) {
  std::vector<std::uint32_t> v;
  for (const auto& n : a) v.push_back(b.returned(n));
  return v;
}

// The attribute values of a built graph: a slot per op type of the list, an array of the graph's
// nodes of that type. Not a std::tuple: with a hundred op types, the constraints of its
// constructors took Clang 21 s of the 12-layer transformer's 126.
template <std::size_t I, class T>
struct built_value_slot {
  T value{};
};
template <class Is, class... Ts>
struct built_value_slots;
template <std::size_t... I, class... Ts>
struct built_value_slots<std::index_sequence<I...>, Ts...> : built_value_slot<I, Ts>... {};
template <std::size_t I, class T>
constexpr T& built_slot(built_value_slot<I, T>& s) {
  return s.value;
}
template <std::size_t I, class T>
constexpr const T& built_slot(const built_value_slot<I, T>& s) {
  return s.value;
}

template <class Ops, auto Sizes>
struct built_values;
template <class... Ops, auto Sizes>
struct built_values<op_list<Ops...>, Sizes> {
  struct none {};
  using type = decltype([]<std::size_t... I>(std::index_sequence<I...>) {
    return built_value_slots<std::index_sequence<I...>,
                             std::conditional_t<Sizes.ops[I] == 0, none, std::array<Ops, Sizes.ops[I]>>...>{};
  }(std::make_index_sequence<sizeof...(Ops)>{}));
};

}  // namespace detail

template <auto Build, std::size_t I>
struct built_node;

// The graph a build function writes: built<Build>::graph is its static_graph (every node it
// wrote, in the order written); node<"x"> the input or variable named x and output<K> the K-th
// node it returned, as expressions for feed, fetch and a session's variables.
template <auto Build>
struct built {
  using function = decltype(+Build);
  using ops = typename detail::build_function<function>::ops;
  using builder = graph_builder_of<ops>;

  static constexpr auto sizes = [] {
    builder b;
    const auto outputs = detail::output_indices(b, Build(b));
    return b.sizes(outputs.size());
  }();
  static constexpr bool ok = sizes.error == 0;
  static_assert(ok || compile_error<detail::text_constant<[] {
                  if constexpr (ok) return detail::text();  // the message is made (a third run) only for a failed build
                  else {
                    builder b;
                    (void)detail::output_indices(b, Build(b));
                    return detail::text(b.error());
                  }
                }>::value>::value,
                "typeflow::built<Build>: the build function wrote an invalid graph; see compile_error<...> above");

  // The records, copied out of the builder: the function runs a second time to fill them.
  struct value_type {
    std::array<detail::built_record, sizes.nodes> nodes{};
    std::array<std::uint32_t, sizes.edges> inputs{};
    std::array<char, sizes.chars> names{};
    std::array<std::uint32_t, sizes.outputs> outputs{};
    typename detail::built_values<ops, sizes>::type values{};
  };
  static constexpr value_type value = [] {
    value_type v;
    if constexpr (ok) {
      builder b(sizes);
      const auto outputs = detail::output_indices(b, Build(b));
      for (std::size_t i = 0; i < v.nodes.size(); ++i) v.nodes[i] = b.records()[i];
      for (std::size_t i = 0; i < v.inputs.size(); ++i) v.inputs[i] = b.edges()[i];
      for (std::size_t i = 0; i < v.names.size(); ++i) v.names[i] = b.names()[i];
      for (std::size_t i = 0; i < v.outputs.size(); ++i) v.outputs[i] = outputs[i];
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (([&] {
           if constexpr (sizes.ops[K] > 0)  // the op types the graph uses: no code for the others
             std::copy(b.template values<K>().begin(), b.template values<K>().end(), detail::built_slot<K>(v.values).begin());
         }()),
         ...);
      }(std::make_index_sequence<ops::size>{});
    }
    return v;
  }();

  // After a failed build (its message is above) the graph is one input, which node<> and output<>
  // name: a session of it compiles, so the message stands alone.
  using inert = expr<node_list<input_node<"invalid", float, static_shape<>>>>;
  using graph = std::conditional_t<ok, static_graph<built_nodes<Build>>, static_graph<node_list<input_node<"invalid", float, static_shape<>>>>>;

  // The position of the input or variable named `name`, or the graph's size.
  static constexpr std::size_t position_of_name(std::string_view name) {
    for (std::size_t i = 0; i < built_nodes<Build>::size; ++i)
      if ((value.nodes[i].kind == node_kind::input || value.nodes[i].kind == node_kind::variable) &&
          built_nodes<Build>::names[i] == name)
        return i;
    return sizes.nodes;
  }
  template <detail::fixed_string Name>
  static constexpr std::size_t named_position = [] {
    static_assert(!ok || position_of_name(Name.view()) < sizes.nodes || compile_error<detail::text_constant<[] {
                    if (!ok || position_of_name(Name.view()) < sizes.nodes) return detail::text();
                    return detail::cat("built<Build>::node<\"", Name.view(), "\">: the graph has no input or variable named '",
                                       Name.view(), "'");
                  }>::value>::value,
                  "typeflow::built<Build>::node<Name>: no such input or variable");
    return position_of_name(Name.view()) < sizes.nodes ? position_of_name(Name.view()) : 0;  // no flood after the message
  }();

  template <detail::fixed_string Name>
  static constexpr std::conditional_t<ok, expr<node_list<built_node<Build, named_position<Name>>>>, inert> node{};
  template <std::size_t K>
    requires(K < sizes.outputs)
  static constexpr std::conditional_t<ok, expr<node_list<built_node<Build, value.outputs[K]>>>, inert> output{};
};

namespace detail {
template <class Ops>
struct fusable_op_types;
template <class... Ops>
struct fusable_op_types<op_list<Ops...>> {
  static constexpr std::array<bool, sizeof...(Ops) + 1> value{is_fusable_elementwise<Ops>..., false};
  static constexpr std::array<bool, sizeof...(Ops) + 1> cheap{is_cheap_elementwise<Ops>..., false};
};
}  // namespace detail

// The nodes of built<Build> as the arrays static_graph reads (graph_nodes in
// graph/static_graph.hpp), made from the records in loops: no type per node is needed for them.
// Node ids are a hash of this type's spelling and the node's number.
template <auto Build>
struct built_nodes {
 private:
  static constexpr const auto& record = built<Build>::value.nodes;
  template <class T, class F>
  static constexpr auto each(F f) {
    std::array<T, built<Build>::ok ? built<Build>::sizes.nodes : 0> a{};
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = f(record[i], i);
    return a;
  }
  static constexpr std::uint64_t base_id = detail::fnv1a(detail::type_spelling<built_nodes>());

 public:
  static constexpr std::size_t size = built<Build>::ok ? built<Build>::sizes.nodes : 0;  // no flood after the message
  template <std::size_t I>
  using node = built_node<Build, I>;

  static constexpr std::array<std::uint64_t, size> ids = each<std::uint64_t>([](const detail::built_record&, std::size_t i) {
    const char bytes[] = {static_cast<char>(i), static_cast<char>(i >> 8), static_cast<char>(i >> 16),
                          static_cast<char>(i >> 24), '#'};
    return detail::fnv1a(std::string_view(bytes, sizeof bytes), base_id);
  });
  static constexpr auto kinds = each<node_kind>([](const detail::built_record& r, std::size_t) { return r.kind; });
  static constexpr auto specs = each<tensor_spec>([](const detail::built_record& r, std::size_t) { return r.spec; });
  static constexpr auto names = each<std::string_view>([](const detail::built_record& r, std::size_t) {
    return detail::built_name<typename built<Build>::ops>(r, built<Build>::value.names.data());
  });
  static constexpr auto num_inputs =
      each<std::size_t>([](const detail::built_record& r, std::size_t) { return std::size_t{r.num_inputs}; });
  static constexpr auto constant_values = each<double>([](const detail::built_record& r, std::size_t) { return r.value; });
  static constexpr auto assigned = each<std::uint64_t>([](const detail::built_record& r, std::size_t) {
    return r.kind == node_kind::assign ? ids[r.variable] : std::uint64_t{0};
  });
  static constexpr auto num_outputs = each<std::size_t>([](const detail::built_record& r, std::size_t) {
    return r.kind == node_kind::op ? std::size_t{r.num_outputs} : std::size_t{1};
  });
  static constexpr auto multi_output =
      each<bool>([](const detail::built_record& r, std::size_t) { return r.kind == node_kind::op && r.multi_output; });
  static constexpr auto ports = each<std::size_t>([](const detail::built_record& r, std::size_t) {
    return r.kind == node_kind::output ? std::size_t{r.port} : std::size_t{0};
  });
  static constexpr auto placed = each<bool>([](const detail::built_record&, std::size_t) { return false; });
  static constexpr auto device_types =
      each<std::string_view>([](const detail::built_record&, std::size_t) { return default_device::device_type; });
  // An elementwise op of a floating dtype (what plan.hpp's fusable_node says of an op_node).
  static constexpr auto fusable = each<bool>([](const detail::built_record& r, std::size_t) {
    return r.kind == node_kind::op && detail::fusable_op_types<typename built<Build>::ops>::value[r.op_type] &&
           is_floating(r.spec.type);
  });
  // A cheap elementwise op (what plan.hpp's fusable_nodes::cheap says of an op_node).
  static constexpr auto cheap = each<bool>([](const detail::built_record& r, std::size_t) {
    return r.kind == node_kind::op && detail::fusable_op_types<typename built<Build>::ops>::cheap[r.op_type];
  });

  static constexpr std::size_t num_edges = built<Build>::ok ? built<Build>::sizes.edges : 0;
  static constexpr std::array<std::uint64_t, num_edges + 1> edge_ids = [] {
    std::array<std::uint64_t, num_edges + 1> e{};
    for (std::size_t k = 0; k + 1 < e.size(); ++k) e[k] = ids[built<Build>::value.inputs[k]];
    return e;
  }();
  static constexpr const std::uint64_t* input_ids(std::size_t i) { return edge_ids.data() + record[i].input_begin; }
};

template <auto Build, std::size_t I>
inline constexpr std::uint64_t node_id<built_node<Build, I>> = built_nodes<Build>::ids[I];

namespace detail {

template <auto Build, std::size_t I, class Js>
struct built_node_inputs;
template <auto Build, std::size_t I, std::size_t... Js>
struct built_node_inputs<Build, I, std::index_sequence<Js...>> {
  static constexpr std::uint64_t inputs[sizeof...(Js) + 1] = {built_nodes<Build>::input_ids(I)[Js]..., 0};
  static constexpr std::size_t num_inputs = sizeof...(Js);
};

template <auto Build, std::size_t I>
struct built_node_common
    : built_node_inputs<Build, I, std::make_index_sequence<built<Build>::value.nodes[I].num_inputs>> {
  static constexpr node_kind kind = built<Build>::value.nodes[I].kind;
  static constexpr std::string_view name = built_nodes<Build>::names[I];
  static constexpr tensor_spec spec = built<Build>::value.nodes[I].spec;
};

template <auto Build, std::size_t I, node_kind Kind = built<Build>::value.nodes[I].kind>
struct built_node_facts : built_node_common<Build, I> {};

template <auto Build, std::size_t I>
struct built_node_facts<Build, I, node_kind::constant> : built_node_common<Build, I> {
  static constexpr double value = built<Build>::value.nodes[I].value;
};

template <auto Build, std::size_t I>
struct built_node_facts<Build, I, node_kind::op> : built_node_common<Build, I> {
  static constexpr const built_record& record = built<Build>::value.nodes[I];
  using op_type = typename detail::built_op_type<typename built<Build>::ops, record.op_type>::type;
  static constexpr op_type op = [] {
    if constexpr (std::is_empty_v<op_type>) return op_type{};
    else return detail::built_slot<record.op_type>(built<Build>::value.values)[record.op_slot];
  }();
  static constexpr std::size_t num_outputs = record.num_outputs;
  static constexpr bool multi_output = record.multi_output;
};

template <auto Build, std::size_t I>
struct built_node_facts<Build, I, node_kind::assign> : built_node_common<Build, I> {
  static constexpr std::uint64_t variable = built_nodes<Build>::assigned[I];
};

template <auto Build, std::size_t I>
struct built_node_facts<Build, I, node_kind::output> : built_node_common<Build, I> {
  static constexpr std::size_t port = built<Build>::value.nodes[I].port;
};

}  // namespace detail

// Node I of the graph Build writes: its kind, name, spec, inputs (by id) and, by kind, its op,
// value, port or variable, read from built<Build>'s records. Its spelling is its function and its
// number, whatever the size of the graph.
template <auto Build, std::size_t I>
struct built_node : detail::built_node_facts<Build, I> {};

// The operators and functions of graph/expr.hpp, on a builder's nodes. A number beside a node is
// a constant of the node's dtype.
namespace detail {
template <class Op, class Ops>
constexpr node_ref<Ops> built_binary(node_ref<Ops> a, node_ref<Ops> b) {
  return a.builder->apply(Op{}, a, b);
}
template <class Op, class Ops>
constexpr node_ref<Ops> built_binary(node_ref<Ops> a, double b) {
  return a.builder->apply(Op{}, a, a.builder->constant(b, a.spec().type));
}
template <class Op, class Ops>
constexpr node_ref<Ops> built_binary(double a, node_ref<Ops> b) {
  return b.builder->apply(Op{}, b.builder->constant(a, b.spec().type), b);
}
}  // namespace detail

#define TYPEFLOW_BUILT_BINARY(function, op_type)                                                   \
  template <class Ops>                                                                             \
  constexpr node_ref<Ops> function(node_ref<Ops> a, node_ref<Ops> b) {                             \
    return detail::built_binary<op_type>(a, b);                                                    \
  }                                                                                                \
  template <class Ops, class N>                                                                    \
    requires std::is_arithmetic_v<N>                                                               \
  constexpr node_ref<Ops> function(node_ref<Ops> a, N b) {                                         \
    return detail::built_binary<op_type>(a, static_cast<double>(b));                               \
  }                                                                                                \
  template <class Ops, class N>                                                                    \
    requires std::is_arithmetic_v<N>                                                               \
  constexpr node_ref<Ops> function(N a, node_ref<Ops> b) {                                         \
    return detail::built_binary<op_type>(static_cast<double>(a), b);                               \
  }
TYPEFLOW_GRAPH_BINARY_FUNCTIONS(TYPEFLOW_BUILT_BINARY)
#undef TYPEFLOW_BUILT_BINARY

#define TYPEFLOW_BUILT_UNARY(function, op_type)    \
  template <class Ops>                             \
  constexpr node_ref<Ops> function(node_ref<Ops> x) { \
    return x.builder->apply(op_type{}, x);         \
  }
TYPEFLOW_GRAPH_UNARY_FUNCTIONS(TYPEFLOW_BUILT_UNARY)
#undef TYPEFLOW_BUILT_UNARY

// [..., m, k] x [..., k, n] -> [..., m, n]
template <class Ops>
constexpr node_ref<Ops> matmul(node_ref<Ops> a, node_ref<Ops> b) {
  return a.builder->apply(ops::matmul{}, a, b);
}
// [..., c] + [c]
template <class Ops>
constexpr node_ref<Ops> bias_add(node_ref<Ops> x, node_ref<Ops> b) {
  return x.builder->apply(ops::bias_add{}, x, b);
}

}  // namespace typeflow
