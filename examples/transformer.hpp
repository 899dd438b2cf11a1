// SPDX-License-Identifier: Apache-2.0
// A transformer encoder as one static graph (models::transformer<Config>), with deterministic
// weights, and the same network written by hand against Eigen: the reference the example checks
// against and the benchmark compares with.
//
// Each layer is BERT's (post-norm):
//   q, k, v = x wq + bq, x wk + bk, x wv + bv          [batch, seq, hidden], split into heads
//   a       = softmax(q k^T / sqrt(head size)) v       per head, heads joined again
//   x1      = layer_norm(x + (a wo + bo))
//   y       = layer_norm(x1 + (gelu(x1 w1 + b1) w2 + b2))
// The layers are a loop of a build function (tf::graph_builder): its variables are named
// "layer<l>/..." (tf::scoped), so the twelve layers are twelve sets of weights.
#pragma once

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "models.hpp"

namespace models {

struct transformer_config {
  int layers;
  int hidden;
  int heads;
  int ffn;       // the feed-forward block's inner width
  int sequence;  // tokens per example
};

// 1 / sqrt(v) at compile time (Newton's iteration; std::sqrt is not constexpr in C++20).
constexpr double inverse_sqrt(double v) {
  double s = v > 1 ? v / 2 : 1;
  for (int i = 0; i < 64; ++i) s = (s + v / s) / 2;
  return 1 / s;
}

template <transformer_config C>
struct transformer {
  static_assert(C.layers >= 1 && C.hidden % C.heads == 0, "transformer: hidden must be a multiple of heads");
  static constexpr const char* name = "transformer";
  static constexpr int layers = C.layers;
  static constexpr std::int64_t S = C.sequence, H = C.hidden, A = C.heads, D = C.hidden / C.heads, F = C.ffn;

  // The graph, written by a build function (tf::graph_builder): one loop over the layers, whose
  // variables are named "layer<l>/..." (tf::scoped), as TensorFlow's name scopes would name them. Its
  // compile time grows linearly with the layers (README, "Compile time").
  static constexpr auto build(tf::graph_builder& b) {
    const auto split = [](auto t) {
      return t.builder->apply(tf::ops::transpose{.perm = {0, 2, 1, 3}}, t.builder->apply(tf::ops::reshape{.to = tf::shape{dyn, S, A, D}}, t));
    };
    const auto join = [](auto t) {
      return t.builder->apply(tf::ops::reshape{.to = tf::shape{dyn, S, H}}, t.builder->apply(tf::ops::transpose{.perm = {0, 2, 1, 3}}, t));
    };
    auto h = b.input("x", tf::dtype::f32, tf::shape{dyn, S, H});
    for (int l = 0; l < C.layers; ++l) {
      // Named by the table below (variables), which named_weights reads too.
      const auto var = [&](tf::tensor layer_weights::*member, tf::shape dims) {
        return b.variable(tf::scoped("layer", l, suffix_of(member)), tf::dtype::f32, dims);
      };
      using w = layer_weights;
      auto wq = var(&w::wq, {H, H}), bq = var(&w::bq, {H}), wk = var(&w::wk, {H, H}), bk = var(&w::bk, {H});
      auto wv = var(&w::wv, {H, H}), bv = var(&w::bv, {H}), wo = var(&w::wo, {H, H}), bo = var(&w::bo, {H});
      auto g1 = var(&w::g1, {H}), c1 = var(&w::c1, {H}), w1 = var(&w::w1, {H, F}), b1 = var(&w::b1, {F});
      auto w2 = var(&w::w2, {F, H}), b2 = var(&w::b2, {H}), g2 = var(&w::g2, {H}), c2 = var(&w::c2, {H});
      auto q = split(tf::matmul(h, wq) + bq);
      auto k = split(tf::matmul(h, wk) + bk);
      auto v = split(tf::matmul(h, wv) + bv);
      auto scores = b.apply(tf::ops::matmul{.transpose_b = true}, q, k) * inverse_sqrt(D);
      auto attended = join(tf::matmul(tf::softmax(scores), v));
      auto x1 = b.apply(tf::ops::layer_norm{}, h + (tf::matmul(attended, wo) + bo), g1, c1);
      auto ffn = tf::matmul(tf::gelu(tf::matmul(x1, w1) + b1), w2) + b2;
      h = b.apply(tf::ops::layer_norm{}, x1 + ffn, g2, c2);
    }
    return h;
  }

