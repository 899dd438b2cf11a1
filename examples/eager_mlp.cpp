// SPDX-License-Identifier: Apache-2.0
// The flagship example: a 784-256-128-10 classifier evaluated op by op. Each call picks its
// kernel at compile time from (op, device, dtype); shapes and dtypes are checked at run time and
// errors come back as a status. The same forward pass written directly against Eigen runs beside
// it, and the program prints the top-1 class of each row, the largest difference between the
// two, and the latency of each.
//
//   eager_mlp [batch=8] [threads=1]
#include <typeflow/typeflow.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace tf = typeflow;

namespace {

using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Deterministic weights and inputs, scaled so activations stay in a useful range.
tf::tensor random_tensor(const tf::shape& s, std::uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  auto t = tf::tensor::allocate(tf::dtype::f32, s);
  for (auto& v : t->unchecked_values<float>()) v = normal(rng);
  return *t;
}

struct layer {
  tf::tensor w;  // [in, out]
  tf::tensor b;  // [out]
};

// [batch, in] -> [batch, out]; relu on all but the last layer, softmax on the last.
template <class Device>
tf::result<tf::tensor> forward(Device& device, const std::vector<layer>& layers, tf::tensor x) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto h = tf::call<float>(device, tf::ops::matmul{}, x, layers[i].w);
    if (!h.ok()) return h;
    auto z = tf::call<float>(device, tf::ops::bias_add{}, *h, layers[i].b);
    if (!z.ok()) return z;
    auto a = i + 1 < layers.size() ? tf::call<float>(device, tf::ops::relu{}, *z)
                                   : tf::call<float>(device, tf::ops::softmax{.axis = -1}, *z);
    if (!a.ok()) return a;
    x = *a;
  }
  return x;
}

// The same network written by hand with Eigen matrices.
matrix forward_eigen(const std::vector<layer>& layers, const tf::tensor& x) {
  auto as_matrix = [](const tf::tensor& t) {
    return Eigen::Map<const matrix>(t.unchecked_data<float>(), t.dim(0), t.rank() == 2 ? t.dim(1) : 1);
  };
  matrix h = as_matrix(x);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    Eigen::Map<const Eigen::RowVectorXf> bias(l.b.unchecked_data<float>(), l.b.dim(0));
    matrix z = (h * as_matrix(l.w)).rowwise() + bias;
    if (i + 1 < layers.size()) {
      h = z.cwiseMax(0.0f);
    } else {
      matrix e = (z.colwise() - z.rowwise().maxCoeff()).array().exp().matrix();
      h = e.array().colwise() / e.rowwise().sum().array();
    }
  }
  return h;
}

template <class F>
double median_microseconds(F&& f, int repetitions) {
  std::vector<double> times;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

template <class Device>
int run(Device& device, std::int64_t batch) {
  const std::int64_t sizes[] = {784, 256, 128, 10};
  std::vector<layer> layers;
  for (int i = 0; i < 3; ++i)
    layers.push_back({random_tensor(tf::shape{sizes[i], sizes[i + 1]}, 10 + i, 1.0f / std::sqrt(float(sizes[i]))),
                      random_tensor(tf::shape{sizes[i + 1]}, 20 + i, 0.1f)});
  const tf::tensor x = random_tensor(tf::shape{batch, 784}, 1, 1.0f);

  auto probabilities = forward(device, layers, x);
  if (!probabilities.ok()) {
    std::fprintf(stderr, "forward pass failed: %s\n", probabilities.status().to_string().c_str());
    return 1;
  }
  auto top1 = tf::call<float>(device, tf::ops::argmax{.axis = 1}, *probabilities);
  if (!top1.ok()) {
    std::fprintf(stderr, "argmax failed: %s\n", top1.status().to_string().c_str());
    return 1;
  }
  const matrix reference = forward_eigen(layers, x);
  const tf::tensor probs = *probabilities;
  const tf::tensor classes = *top1;

  double max_diff = 0;
  const auto p = probs.unchecked_values<float>();
  for (std::int64_t i = 0; i < batch * 10; ++i)
    max_diff = std::max(max_diff, std::abs(double(p[i]) - double(reference.data()[i])));

  std::printf("top-1 class per row:");
  for (std::int64_t i = 0; i < batch; ++i) std::printf(" %lld", static_cast<long long>(*classes.at<std::int64_t>(i)));
  std::printf("\nmax |typeflow - Eigen| = %.3g\n", max_diff);

  const int reps = batch <= 8 ? 200 : 20;
  const double t_typeflow = median_microseconds([&] { (void)forward(device, layers, x); }, reps);
  const double t_eigen = median_microseconds([&] { (void)forward_eigen(layers, x); }, reps);
  std::printf("latency (median of %d): typeflow %.1f us, hand-written Eigen %.1f us\n", reps, t_typeflow, t_eigen);

  // A bad feed is a status with a message, never a crash.
  const tf::tensor wrong = random_tensor(tf::shape{batch, 100}, 2, 1.0f);
  auto bad = forward(device, layers, wrong);
  std::printf("feeding [%lld, 100]: %s\n", static_cast<long long>(batch), bad.status().to_string().c_str());
  return max_diff < 1e-5 && !bad.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const long batch = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 8;
  const long threads = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 1;
  if (batch < 1 || batch > 65536 || threads < 1 || threads > 256) {
    std::fprintf(stderr, "usage: eager_mlp [batch in 1..65536] [threads in 1..256]\n");
    return 2;
  }
  std::printf("typeflow eager MLP 784-256-128-10, batch %ld, %ld thread(s)\n", batch, threads);
  if (threads == 1) {
    tf::cpu device;
    return run(device, batch);
  }
  tf::thread_pool device(static_cast<int>(threads));
  return run(device, batch);
}
