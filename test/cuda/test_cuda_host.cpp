// SPDX-License-Identifier: Apache-2.0
// libtypeflow_cuda on any machine, with or without a GPU: what a program sees without a device, the
// parameter checks of every launcher (they run before a device is touched), and the broadcast layout's
// index arithmetic (the same functions the kernels run) against plain NumPy broadcasting.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <typeflow/core/dtype.hpp>
#include <typeflow/cuda/array.hpp>
#include <typeflow/cuda/blas.hpp>
#include <typeflow/cuda/elementwise.hpp>
#include <typeflow/cuda/nn.hpp>
#include <typeflow/cuda/reduction.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace gpu = typeflow::gpu;
using typeflow::status_code;
using Catch::Matchers::Contains;

// The library's elem and typeflow::dtype convert by value.
static_assert(gpu::num_elems == static_cast<int>(typeflow::num_dtypes));
static_assert(static_cast<int>(gpu::elem::f16) == static_cast<int>(typeflow::dtype::f16));
static_assert(static_cast<int>(gpu::elem::bf16) == static_cast<int>(typeflow::dtype::bf16));
static_assert(static_cast<int>(gpu::elem::f32) == static_cast<int>(typeflow::dtype::f32));
static_assert(static_cast<int>(gpu::elem::f64) == static_cast<int>(typeflow::dtype::f64));
static_assert(static_cast<int>(gpu::elem::i8) == static_cast<int>(typeflow::dtype::i8));
static_assert(static_cast<int>(gpu::elem::i32) == static_cast<int>(typeflow::dtype::i32));
static_assert(static_cast<int>(gpu::elem::i64) == static_cast<int>(typeflow::dtype::i64));
static_assert(static_cast<int>(gpu::elem::u8) == static_cast<int>(typeflow::dtype::u8));
static_assert(static_cast<int>(gpu::elem::boolean) == static_cast<int>(typeflow::dtype::boolean));
static_assert(gpu::size_of(gpu::elem::bf16) == 2 && gpu::size_of(gpu::elem::boolean) == 1);

TEST_CASE("device_count answers 0 without a device, and calls that need one say why") {
  auto count = gpu::device_count();
  REQUIRE(count.ok());
  if (*count == 0) {
    CHECK_FALSE(gpu::unavailable_reason().empty());
    auto p = gpu::device_alloc(0, 1024);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == status_code::failed_precondition);
    CHECK_THAT(std::string(p.status().message()), Contains("GPU:0") && Contains("no CUDA device"));
    auto s = gpu::stream::create(0);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == status_code::failed_precondition);
    CHECK(gpu::properties(0).status().code() == status_code::failed_precondition);
    CHECK(gpu::pinned_alloc(64).status().code() == status_code::failed_precondition);
  } else {
    CHECK(gpu::unavailable_reason().empty());
    auto p = gpu::properties(*count);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == status_code::invalid_argument);
    CHECK_THAT(std::string(p.status().message()), Contains("does not exist"));
  }
  CHECK(gpu::properties(-1).status().code() != status_code::ok);
  CHECK(gpu::device_free(0, nullptr).ok());
  CHECK(gpu::pinned_free(nullptr).ok());
}

namespace {

// Plain NumPy broadcasting: the flat index in an operand of dims `in` of the output element `index`.
std::int64_t reference_offset(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& out,
                              std::int64_t index) {
  std::int64_t offset = 0, stride = 1;
  for (std::size_t k = out.size(); k-- > 0;) {
    const std::int64_t coordinate = index % out[k];
    index /= out[k];
    const std::size_t lead = out.size() - in.size();
    if (k >= lead) {
      const std::int64_t d = in[k - lead];
      if (d != 1) offset += coordinate * stride;
      stride *= d;
    }
  }
  return offset;
}

} // namespace