  struct layer_weights {
    tf::tensor wq, bq, wk, bk, wv, bv, wo, bo, g1, c1, w1, b1, w2, b2, g2, c2;
    explicit layer_weights(int l) {
      const double p = 16.0 * l, h = 1 / std::sqrt(double(H)), f = 1 / std::sqrt(double(F));
      wq = pattern(tf::shape{H, H}, h, p + 0.1), bq = pattern(tf::shape{H}, 0.05, p + 0.2);
      wk = pattern(tf::shape{H, H}, h, p + 0.3), bk = pattern(tf::shape{H}, 0.05, p + 0.4);
      wv = pattern(tf::shape{H, H}, h, p + 0.5), bv = pattern(tf::shape{H}, 0.05, p + 0.6);
      wo = pattern(tf::shape{H, H}, h, p + 0.7), bo = pattern(tf::shape{H}, 0.05, p + 0.8);
      g1 = near_one(p + 0.9), c1 = pattern(tf::shape{H}, 0.05, p + 1.0);
      w1 = pattern(tf::shape{H, F}, h, p + 1.1), b1 = pattern(tf::shape{F}, 0.05, p + 1.2);
      w2 = pattern(tf::shape{F, H}, f, p + 1.3), b2 = pattern(tf::shape{H}, 0.05, p + 1.4);
      g2 = near_one(p + 1.5), c2 = pattern(tf::shape{H}, 0.05, p + 1.6);
    }
    static tf::tensor near_one(double phase) {
      tf::tensor t = pattern(tf::shape{H}, 0.1, phase);
      for (float& v : t.unchecked_values<float>()) v += 1;
      return t;
    }
  };
  struct weights {
    std::vector<layer_weights> layers;
    weights() {
      for (int l = 0; l < C.layers; ++l) layers.emplace_back(l);
    }
  };

  // Every variable's name suffix (after "layer<l>") with the member of layer_weights that holds it.
  static constexpr std::pair<std::string_view, tf::tensor layer_weights::*> variables[] = {
      {"/attention/wq", &layer_weights::wq}, {"/attention/bq", &layer_weights::bq},
      {"/attention/wk", &layer_weights::wk}, {"/attention/bk", &layer_weights::bk},
      {"/attention/wv", &layer_weights::wv}, {"/attention/bv", &layer_weights::bv},
      {"/attention/wo", &layer_weights::wo}, {"/attention/bo", &layer_weights::bo},
      {"/attention/norm/scale", &layer_weights::g1}, {"/attention/norm/offset", &layer_weights::c1},
      {"/ffn/w1", &layer_weights::w1}, {"/ffn/b1", &layer_weights::b1},
      {"/ffn/w2", &layer_weights::w2}, {"/ffn/b2", &layer_weights::b2},
      {"/ffn/norm/scale", &layer_weights::g2}, {"/ffn/norm/offset", &layer_weights::c2}};

  // The name suffix of the variable held by `member` (empty, which the builder refuses, for none).
  static constexpr std::string_view suffix_of(tf::tensor layer_weights::*member) {
    for (const auto& [suffix, m] : variables)
      if (m == member) return suffix;
    return {};
  }

  // After the table: the build function reads it.
  using built = tf::built<build>;

  // Every variable's name with its value.
  static std::vector<std::pair<std::string, tf::tensor>> named_weights(const weights& w) {
    std::vector<std::pair<std::string, tf::tensor>> named;
    for (int l = 0; l < C.layers; ++l)
      for (const auto& [suffix, member] : variables) named.emplace_back(tf::scoped("layer", l, suffix).str(), w.layers[l].*member);
    return named;
  }

  // Sets every variable of a session by name (one call for all of them, where initialize(var,
  // value) would be a function per variable).
  template <class Session>
  static tf::status initialize(Session& s, const weights& w) {
    tf::status st;
    for (const auto& [name, value] : named_weights(w)) st.update(s.initialize(name, value));
    return st;
  }

  // The runtime graph's feeds: x and every variable (a runtime graph's variables are placeholders).
  static std::vector<std::pair<std::string, tf::tensor>> runtime_feeds(const tf::tensor& in, const weights& w) {
    auto feeds = named_weights(w);
    feeds.emplace_back("x", in);
    return feeds;
  }

  static tf::tensor input(std::int64_t batch) { return pattern(tf::shape{batch, S, H}, 1.0, 0.0); }

  // The hand-written forward pass. Dense layers are Eigen contractions over all batch * seq rows
  // on the device's threads with the bias (and GELU) as one expression; attention reads each head
  // in place (strided maps, no transposes), one (example, head) pair per task, with Eigen's matrix
  // product; layer norm is a loop over rows. The scratch tensors are the caller's.
  struct eigen_forward {
    using matrix_map = Eigen::Map<row_major, 0, Eigen::OuterStride<>>;
    using const_matrix_map = Eigen::Map<const row_major, 0, Eigen::OuterStride<>>;
    std::int64_t rows;
    tf::tensor mid, q, k, v, attended, sum, inner, scores, out;
    explicit eigen_forward(std::int64_t batch)
        : rows(batch * S),
          mid(alloc({rows, H})), q(alloc({rows, H})), k(alloc({rows, H})), v(alloc({rows, H})),
          attended(alloc({rows, H})), sum(alloc({rows, H})), inner(alloc({rows, F})), scores(alloc({batch * A, S, S})),
          out(alloc({batch, S, H})) {}
    static tf::tensor alloc(const tf::shape& s) { return *tf::tensor::allocate(tf::dtype::f32, s); }

