// SPDX-License-Identifier: Apache-2.0
// The two example networks, structs mlp and cnn: each a static graph, deterministic weights, and
// the same network written by hand against Eigen (the reference the examples check against and the
// benchmarks compare with).
//   MLP: 784-1024-1024-10, bias, ReLU, softmax.
//   CNN on 28x28x1: conv 3x3 32 + ReLU, conv 3x3 64 + ReLU, max-pool 2x2, conv 3x3 64 + ReLU,
//        max-pool 2x2, flatten, dense 128 + ReLU, dense 10, softmax ('same' padding).
#pragma once

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace models {

namespace tf = typeflow;
using tf::dyn;
using tf::static_shape;

// A deterministic tensor: a smooth pattern scaled by `scale` (weights: 1/sqrt(fan_in)).
inline tf::tensor pattern(const tf::shape& s, double scale, double phase) {
  auto t = *tf::tensor::allocate(tf::dtype::f32, s);
  auto v = t.unchecked_values<float>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * std::sin(0.37 * double(i) + phase));
  return t;
}

inline double max_abs_diff(const tf::tensor& a, const tf::tensor& b) {
  double m = 0;
  const auto x = a.unchecked_values<const float>();
  const auto y = b.unchecked_values<const float>();
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, double(std::abs(x[i] - y[i])));
  return x.size() == y.size() ? m : INFINITY;
}

// The index of the largest value in each row of a [rows, cols] tensor.
inline std::vector<int> top1(const tf::tensor& p) {
  std::vector<int> out;
  const auto v = p.unchecked_values<const float>();
  const std::int64_t cols = p.dim(1);
  for (std::int64_t r = 0; r < p.dim(0); ++r) {
    int best = 0;
    for (int c = 1; c < cols; ++c)
      if (v[r * cols + c] > v[r * cols + best]) best = c;
    out.push_back(best);
  }
  return out;
}

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
inline Eigen::Map<const row_major> as_matrix(const tf::tensor& t, std::int64_t rows, std::int64_t cols) {
  return {t.unchecked_data<const float>(), rows, cols};
}
inline Eigen::Map<row_major> as_matrix(tf::tensor& t, std::int64_t rows, std::int64_t cols) {
  return {t.unchecked_data<float>(), rows, cols};
}

// Sets each variable (first) to its tensor (second); the first error is the result.
template <class Session, class... Bindings>
tf::status initialize_all(Session& s, const Bindings&... bindings) {
  tf::status st;
  (st.update(s.initialize(bindings.first, bindings.second)), ...);
  return st;
}

// Row-wise softmax in place, as written by hand: subtract the max, exponentiate, normalise.
inline void softmax_rows(Eigen::Map<row_major> m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    auto row = m.row(r);
    row.array() -= row.maxCoeff();
    row = row.array().exp().matrix();
    row /= row.sum();
  }
}

// ---------------------------------------------------------------------------------------------
// MLP

struct mlp {
  static constexpr const char* name = "mlp";
  static constexpr auto x = tf::input<"x", float, static_shape<dyn, 784>>;
  static constexpr auto w1 = tf::variable<"w1", float, static_shape<784, 1024>>;
  static constexpr auto b1 = tf::variable<"b1", float, static_shape<1024>>;
  static constexpr auto w2 = tf::variable<"w2", float, static_shape<1024, 1024>>;
  static constexpr auto b2 = tf::variable<"b2", float, static_shape<1024>>;
  static constexpr auto w3 = tf::variable<"w3", float, static_shape<1024, 10>>;
  static constexpr auto b3 = tf::variable<"b3", float, static_shape<10>>;
  static constexpr auto h1 = tf::relu(tf::matmul(x, w1) + b1);  // [?, 784] x [784, 1024] -> [?, 1024]
  static constexpr auto h2 = tf::relu(tf::matmul(h1, w2) + b2);
  static constexpr auto y = tf::softmax(tf::matmul(h2, w3) + b3);  // [?, 10]
  using graph = decltype(tf::graph(y));

  struct weights {
    tf::tensor w1 = pattern(tf::shape{784, 1024}, 1 / std::sqrt(784.0), 0.1);
    tf::tensor b1 = pattern(tf::shape{1024}, 0.1, 0.2);
    tf::tensor w2 = pattern(tf::shape{1024, 1024}, 1 / std::sqrt(1024.0), 0.3);
    tf::tensor b2 = pattern(tf::shape{1024}, 0.1, 0.4);
    tf::tensor w3 = pattern(tf::shape{1024, 10}, 1 / std::sqrt(1024.0), 0.5);
    tf::tensor b3 = pattern(tf::shape{10}, 0.1, 0.6);
  };

  template <class Session>
  static tf::status initialize(Session& s, const weights& w) {
    return initialize_all(s, std::pair{w1, w.w1}, std::pair{b1, w.b1}, std::pair{w2, w.w2}, std::pair{b2, w.b2},
                          std::pair{w3, w.w3}, std::pair{b3, w.b3});
  }