TEST_CASE("broadcast_layout indexes like NumPy broadcasting, on random shapes") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> rank_of(0, 6), dim_of(1, 4), coin(0, 2);
  for (int trial = 0; trial < 2000; ++trial) {
    const int rank = rank_of(rng);
    std::vector<std::int64_t> out(rank), a, b;
    for (auto& d : out) d = dim_of(rng);
    // Each operand: a suffix of the output's rank, each dimension either the output's or 1.
    const auto operand = [&](std::vector<std::int64_t>& v) {
      const int r = std::uniform_int_distribution<int>(0, rank)(rng);
      for (int k = rank - r; k < rank; ++k) v.push_back(coin(rng) == 0 ? 1 : out[k]);
    };
    operand(a);
    operand(b);
    // The output's rank is the larger operand's; dimensions no operand has become 1 in both.
    const std::size_t r = std::max(a.size(), b.size());
    std::vector<std::int64_t> result(out.end() - static_cast<std::ptrdiff_t>(r), out.end());
    for (std::size_t k = 0; k < r; ++k) {
      const std::size_t la = r - a.size(), lb = r - b.size();
      const std::int64_t da = k < la ? 1 : a[k - la], db = k < lb ? 1 : b[k - lb];
      result[k] = da == 1 ? db : da;
    }
    auto layout = gpu::broadcast_layout("add", a, b, result);
    REQUIRE(layout.ok());
    std::int64_t size = 1;
    for (auto d : result) size *= d;
    REQUIRE(layout->size == size);
    REQUIRE(layout->rank <= gpu::max_layout_rank);
    for (std::int64_t i = 0; i < size; ++i) {
      std::int64_t offsets[2];
      gpu::operand_offsets(*layout, i, offsets);
      REQUIRE(offsets[0] == reference_offset(a, result, i));
      REQUIRE(offsets[1] == reference_offset(b, result, i));
      if (layout->same_shape) REQUIRE((offsets[0] == i && offsets[1] == i));
    }
  }
}

TEST_CASE("broadcast_layout merges dimensions the operands step through alike") {
  // [8, 16, 32] + [32]: the bias case; two dims (rows, then features).
  const std::int64_t x[] = {8, 16, 32}, bias[] = {32}, one[] = {1};
  auto l = gpu::broadcast_layout("add", x, bias, x);
  REQUIRE(l.ok());
  CHECK(l->rank == 2);
  CHECK(l->dims[0] == 128);
  CHECK(l->dims[1] == 32);
  CHECK_FALSE(l->same_shape);
  // Same shapes merge to one dimension.
  l = gpu::broadcast_layout("mul", x, x, x);
  REQUIRE(l.ok());
  CHECK(l->same_shape);
  CHECK(l->rank == 1);
  // A scalar: stride 0 in one dimension.
  l = gpu::broadcast_layout("mul", x, one, x);
  REQUIRE(l.ok());
  CHECK(l->rank == 1);
  CHECK(l->strides[1][0] == 0);
  // Nine alternating broadcast dimensions do not merge: more than the kernels index.
  const std::int64_t big[] = {2, 2, 2, 2, 2, 2, 2, 2, 2}, alt[] = {2, 1, 2, 1, 2, 1, 2, 1, 2};
  l = gpu::broadcast_layout("add", big, alt, big);
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(std::string(l.status().message()), Contains("at most 8"));
}

TEST_CASE("broadcast_layout rejects shapes that do not broadcast, naming the op and the shapes") {
  const std::int64_t a[] = {4, 3}, b[] = {4}, out[] = {4, 3}, wrong_out[] = {4, 4}, neg[] = {-1, 3};
  auto l = gpu::broadcast_layout("add", a, b, out);
  REQUIRE_FALSE(l.ok());
  CHECK(l.status().code() == status_code::invalid_argument);
  CHECK(std::string(l.status().message()) == "add: input 0 [4, 3] and input 1 [4] do not broadcast (output dimension 1)");
  const std::int64_t c[] = {3};
  l = gpu::broadcast_layout("sub", a, c, wrong_out);
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(std::string(l.status().message()), Contains("sub:") && Contains("other than the output's [4, 4]"));
  l = gpu::broadcast_layout("mul", neg, c, out);
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(std::string(l.status().message()), Contains("negative dimension"));
  const std::int64_t rank3[] = {1, 4, 3};
  l = gpu::broadcast_layout("mul", a, c, rank3);
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(std::string(l.status().message()), Contains("not the broadcast"));
}