    // fn(i) for i in [0, n), on the device's threads when it has a pool.
    template <class EigenDevice, class Fn>
    static void parallel(const EigenDevice& d, std::int64_t n, double cost, Fn fn) {
      if constexpr (std::is_same_v<EigenDevice, Eigen::ThreadPoolDevice>)
        d.parallelFor(n, Eigen::TensorOpCost(0, 0, cost), [&](Eigen::Index a, Eigen::Index b) {
          for (Eigen::Index i = a; i < b; ++i) fn(i);
        });
      else
        for (std::int64_t i = 0; i < n; ++i) fn(i);
    }

    // out = in weights + bias, then GELU when asked.
    template <class EigenDevice>
    static void dense(const EigenDevice& d, const tf::tensor& in, const tf::tensor& weights, const tf::tensor& bias,
                      tf::tensor& out, bool gelu) {
      using cmap2 = Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor, Eigen::Index>>;
      const Eigen::Index n = in.num_elements() / in.dim(in.rank() - 1), kk = weights.dim(0), m = weights.dim(1);
      const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{Eigen::IndexPair<Eigen::Index>(1, 0)};
      Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::Index>> y(out.unchecked_data<float>(), n, m);
      const auto b = cmap2(bias.unchecked_data<const float>(), 1, m).broadcast(Eigen::array<Eigen::Index, 2>{n, 1});
      y.device(d) = cmap2(in.unchecked_data<const float>(), n, kk).contract(cmap2(weights.unchecked_data<const float>(), kk, m), dims);
      if (gelu) y.device(d) = 0.5f * (y + b) * (1.0f + ((y + b) * 0.7071067811865476f).erf());
      else y.device(d) = y + b;
    }

    // out = layer_norm(a + b) over each row of H, with scale g and offset c.
    template <class EigenDevice>
    void add_norm(const EigenDevice& d, const tf::tensor& a, const tf::tensor& b, const tf::tensor& g,
                  const tf::tensor& c, tf::tensor& y) const {
      const float* ap = a.unchecked_data<const float>();
      const float* bp = b.unchecked_data<const float>();
      float* yp = y.unchecked_data<float>();
      const auto gv = Eigen::Map<const Eigen::ArrayXf>(g.unchecked_data<const float>(), H);
      const auto cv = Eigen::Map<const Eigen::ArrayXf>(c.unchecked_data<const float>(), H);
      parallel(d, rows, 8.0 * H, [&](std::int64_t r) {
        Eigen::Map<Eigen::ArrayXf> row(yp + r * H, H);
        row = Eigen::Map<const Eigen::ArrayXf>(ap + r * H, H) + Eigen::Map<const Eigen::ArrayXf>(bp + r * H, H);
        const float mean = row.mean();
        const float variance = (row - mean).square().mean();
        row = (row - mean) * (1.0f / std::sqrt(variance + 1e-5f)) * gv + cv;
      });
    }

    // attended = softmax(q k^T / sqrt(D)) v for every (example, head), heads read in place.
    template <class EigenDevice>
    void attention(const EigenDevice& d) {
      const float scale = static_cast<float>(inverse_sqrt(D));
      parallel(d, rows / S * A, 4.0 * S * S * D, [&](std::int64_t t) {
        const std::int64_t b = t / A, h = t % A, first = b * S * H + h * D;
        const const_matrix_map qh(q.unchecked_data<const float>() + first, S, D, Eigen::OuterStride<>(H));
        const const_matrix_map kh(k.unchecked_data<const float>() + first, S, D, Eigen::OuterStride<>(H));
        const const_matrix_map vh(v.unchecked_data<const float>() + first, S, D, Eigen::OuterStride<>(H));
        Eigen::Map<row_major> p(scores.unchecked_data<float>() + t * S * S, S, S);
        p.noalias() = (qh * scale) * kh.transpose();
        softmax_rows(p);
        matrix_map(attended.unchecked_data<float>() + first, S, D, Eigen::OuterStride<>(H)).noalias() = p * vh;
      });
    }

    template <class EigenDevice>
    const tf::tensor& operator()(const EigenDevice& d, const tf::tensor& in, const weights& w) {
      const tf::tensor* cur = &in;
      for (int l = 0; l < C.layers; ++l) {
        const layer_weights& lw = w.layers[l];
        dense(d, *cur, lw.wq, lw.bq, q, false);
        dense(d, *cur, lw.wk, lw.bk, k, false);
        dense(d, *cur, lw.wv, lw.bv, v, false);
        attention(d);
        dense(d, attended, lw.wo, lw.bo, sum, false);
        add_norm(d, *cur, sum, lw.g1, lw.c1, mid);
        dense(d, mid, lw.w1, lw.b1, inner, true);
        dense(d, inner, lw.w2, lw.b2, sum, false);
        add_norm(d, mid, sum, lw.g2, lw.c2, out);
        cur = &out;
      }
      return out;
    }
  };
};

}  // namespace models