  static tf::tensor input(std::int64_t batch) { return pattern(tf::shape{batch, 784}, 1.0, 0.0); }

  // The hand-written forward pass: Eigen GEMMs with the bias and ReLU as one expression each. The
  // scratch tensors are the caller's, so a repeated call allocates nothing.
  struct eigen_forward {
    tf::tensor h1, h2, y;
    explicit eigen_forward(std::int64_t batch)
        : h1(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 1024})),
          h2(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 1024})),
          y(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 10})) {}
    template <class EigenDevice>
    const tf::tensor& operator()(const EigenDevice& d, const tf::tensor& x, const weights& w) {
      dense(d, x, w.w1, w.b1, h1, true);
      dense(d, h1, w.w2, w.b2, h2, true);
      dense(d, h2, w.w3, w.b3, y, false);
      softmax_rows(as_matrix(y, y.dim(0), 10));
      return y;
    }

    // out = relu?(in x weights + bias): Eigen's contraction (its GEMM, split over the device's
    // threads), then the bias and ReLU as one expression.
    template <class EigenDevice>
    static void dense(const EigenDevice& d, const tf::tensor& in, const tf::tensor& weights, const tf::tensor& bias,
                      tf::tensor& out, bool relu) {
      using cmap2 = Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor, Eigen::Index>>;
      const Eigen::Index n = in.dim(0), k = in.dim(1), m = weights.dim(1);
      const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{Eigen::IndexPair<Eigen::Index>(1, 0)};
      Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::Index>> y(out.unchecked_data<float>(), n, m);
      const cmap2 b(bias.unchecked_data<const float>(), 1, m);
      y.device(d) = cmap2(in.unchecked_data<const float>(), n, k).contract(cmap2(weights.unchecked_data<const float>(), k, m), dims);
      if (relu) y.device(d) = (y + b.broadcast(Eigen::array<Eigen::Index, 2>{n, 1})).cwiseMax(0.0f);
      else y.device(d) = y + b.broadcast(Eigen::array<Eigen::Index, 2>{n, 1});
    }
  };
};

// ---------------------------------------------------------------------------------------------
// CNN

struct cnn {
  static constexpr const char* name = "cnn";
  static constexpr tf::ops::conv2d same_conv{.pad = tf::ops::padding::same};
  static constexpr auto x = tf::input<"x", float, static_shape<dyn, 28, 28, 1>>;
  static constexpr auto k1 = tf::variable<"k1", float, static_shape<3, 3, 1, 32>>;
  static constexpr auto c1 = tf::variable<"c1", float, static_shape<32>>;
  static constexpr auto k2 = tf::variable<"k2", float, static_shape<3, 3, 32, 64>>;
  static constexpr auto c2 = tf::variable<"c2", float, static_shape<64>>;
  static constexpr auto k3 = tf::variable<"k3", float, static_shape<3, 3, 64, 64>>;
  static constexpr auto c3 = tf::variable<"c3", float, static_shape<64>>;
  static constexpr auto w4 = tf::variable<"w4", float, static_shape<3136, 128>>;
  static constexpr auto b4 = tf::variable<"b4", float, static_shape<128>>;
  static constexpr auto w5 = tf::variable<"w5", float, static_shape<128, 10>>;
  static constexpr auto b5 = tf::variable<"b5", float, static_shape<10>>;
  static constexpr auto a1 = tf::relu(tf::apply<same_conv>(x, k1) + c1);       // [?, 28, 28, 32]
  static constexpr auto a2 = tf::relu(tf::apply<same_conv>(a1, k2) + c2);      // [?, 28, 28, 64]
  static constexpr auto p2 = tf::apply<tf::ops::max_pool2d{}>(a2);             // [?, 14, 14, 64]
  static constexpr auto a3 = tf::relu(tf::apply<same_conv>(p2, k3) + c3);      // [?, 14, 14, 64]
  static constexpr auto p3 = tf::apply<tf::ops::max_pool2d{}>(a3);             // [?, 7, 7, 64]
  static constexpr auto flat = tf::reshape<tf::shape{dyn, 3136}>(p3);          // [?, 3136]
  static constexpr auto d4 = tf::relu(tf::matmul(flat, w4) + b4);             // [?, 128]
  static constexpr auto y = tf::softmax(tf::matmul(d4, w5) + b5);             // [?, 10]
  using graph = decltype(tf::graph(y));

