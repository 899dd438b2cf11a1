// SPDX-License-Identifier: Apache-2.0
// make_random_dag(seed): a random runtime graph in the text format, for differential tests of the
// executors and of placement across devices.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <typeflow/typeflow.hpp>

namespace typeflow::test {

// A random DAG of small f32 tensors: elementwise ops with broadcasting, matmul, reductions,
// reshape and concat; two placeholders; the last node and two random ones are fetched.
struct random_dag {
  std::string text;
  std::vector<std::string> fetches;
};

inline random_dag make_random_dag(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  struct value {
    std::string name;
    ::typeflow::shape s;
  };
  std::vector<value> nodes;
  std::string text;
  auto add_node = [&](const std::string& line, ::typeflow::shape s) {
    const std::string name = "n" + std::to_string(nodes.size());
    text += name + " = " + line + "\n";
    nodes.push_back({name, s});
  };
  add_node("placeholder() dtype=f32 shape=shape[?, 4]", ::typeflow::shape{3, 4});
  add_node("placeholder() dtype=f32 shape=shape[4]", ::typeflow::shape{4});
  add_node("const() dtype=f32 shape=shape[4, 4] value=[0.5, -1, 0.25, 2, 1, 0, -0.5, 0.75, -2, 1.5, 0.125, 1, 0, 0.5, -1, 0.25]",
           ::typeflow::shape{4, 4});
  auto pick = [&](auto&& ok) -> const value* {
    std::vector<const value*> c;
    for (const value& v : nodes)
      if (ok(v.s)) c.push_back(&v);
    return c.empty() ? nullptr : c[rng() % c.size()];
  };
  auto broadcastable = [](const ::typeflow::shape& a, const ::typeflow::shape& b) { return ::typeflow::broadcast(a, b).ok(); };
  const int count = 6 + static_cast<int>(rng() % 14);
  for (int i = 0; i < count; ++i) {
    switch (rng() % 8) {
      case 0: case 1: {  // unary
        const value* a = pick([](const ::typeflow::shape&) { return true; });
        static constexpr const char* unary[] = {"relu", "tanh", "neg", "sigmoid", "abs", "square"};
        add_node(std::string(unary[rng() % 6]) + "(" + a->name + ")", a->s);
        break;
      }
      case 2: case 3: {  // binary with broadcasting
        const value* a = pick([](const ::typeflow::shape&) { return true; });
        const value* b = pick([&](const ::typeflow::shape& s) { return broadcastable(a->s, s); });
        static constexpr const char* binary[] = {"add", "sub", "mul", "maximum", "minimum"};
        add_node(std::string(binary[rng() % 5]) + "(" + a->name + ", " + b->name + ")", *::typeflow::broadcast(a->s, b->s));
        break;
      }
      case 4: {  // matmul [m, 4] x [4, 4]
        const value* a = pick([](const ::typeflow::shape& s) { return s.rank() == 2 && s[1] == 4; });
        const value* b = pick([](const ::typeflow::shape& s) { return s == ::typeflow::shape{4, 4}; });
        if (!a || !b) break;
        add_node("matmul(" + a->name + ", " + b->name + ")", ::typeflow::shape{a->s[0], 4});
        break;
      }
      case 5: {  // reduction over axis 0, keeping it
        const value* a = pick([](const ::typeflow::shape& s) { return s.rank() == 2; });
        if (!a) break;
        add_node(std::string(rng() % 2 ? "reduce_sum" : "reduce_max") + "(" + a->name + ") axes=[0] keep_dims=true",
                 ::typeflow::shape{1, a->s[1]});
        break;
      }
      case 6: {  // reshape to 1-D and back
        const value* found = pick([](const ::typeflow::shape& s) { return s.rank() == 2; });
        if (!found) break;
        const value a = *found;  // a copy: add_node may move the nodes
        add_node("reshape(" + a.name + ") shape=[-1]", ::typeflow::shape{a.s.num_elements()});
        const std::string flat = nodes.back().name;
        add_node("reshape(" + flat + ") shape=[" + std::to_string(a.s[0]) + ", " + std::to_string(a.s[1]) + "]", a.s);
        break;
      }
      default: {  // concat two rank-2 tensors of 4 columns along axis 0
        const value* a = pick([](const ::typeflow::shape& s) { return s.rank() == 2 && s[1] == 4; });
        const value* b = pick([](const ::typeflow::shape& s) { return s.rank() == 2 && s[1] == 4; });
        if (!a || !b) break;
        add_node("concat(" + a->name + ", " + b->name + ") axis=0", ::typeflow::shape{a->s[0] + b->s[0], 4});
        break;
      }
    }
  }
  random_dag d{text, {nodes.back().name}};
  for (int k = 0; k < 2; ++k) d.fetches.push_back(nodes[3 + rng() % (nodes.size() - 3)].name);
  return d;
}

}  // namespace typeflow::test