TEST_CASE("elementwise parameters are checked before anything is launched") {
  float x = 0;
  gpu::unary_params u{.op = gpu::unary_op::exp, .type = gpu::elem::i32, .x = &x, .y = &x, .size = 1};
  auto s = gpu::validate(u);
  CHECK(s.code() == status_code::invalid_argument);
  CHECK(std::string(s.message()) == "exp: dtype i32 is not supported on the GPU (floating types only)");
  u.type = gpu::elem::f32;
  CHECK(gpu::validate(u).ok());
  u.x = nullptr;
  CHECK_THAT(std::string(gpu::validate(u).message()), Contains("the input is null"));
  u.size = 0;
  CHECK(gpu::validate(u).ok());  // nothing to read
  u.size = -3;
  CHECK_THAT(std::string(gpu::validate(u).message()), Contains("negative size"));
  u = {.op = gpu::unary_op::relu, .type = gpu::elem::u8, .x = &x, .y = &x, .size = 1};
  CHECK_THAT(std::string(gpu::validate(u).message()), Contains("signed numbers only"));
  u.op = static_cast<gpu::unary_op>(200);
  CHECK_THAT(std::string(gpu::validate(u).message()), Contains("invalid op code 200"));

  const std::int64_t d[] = {2, 3}, e[] = {3, 2};
  gpu::binary_params b{.op = gpu::binary_op::less, .type = gpu::elem::boolean, .a = &x, .a_dims = d, .b = &x,
                       .b_dims = d, .out = &x, .out_dims = d};
  CHECK_THAT(std::string(gpu::validate(b).message()), Contains("less: dtype bool is not supported"));
  b.op = gpu::binary_op::equal;
  CHECK(gpu::validate(b).ok());
  b.b_dims = e;
  CHECK_THAT(std::string(gpu::validate(b).message()), Contains("do not broadcast"));
  b.b_dims = d;
  b.out = nullptr;
  CHECK_THAT(std::string(gpu::validate(b).message()), Contains("equal: the output is null"));

  gpu::cast_params c{.from = gpu::elem::f32, .to = static_cast<gpu::elem>(42), .x = &x, .y = &x, .size = 1};
  CHECK_THAT(std::string(gpu::validate(c).message()), Contains("cast: the target has the invalid dtype code 42"));
}

TEST_CASE("matmul parameters are checked before anything is launched") {
  float a = 0, b = 0, out = 0, bias = 0;
  gpu::matmul_params p{.m = 2, .n = 3, .k = 4, .a = &a, .b = &b, .out = &out};
  CHECK(gpu::validate(p).ok());
  p.type = gpu::elem::i32;
  CHECK(std::string(gpu::validate(p, "dense").message()) ==
        "dense: dtype i32 is not supported by the GPU's matmul (f16, bf16, f32, f64)");
  p.type = gpu::elem::f64;
  p.math = gpu::precision::tf32;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("apply to f32 data, not f64"));
  p.type = gpu::elem::f32;
  CHECK(gpu::validate(p).ok());
  p.k = -1;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("negative dimension"));
  p.k = 4;
  p.post = gpu::epilogue::bias_relu;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("the bias is null"));
  p.bias = &bias;
  CHECK(gpu::validate(p).ok());
  p.post = gpu::epilogue::relu;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("the epilogue does not add one"));
  p.bias = nullptr;
  p.batch = 0;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("batch 0"));
  p.batch = 3;
  p.batch_stride_out = 5;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("batches would overlap"));
  p.batch_stride_out = -1;
  p.batch_stride_a = 0;  // the same a for every batch
  CHECK(gpu::validate(p).ok());
  p.a = nullptr;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("input 0 is null"));
  p.k = std::int64_t{1} << 31;
  p.a = &a;
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("reaches 2^31"));
}