  struct weights {
    tf::tensor k1 = pattern(tf::shape{3, 3, 1, 32}, 1 / 3.0, 0.1);
    tf::tensor c1 = pattern(tf::shape{32}, 0.05, 0.2);
    tf::tensor k2 = pattern(tf::shape{3, 3, 32, 64}, 1 / std::sqrt(288.0), 0.3);
    tf::tensor c2 = pattern(tf::shape{64}, 0.05, 0.4);
    tf::tensor k3 = pattern(tf::shape{3, 3, 64, 64}, 1 / std::sqrt(576.0), 0.5);
    tf::tensor c3 = pattern(tf::shape{64}, 0.05, 0.6);
    tf::tensor w4 = pattern(tf::shape{3136, 128}, 1 / std::sqrt(3136.0), 0.7);
    tf::tensor b4 = pattern(tf::shape{128}, 0.05, 0.8);
    tf::tensor w5 = pattern(tf::shape{128, 10}, 1 / std::sqrt(128.0), 0.9);
    tf::tensor b5 = pattern(tf::shape{10}, 0.05, 1.0);
  };

  template <class Session>
  static tf::status initialize(Session& s, const weights& w) {
    return initialize_all(s, std::pair{k1, w.k1}, std::pair{c1, w.c1}, std::pair{k2, w.k2}, std::pair{c2, w.c2},
                          std::pair{k3, w.k3}, std::pair{c3, w.c3}, std::pair{w4, w.w4}, std::pair{b4, w.b4},
                          std::pair{w5, w.w5}, std::pair{b5, w.b5});
  }

  static tf::tensor input(std::int64_t batch) { return pattern(tf::shape{batch, 28, 28, 1}, 1.0, 0.0); }

  // The hand-written forward pass, as TensorFlow's Eigen kernels write it: convolutions as image
  // patches and one contraction, bias and ReLU as one expression, pooling as a max over a reshape.
  struct eigen_forward {
    using map4 = Eigen::TensorMap<Eigen::Tensor<float, 4, Eigen::RowMajor, Eigen::Index>>;
    using cmap4 = Eigen::TensorMap<Eigen::Tensor<const float, 4, Eigen::RowMajor, Eigen::Index>>;
    std::int64_t n;
    tf::tensor a1, a2, p2, a3, p3, d4, y;
    explicit eigen_forward(std::int64_t batch)
        : n(batch),
          a1(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 28, 28, 32})),
          a2(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 28, 28, 64})),
          p2(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 14, 14, 64})),
          a3(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 14, 14, 64})),
          p3(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 7, 7, 64})),
          d4(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 128})),
          y(*tf::tensor::allocate(tf::dtype::f32, tf::shape{batch, 10})) {}

    template <class EigenDevice>
    static void conv_bias_relu(const EigenDevice& d, const tf::tensor& in, const tf::tensor& k, const tf::tensor& bias,
                               tf::tensor& out) {
      const auto b = in.dim(0), h = in.dim(1), w = in.dim(2), c = in.dim(3), o = k.dim(3);
      const cmap4 x(in.unchecked_data<const float>(), b, h, w, c);
      const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{Eigen::IndexPair<Eigen::Index>(1, 0)};
      const Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor, Eigen::Index>> kernel(
          k.unchecked_data<const float>(), 9 * c, o);
      Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::Index>> y(out.unchecked_data<float>(), b * h * w, o);
      const Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor, Eigen::Index>> bias2(
          bias.unchecked_data<const float>(), 1, o);
      y.device(d) = x.extract_image_patches(3, 3, 1, 1, 1, 1, Eigen::PADDING_SAME)
                        .reshape(Eigen::array<Eigen::Index, 2>{b * h * w, 9 * c})
                        .contract(kernel, dims);
      y.device(d) = (y + bias2.broadcast(Eigen::array<Eigen::Index, 2>{b * h * w, 1})).cwiseMax(0.0f);
    }

    template <class EigenDevice>
    static void max_pool(const EigenDevice& d, const tf::tensor& in, tf::tensor& out) {
      const auto b = in.dim(0), h = in.dim(1), w = in.dim(2), c = in.dim(3);
      const Eigen::TensorMap<Eigen::Tensor<const float, 6, Eigen::RowMajor, Eigen::Index>> x(
          in.unchecked_data<const float>(), b, h / 2, 2, w / 2, 2, c);
      map4 y(out.unchecked_data<float>(), b, h / 2, w / 2, c);
      y.device(d) = x.maximum(Eigen::array<Eigen::Index, 2>{2, 4});
    }

    template <class EigenDevice>
    const tf::tensor& operator()(const EigenDevice& d, const tf::tensor& x, const weights& w) {
      conv_bias_relu(d, x, w.k1, w.c1, a1);
      conv_bias_relu(d, a1, w.k2, w.c2, a2);
      max_pool(d, a2, p2);
      conv_bias_relu(d, p2, w.k3, w.c3, a3);
      max_pool(d, a3, p3);
      const tf::tensor flat = *p3.reshaped(tf::shape{n, 3136});
      mlp::eigen_forward::dense(d, flat, w.w4, w.b4, d4, true);
      mlp::eigen_forward::dense(d, d4, w.w5, w.b5, y, false);
      softmax_rows(as_matrix(y, n, 10));
      return y;
    }
  };
};

}  // namespace models