TEST_CASE("make_reduction_layout walks every reduced element of every output once, on random shapes") {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> rank_of(1, 6), dim_of(1, 4), coin(0, 1);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<std::int64_t> dims(static_cast<std::size_t>(rank_of(rng)));
    for (auto& d : dims) d = dim_of(rng);
    std::vector<int> axes;
    for (int k = 0; k < static_cast<int>(dims.size()); ++k)
      if (coin(rng)) axes.push_back(coin(rng) ? k : k - static_cast<int>(dims.size()));  // negative too
    if (axes.empty()) axes.push_back(0);
    auto l = gpu::make_reduction_layout("reduce_sum", dims, axes);
    REQUIRE(l.ok());
    // Reference: each input element's output index (row-major over the kept axes).
    std::vector<bool> is_reduced(dims.size());
    for (int a : axes) is_reduced[static_cast<std::size_t>(a < 0 ? a + static_cast<int>(dims.size()) : a)] = true;
    std::int64_t total = 1, outputs = 1;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      total *= dims[k];
      if (!is_reduced[k]) outputs *= dims[k];
    }
    REQUIRE(l->kept.size == outputs);
    REQUIRE(l->kept.size * l->reduced.size == total);
    std::vector<std::int64_t> owner(static_cast<std::size_t>(total), -1);
    for (std::int64_t o = 0; o < l->kept.size; ++o) {
      std::int64_t base[1];
      gpu::operand_offsets(l->kept, o, base);
      for (std::int64_t r = 0; r < l->reduced.size; ++r) {
        std::int64_t off[1];
        gpu::operand_offsets(l->reduced, r, off);
        const auto at = static_cast<std::size_t>(base[0] + off[0]);
        REQUIRE(owner[at] == -1);
        owner[at] = o;
      }
    }
    for (std::int64_t i = 0; i < total; ++i) {
      // The output index of input element i, by its coordinates.
      std::int64_t rest = i, o = 0, scale = 1;
      for (std::size_t k = dims.size(); k-- > 0;) {
        const std::int64_t c = rest % dims[k];
        rest /= dims[k];
        if (!is_reduced[k]) {
          o += c * scale;
          scale *= dims[k];
        }
      }
      REQUIRE(owner[static_cast<std::size_t>(i)] == o);
    }
    if (l->rows) REQUIRE((l->reduced.rank == 1 && l->reduced.strides[0][0] == 1));
  }
}

TEST_CASE("reductions, argmax and softmax check their parameters before anything is launched") {
  float x = 0;
  std::int64_t y = 0;
  const std::int64_t dims[] = {2, 3};
  const int bad_axes[] = {2}, twice[] = {1, -1};
  gpu::reduce_params r{.op = gpu::reduce_op::max, .type = gpu::elem::f32, .x = &x, .x_dims = dims, .axes = bad_axes, .y = &x};
  CHECK(std::string(gpu::validate(r).message()) == "reduce_max: axis 2 is out of range for an input of rank 2 (shape [2, 3])");
  r.axes = twice;
  CHECK_THAT(std::string(gpu::validate(r).message()), Contains("axis 1 is named more than once"));
  r.axes = {};
  r.type = gpu::elem::boolean;
  CHECK_THAT(std::string(gpu::validate(r).message()), Contains("bool is not supported"));
  r.type = gpu::elem::i64;
  CHECK(gpu::validate(r).ok());
  const std::int64_t empty_axis[] = {2, 0};
  gpu::argmax_params a{.type = gpu::elem::f32, .x = &x, .x_dims = empty_axis, .axis = 1, .y = &y};
  CHECK_THAT(std::string(gpu::validate(a).message()), Contains("argmax: axis 1") && Contains("is empty"));
  a.x_dims = dims;
  a.axis = -3;
  CHECK_THAT(std::string(gpu::validate(a).message()), Contains("out of range"));
  gpu::softmax_params s{.type = gpu::elem::i32, .x = &x, .x_dims = dims, .y = &x};
  CHECK(std::string(gpu::validate(s).message()) == "softmax: dtype i32 is not supported (floating types only)");
  s.type = gpu::elem::f16;
  s.log = true;
  s.x_dims = {};
  CHECK_THAT(std::string(gpu::validate(s).message()), Contains("log_softmax: the input is a scalar"));
}

TEST_CASE("copy_layout copies every element once, for transposes, reversed slices and broadcasts") {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> rank_of(0, 5), dim_of(1, 4), coin(0, 3);
  for (int trial = 0; trial < 1000; ++trial) {
    const int rank = rank_of(rng);
    std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
    for (auto& d : dims) d = dim_of(rng);
    // dst: row-major; src: a permutation of a row-major layout, some axes reversed or broadcast.
    std::vector<std::int64_t> dst(dims.size()), src(dims.size()), perm(dims.size());
    std::int64_t step = 1;
    for (std::size_t k = dims.size(); k-- > 0;) {
      dst[k] = step;
      step *= dims[k];
    }
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    step = 1;
    for (std::size_t k = dims.size(); k-- > 0;) {
      const auto p = static_cast<std::size_t>(perm[k]);
      src[p] = step;
      step *= dims[p];
    }
    std::int64_t base = 0;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      const int c = coin(rng);
      if (c == 0) src[k] = 0;  // broadcast
      if (c == 1) {            // reversed: start at the last element
        base += (dims[k] - 1) * src[k];
        src[k] = -src[k];
      }
    }
    auto l = gpu::copy_layout("transpose", dims, src, dst);
    REQUIRE(l.ok());
    std::int64_t total = 1;
    for (auto d : dims) total *= d;
    REQUIRE(l->size == total);
    for (std::int64_t i = 0; i < total; ++i) {
      std::int64_t want_src = base, want_dst = 0, rest = i;
      for (std::size_t k = dims.size(); k-- > 0;) {
        const std::int64_t c = rest % dims[k];
        rest /= dims[k];
        want_src += c * src[k];
        want_dst += c * dst[k];
      }
      std::int64_t offsets[2];
      gpu::operand_offsets(*l, i, offsets);
      REQUIRE(base + offsets[0] == want_src);
      REQUIRE(offsets[1] == want_dst);
    }
  }
}

TEST_CASE("strided copies and gathers check their parameters before anything is launched") {
  float x = 0;
  const std::int64_t dims[] = {2, 3}, strides[] = {3, 1}, short_strides[] = {1};
  gpu::strided_copy_params c{.type = gpu::elem::f32, .dims = dims, .src = &x, .src_strides = strides, .dst = nullptr,
                             .dst_strides = strides};
  CHECK(std::string(gpu::validate(c, "transpose").message()) ==
        "transpose: the destination is null but the copy has 6 elements");
  c.dst = &x;
  c.src_strides = short_strides;
  CHECK_THAT(std::string(gpu::validate(c).message()), Contains("but 1 source and 2 destination strides"));
  gpu::gather_params g{.params = &x, .outer = 1, .axis = 3, .inner = 2, .index_type = gpu::elem::f32, .indices = &x,
                       .count = 2, .out = &x};
  CHECK(std::string(gpu::validate(g).message()) == "gather: indices must be i32 or i64, not f32");
  g.index_type = gpu::elem::i32;
  CHECK(gpu::validate(g).ok());
  g.axis = 0;
  CHECK_THAT(std::string(gpu::validate(g).message()), Contains("the gathered axis is empty"));
}

TEST_CASE("layer_norm and batch_norm check their parameters before anything is launched") {
  float x = 0;
  gpu::layer_norm_params l{.type = gpu::elem::i32, .x = &x, .rows = 2, .n = 3, .scale = &x, .offset = &x, .y = &x};
  CHECK(std::string(gpu::validate(l).message()) == "layer_norm: dtype i32 is not supported (floating types only)");
  l.type = gpu::elem::f32;
  CHECK(gpu::validate(l).ok());
  l.epsilon = -1;
  CHECK_THAT(std::string(gpu::validate(l).message()), Contains("epsilon must be >= 0"));
  l.epsilon = 1e-5;
  l.offset = nullptr;
  CHECK(std::string(gpu::validate(l).message()) == "layer_norm: offset is null");
  gpu::batch_norm_params b{.type = gpu::elem::f16, .x = &x, .rows = -1, .channels = 3};
  CHECK_THAT(std::string(gpu::validate(b).message()), Contains("negative dimension"));
}

TEST_CASE("the three-operand broadcast layout of where indexes like NumPy broadcasting, on random shapes") {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> rank_of(0, 5), dim_of(1, 4), coin(0, 2);
  for (int trial = 0; trial < 1000; ++trial) {
    const int rank = rank_of(rng);
    std::vector<std::int64_t> out(static_cast<std::size_t>(rank));
    for (auto& d : out) d = dim_of(rng);
    std::vector<std::vector<std::int64_t>> in(3);
    for (auto& v : in) {
      const int r = std::uniform_int_distribution<int>(0, rank)(rng);
      for (int k = rank - r; k < rank; ++k) v.push_back(coin(rng) == 0 ? 1 : out[static_cast<std::size_t>(k)]);
    }
    in[static_cast<std::size_t>(trial % 3)].assign(out.begin(), out.end());  // one operand has the output's shape
    auto l = gpu::broadcast_layout("where", in[0], in[1], in[2], out);
    REQUIRE(l.ok());
    std::int64_t size = 1;
    for (auto d : out) size *= d;
    REQUIRE(l->size == size);
    for (std::int64_t i = 0; i < size; ++i) {
      std::int64_t offsets[3];
      gpu::operand_offsets(*l, i, offsets);
      for (int k = 0; k < 3; ++k) REQUIRE(offsets[k] == reference_offset(in[static_cast<std::size_t>(k)], out, i));
    }
  }
  const std::int64_t c[] = {2, 1}, x[] = {3}, y[] = {2}, out[] = {2, 3};
  bool flag = true;
  float v = 0;
  auto bad = gpu::validate(gpu::select_params{.condition = &flag, .condition_dims = c, .x = &v, .x_dims = x, .y = &v,
                                              .y_dims = y, .out = &v, .out_dims = out});
  CHECK(std::string(bad.message()) ==
        "where: input 0 [2, 1], input 1 [3] and input 2 [2] do not broadcast (output dimension 1)");
}

TEST_CASE("pad checks its paddings before anything is launched") {
  float v = 0;
  const std::int64_t dims[] = {2, 3}, three[] = {1, 1, 1}, negative[] = {0, 0, -1, 2}, fine[] = {1, 0, 2, 2},
                     wide[] = {0, 0, 3, 0};
  gpu::pad_params p{.x = &v, .x_dims = dims, .paddings = three, .y = &v};
  CHECK(std::string(gpu::validate(p).message()) == "pad: 3 paddings for an input of rank 2; expected 2 per dimension");
  p.paddings = negative;
  CHECK(std::string(gpu::validate(p).message()) == "pad: paddings (-1, 2) of axis 1 are negative");
  p.paddings = fine;
  CHECK(gpu::validate(p).ok());
  p.mode = gpu::pad_mode::reflect;
  CHECK(gpu::validate(p).ok());  // reflect pads up to the dimension - 1
  p.paddings = wide;
  CHECK(std::string(gpu::validate(p).message()) == "pad: axis 1 has 3 elements, too few to pad by 3 in mode reflect");
  p.mode = gpu::pad_mode::symmetric;
  CHECK(gpu::validate(p).ok());  // symmetric up to the dimension
  p.paddings = fine;
  p.mode = static_cast<gpu::pad_mode>(9);
  CHECK_THAT(std::string(gpu::validate(p).message()), Contains("invalid mode code 9"));
  p.mode = gpu::pad_mode::constant;
  p.y = nullptr;
  CHECK(std::string(gpu::validate(p).message()) == "pad: the output is null but has 21 elements");
}
