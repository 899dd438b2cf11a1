// SPDX-License-Identifier: Apache-2.0
// Array ops (reshape, identity, transpose, concat, slice, split, pad, gather, fill): every op x dtype
// against plain index-loop references on random inputs, on both host policies; shape inference
// at compile time; every attribute, shape and index error.
#include "support.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <span>
#include <vector>

namespace tf = typeflow;
using tf::dyn;
using tf::test::as_doubles;
using tf::test::require_error;
using tf::test::strides_of;

namespace {

using index_vector = std::vector<std::int64_t>;

// The row-major multi-index of flat position `flat` in shape `s`, and back.
index_vector unravel(std::int64_t flat, const tf::shape& s) {
  index_vector idx(s.rank());
  for (std::size_t i = s.rank(); i-- > 0;) {
    idx[i] = flat % s[i];
    flat /= s[i];
  }
  return idx;
}
std::int64_t ravel(const index_vector& idx, const tf::shape& s) {
  const auto st = strides_of(s);
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) flat += idx[i] * st[i];
  return flat;
}

// Random values of T that every dtype represents exactly; different seeds give different tensors.
template <class T>
tf::tensor random_values(const tf::shape& s, std::uint64_t seed) {
  if constexpr (std::is_same_v<T, std::uint8_t>) return tf::test::random_tensor<T>(s, seed, 0, 255);
  else if constexpr (std::is_same_v<T, std::int8_t>) return tf::test::random_tensor<T>(s, seed, -128, 127);
  else if constexpr (std::is_integral_v<T>) return tf::test::random_tensor<T>(s, seed, -100000, 100000);
  else return tf::test::random_tensor<T>(s, seed, -100, 100);
}

// Runs `op` through the registry's kernel for T and requires the exact expected elements.
template <class T, class Device, class Op>
void check_op(Device& device, const Op& op, const std::vector<tf::tensor>& inputs, const tf::shape& expected_shape,
              const std::vector<double>& expected) {
  auto y = tf::test::call<T>(device, op, std::span<const tf::tensor>(inputs));
  INFO("status: " << y.status().to_string());
  REQUIRE(y.ok());
  tf::test::require_close<T>(*y, expected_shape, expected, 0.0);  // data movement: exact
}

// --- reshape and identity ------------------------------------------------------------------

struct reshape_case { tf::shape x, to, out; };
const std::vector<reshape_case> reshape_cases = {
      {{2, 3, 4}, {4, dyn}, {4, 6}},         {{6}, {dyn}, {6}},          {{2, 3, 4}, {dyn, 2, 3}, {4, 2, 3}},
      {{3, 0, 2}, {0, 5}, {0, 5}},           {{3, 0, 2}, {dyn, 2}, {0, 2}}, {{}, {1, 1}, {1, 1}},
      {{1}, {}, {}},                         {{7}, {7, 1, 1}, {7, 1, 1}}, {{5, 17, 33}, {dyn, 11}, {255, 11}},
      {{5, 17, 33}, {33, 17, 5}, {33, 17, 5}}};

template <class T, class Device>
void check_reshape(Device& device, const std::vector<reshape_case>& cases = reshape_cases) {
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    INFO("reshape " << c.x.to_string() << " to " << c.to.to_string());
    const auto x = random_values<T>(c.x, seed++);
    check_op<T>(device, tf::ops::reshape{.to = c.to}, {x}, c.out, as_doubles<T>(x));
  }
}

template <class T, class Device>
void check_identity(Device& device) {
  std::uint64_t seed = 11;
  for (const tf::shape& s : {tf::shape{}, tf::shape{0}, tf::shape{1}, tf::shape{7}, tf::shape{5, 17, 33}}) {
    INFO("identity " << s.to_string());
    const auto x = random_values<T>(s, seed++);
    check_op<T>(device, tf::ops::identity{}, {x}, s, as_doubles<T>(x));
  }
}

// --- transpose ---------------------------------------------------------------------------

// y[i] = x[j] where j[perm[k]] = i[k].
std::vector<double> reference_transpose(const std::vector<double>& x, const tf::shape& xs, const index_vector& perm,
                                        tf::shape& out) {
  out = tf::shape{};
  for (auto p : perm) out.push_back(xs[static_cast<std::size_t>(p)]);
  std::vector<double> y;
  for (std::int64_t f = 0; f < out.num_elements(); ++f) {
    const auto i = unravel(f, out);
    index_vector j(xs.rank());
    for (std::size_t k = 0; k < perm.size(); ++k) j[static_cast<std::size_t>(perm[k])] = i[k];
    y.push_back(x[static_cast<std::size_t>(ravel(j, xs))]);
  }
  return y;
}

struct transpose_case { tf::shape x; tf::int_list perm; };
// Rank 2, 3, 4 (incl. identity perms, size-1 and size-0 dims, runs that collapse), a
// rank-8 reversal that nothing collapses, and a block larger than one Eigen tile.
const std::vector<transpose_case> transpose_cases = {
      {{3, 5}, {}},           {{3, 5}, {1, 0}},          {{3, 5}, {0, 1}},          {{1, 5}, {1, 0}},
      {{2, 3, 4}, {2, 0, 1}}, {{2, 3, 4}, {0, 2, 1}},    {{2, 3, 4}, {1, 0, 2}},    {{2, 3, 4}, {0, 1, 2}},
      {{2, 3, 4}, {}},        {{3, 0, 2}, {2, 1, 0}},    {{3, 1, 4}, {1, 0, 2}},    {{2, 1, 3, 5}, {3, 1, 0, 2}},
      {{2, 3, 4, 5}, {0, 2, 1, 3}}, {{2, 3, 4, 5}, {3, 2, 1, 0}}, {{4, 0, 3, 2}, {1, 3, 0, 2}},
      {{2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}}, {{2, 3, 2, 3, 2, 3, 2, 3}, {}}, {{64, 33, 17}, {2, 0, 1}},
      {{}, {}}, {{7}, {0}}};

template <class T, class Device>
void check_transpose(Device& device, const std::vector<transpose_case>& cases = transpose_cases) {
  std::uint64_t seed = 21;
  for (const auto& c : cases) {
    INFO("transpose " << c.x.to_string() << " perm " << c.perm.to_string());
    const auto x = random_values<T>(c.x, seed++);
    index_vector perm(c.perm.begin(), c.perm.end());
    if (perm.empty())
      for (std::size_t i = c.x.rank(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
    tf::shape out;
    const auto expected = reference_transpose(as_doubles<T>(x), c.x, perm, out);
    check_op<T>(device, tf::ops::transpose{.perm = c.perm}, {x}, out, expected);
  }
}

// --- concat ------------------------------------------------------------------------------

std::vector<double> reference_concat(const std::vector<tf::tensor>& xs, const std::vector<std::vector<double>>& values,
                                     std::size_t axis, tf::shape& out) {
  out = xs[0].shape();
  out[axis] = 0;
  for (const auto& x : xs) out[axis] += x.dim(axis);
  std::vector<double> y;
  for (std::int64_t f = 0; f < out.num_elements(); ++f) {
    auto i = unravel(f, out);
    std::size_t k = 0;
    while (i[axis] >= xs[k].dim(axis)) i[axis] -= xs[k++].dim(axis);
    y.push_back(values[k][static_cast<std::size_t>(ravel(i, xs[k].shape()))]);
  }
  return y;
}

struct concat_case { std::vector<tf::shape> xs; std::int64_t axis; };
const std::vector<concat_case> concat_cases = {
      {{{2, 3}, {0, 3}, {4, 3}}, 0},          {{{2, 3}, {2, 0}, {2, 5}}, 1},
      {{{2, 3, 1}, {2, 3, 4}, {2, 3, 0}}, -1}, {{{2, 3, 1}, {2, 1, 1}, {2, 2, 1}}, 1},
      {{{7}}, 0},                              {{{3}, {0}, {5}}, -1},
      {{{0, 4}, {0, 2}}, 1},                   {{{40, 100}, {40, 7}, {40, 93}}, 1},
      {{{100, 30}, {77, 30}, {3, 30}}, 0},     {{{3, 4, 5}, {3, 4, 5}, {3, 4, 5}}, -2}};

template <class T, class Device>
void check_concat(Device& device, const std::vector<concat_case>& cases = concat_cases) {
  std::uint64_t seed = 41;
  for (const auto& c : cases) {
    INFO("concat axis " << c.axis << " of " << c.xs.size() << " inputs, the first " << c.xs[0].to_string());
    std::vector<tf::tensor> xs;
    std::vector<std::vector<double>> values;
    for (const auto& s : c.xs) {
      xs.push_back(random_values<T>(s, seed++));
      values.push_back(as_doubles<T>(xs.back()));
    }
    const std::size_t axis = *tf::normalize_axis(c.axis, c.xs[0].rank());
    tf::shape out;
    const auto expected = reference_concat(xs, values, axis, out);
    check_op<T>(device, tf::ops::concat{.axis = c.axis}, xs, out, expected);
  }
}

// --- slice -------------------------------------------------------------------------------

struct slice_case {
  tf::shape x;
  tf::int_list begin, size, strides = {};
  bool clamp = false;
};
// Unit strides (whole dimensions merged, a contiguous copy, rank 0, 5 and 6); strides of 2 and 3,
// reversals, negative strides that stop before 0, a stride larger than the dimension; clamped
// bounds: begins from the end, past either end, sizes past the end.
const std::vector<slice_case> slice_cases = {
      {{5, 6, 7}, {1, 0, 2}, {3, -1, 4}},  {{5, 6, 7}, {0, 0, 0}, {-1, -1, -1}}, {{5, 6, 7}, {2, 1, 0}, {0, 3, 7}},
      {{5, 6, 7}, {5, 0, 0}, {-1, -1, -1}}, {{5, 6, 7}, {1, 0, 0}, {2, -1, -1}}, {{5, 6, 7}, {4, 5, 6}, {1, 1, 1}},
      {{9}, {3}, {4}},                     {{9}, {9}, {-1}},                     {{}, {}, {}},
      {{2, 3, 2, 3, 2}, {1, 1, 0, 2, 1}, {1, 2, -1, 1, 1}}, {{2, 3, 4, 3, 2, 3}, {1, 0, 1, 0, 1, 0}, {1, 2, 2, 2, 1, 2}},
      {{64, 50, 20}, {3, 5, 1}, {50, 40, -1}},
      {{5, 6, 7}, {4, 0, 6}, {-1, 3, -1}, {-1, 2, -2}},   {{9}, {8}, {-1}, {-3}},  {{9}, {0}, {-1}, {4}},
      {{9}, {2}, {1}, {20}},                              {{9}, {9}, {-1}, {2}},   {{5, 6}, {4, 5}, {0, 2}, {-1, -1}},
      {{2, 3, 4, 3, 2, 3}, {1, 2, 0, 0, 1, 2}, {-1, 2, 2, 3, 1, -1}, {-1, -2, 3, 1, 1, -1}},
      {{64, 50, 20}, {63, 0, 1}, {-1, -1, -1}, {-2, 3, 1}},
      {{5, 6}, {-2, 10}, {-1, 3}, {1, 1}, true},          {{5, 6}, {-100, 7}, {3, -1}, {1, -1}, true},
      {{5, 6}, {-1, -8}, {10, 2}, {-2, -1}, true},        {{5, 6}, {2, -3}, {100, -1}, {}, true},
      {{0, 4}, {3, -1}, {-1, 2}, {-1, 1}, true},          {{5, 6}, {1, 2}, {2, 3}, {2, 1}, true},
      {{2, 16}, {0, 0}, {1, 8}, {std::int64_t{1} << 59, 2}}, {{0}, {0}, {-1}, {-1}}, {{0, 3}, {0, 2}, {0, 2}, {-1, -1}}};

// Axis i of case c as positions, found by walking: from begin (for clamp: counted from the end
// when negative, then moved into the dimension as ONNX's Slice does) in steps of the stride while
// inside the dimension and below size.
index_vector slice_positions(const slice_case& c, std::size_t i) {
  const std::int64_t d = c.x[i], s = c.strides.empty() ? 1 : c.strides[i];
  std::int64_t p = c.begin[i];
  if (c.clamp) {
    if (p < 0) p += d;
    if (s > 0) p = std::min(std::max<std::int64_t>(p, 0), d);
    else p = std::min(std::max<std::int64_t>(p, 0), d - 1);
  }
  index_vector at;
  for (; p >= 0 && p < d && (c.size[i] == -1 || static_cast<std::int64_t>(at.size()) < c.size[i]); p += s)
    at.push_back(p);
  return at;
}

template <class T, class Device>
void check_slice(Device& device, const std::vector<slice_case>& cases = slice_cases) {
  std::uint64_t seed = 61;
  for (const auto& c : cases) {
    INFO("slice " << c.x.to_string() << " begin " << c.begin.to_string() << " size " << c.size.to_string()
                  << " strides " << c.strides.to_string() << (c.clamp ? " clamp" : ""));
    const auto x = random_values<T>(c.x, seed++);
    const auto values = as_doubles<T>(x);
    tf::shape out;
    std::vector<index_vector> positions;
    for (std::size_t i = 0; i < c.x.rank(); ++i) {
      positions.push_back(slice_positions(c, i));
      out.push_back(static_cast<std::int64_t>(positions.back().size()));
    }
    std::vector<double> expected;
    for (std::int64_t f = 0; f < out.num_elements(); ++f) {
      auto i = unravel(f, out);
      for (std::size_t k = 0; k < i.size(); ++k) i[k] = positions[k][static_cast<std::size_t>(i[k])];
      expected.push_back(values[static_cast<std::size_t>(ravel(i, c.x))]);
    }
    check_op<T>(device, tf::ops::slice{.begin = c.begin, .size = c.size, .strides = c.strides, .clamp = c.clamp}, {x},
                out, expected);
  }
}

// --- pad ---------------------------------------------------------------------------------

struct pad_case { tf::shape x; tf::int_list paddings; };
const std::vector<pad_case> pad_cases = {
      {{3, 4}, {1, 2, 0, 3}},     {{3, 4}, {0, 0, 0, 0}},          {{2, 0, 3}, {1, 1, 2, 0, 0, 1}},
      {{5, 6, 7}, {0, 0, 2, 1, 0, 0}}, {{0}, {0, 0}},              {{}, {}},
      {{7}, {3, 0}},              {{2, 3, 1, 2}, {0, 1, 0, 0, 1, 1, 0, 0}}, {{2, 1, 3, 2, 2}, {1, 0, 0, 1, 1, 1, 0, 2, 1, 0}},
      {{40, 50, 20}, {1, 1, 0, 0, 3, 2}}};

template <class T, class Device>
void check_pad(Device& device, const std::vector<pad_case>& cases = pad_cases) {
  // A value that every dtype represents exactly; bool pads with true.
  const double value = std::is_same_v<T, bool> ? 1 : 7;
  std::uint64_t seed = 81;
  for (const auto& c : cases) {
    INFO("pad " << c.x.to_string() << " paddings " << c.paddings.to_string());
    const auto x = random_values<T>(c.x, seed++);
    const auto values = as_doubles<T>(x);
    tf::shape out;
    for (std::size_t i = 0; i < c.x.rank(); ++i) out.push_back(c.x[i] + c.paddings[2 * i] + c.paddings[2 * i + 1]);
    std::vector<double> expected;
    for (std::int64_t f = 0; f < out.num_elements(); ++f) {
      auto i = unravel(f, out);
      bool inside = true;
      for (std::size_t k = 0; k < i.size(); ++k) {
        i[k] -= c.paddings[2 * k];
        inside = inside && i[k] >= 0 && i[k] < c.x[k];
      }
      expected.push_back(inside ? values[static_cast<std::size_t>(ravel(i, c.x))] : value);
    }
    check_op<T>(device, tf::ops::pad{.paddings = c.paddings, .value = value}, {x}, out, expected);
  }
}

// The padded values of x (shape s) in mode `mode`, one axis at a time: each axis's border is built
// from reversed or repeated slices of the input along that axis, as NumPy's pad describes the modes.
std::vector<double> reference_pad_mode(std::vector<double> v, tf::shape s, const tf::int_list& paddings, tf::ops::pad_mode mode) {
  for (std::size_t k = 0; k < s.rank(); ++k) {
    const std::int64_t d = s[k], before = paddings[2 * k], after = paddings[2 * k + 1];
    const std::int64_t outer = s.product(0, k), inner = s.product(k + 1, s.rank());
    std::vector<double> next;
    for (std::int64_t o = 0; o < outer; ++o) {
      auto line = [&](std::int64_t i) {  // the input's slice at index i of axis k
        return std::vector<double>(v.begin() + (o * d + i) * inner, v.begin() + (o * d + i + 1) * inner);
      };
      std::vector<std::vector<double>> lines;
      for (std::int64_t i = 0; i < d; ++i) lines.push_back(line(i));
      std::vector<std::vector<double>> front, back;
      for (std::int64_t j = 1; j <= before; ++j)  // the j-th line before the input, nearest first
        front.insert(front.begin(), mode == tf::ops::pad_mode::reflect   ? lines[static_cast<std::size_t>(j)]
                                    : mode == tf::ops::pad_mode::symmetric ? lines[static_cast<std::size_t>(j - 1)]
                                                                           : lines.front());
      for (std::int64_t j = 1; j <= after; ++j)
        back.push_back(mode == tf::ops::pad_mode::reflect   ? lines[static_cast<std::size_t>(d - 1 - j)]
                       : mode == tf::ops::pad_mode::symmetric ? lines[static_cast<std::size_t>(d - j)]
                                                              : lines.back());
      for (const auto* part : {&front, &lines, &back})
        for (const auto& l : *part) next.insert(next.end(), l.begin(), l.end());
    }
    v = std::move(next);
    s[k] = d + before + after;
  }
  return v;
}

template <class T, class Device>
void check_pad_modes(Device& device) {
  struct mode_case { tf::shape x; tf::int_list paddings; };
  const std::vector<mode_case> cases = {
      {{3}, {2, 2}},  {{4, 5}, {1, 3, 0, 2}},  {{1, 1}, {0, 0, 0, 0}},  {{3, 2, 4}, {2, 0, 1, 1, 3, 2}},
      {{2, 3, 2, 2}, {1, 1, 0, 2, 1, 0, 0, 1}}, {{}, {}}, {{33, 70}, {5, 7, 11, 3}}};
  std::uint64_t seed = 181;
  for (const auto mode : {tf::ops::pad_mode::reflect, tf::ops::pad_mode::symmetric, tf::ops::pad_mode::edge}) {
    for (const auto& c : cases) {
      INFO("pad " << tf::ops::name_of(mode) << " " << c.x.to_string() << " paddings " << c.paddings.to_string());
      bool fits = true;  // reflect needs a dimension larger than the padding
      for (std::size_t k = 0; k < c.x.rank(); ++k)
        fits = fits && (mode != tf::ops::pad_mode::reflect || std::max(c.paddings[2 * k], c.paddings[2 * k + 1]) < c.x[k]);
      if (!fits) continue;
      const auto x = random_values<T>(c.x, seed++);
      tf::shape out;
      for (std::size_t i = 0; i < c.x.rank(); ++i) out.push_back(c.x[i] + c.paddings[2 * i] + c.paddings[2 * i + 1]);
      check_op<T>(device, tf::ops::pad{.paddings = c.paddings, .mode = mode}, {x}, out,
                  reference_pad_mode(as_doubles<T>(x), c.x, c.paddings, mode));
    }
  }
}

// --- gather ------------------------------------------------------------------------------

struct gather_case { tf::shape params; std::int64_t axis; tf::shape indices; };
const std::vector<gather_case> gather_cases = {
      {{5, 4, 3}, 0, {6}},   {{5, 4, 3}, 1, {2, 3}}, {{5, 4, 3}, -1, {}},   {{5, 4, 3}, 2, {4, 1, 2}},
      {{5, 4, 3}, 0, {0}},   {{3, 0}, 0, {2}},       {{7}, 0, {3, 3}},      {{1}, 0, {5}},
      {{100, 40}, 0, {500}}, {{8, 300, 2}, 1, {40, 10}}};

template <class T, class Index, class Device>
void check_gather_with(Device& device, const std::vector<gather_case>& cases) {
  std::uint64_t seed = 101;
  for (const auto& c : cases) {
    INFO("gather " << c.params.to_string() << " axis " << c.axis << " indices " << c.indices.to_string() << " of "
                   << tf::name_of(tf::dtype_of<Index>));
    const auto params = random_values<T>(c.params, seed++);
    const auto values = as_doubles<T>(params);
    const std::size_t axis = *tf::normalize_axis(c.axis, c.params.rank());
    const std::int64_t n = c.params[axis];
    // Random indices in [0, n): repeats are certain when there are more indices than n.
    const tf::tensor indices = tf::test::random_tensor<Index>(c.indices, seed++, 0, static_cast<double>(n - 1));
    const auto index = indices.unchecked_values<Index>();
    tf::shape out;
    for (std::size_t i = 0; i < axis; ++i) out.push_back(c.params[i]);
    for (auto d : c.indices) out.push_back(d);
    for (std::size_t i = axis + 1; i < c.params.rank(); ++i) out.push_back(c.params[i]);
    std::vector<double> expected;
    for (std::int64_t f = 0; f < out.num_elements(); ++f) {
      const auto o = unravel(f, out);
      index_vector p(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(axis));
      index_vector at(o.begin() + static_cast<std::ptrdiff_t>(axis),
                      o.begin() + static_cast<std::ptrdiff_t>(axis + c.indices.rank()));
      p.push_back(index[static_cast<std::size_t>(ravel(at, c.indices))]);
      p.insert(p.end(), o.begin() + static_cast<std::ptrdiff_t>(axis + c.indices.rank()), o.end());
      expected.push_back(values[static_cast<std::size_t>(ravel(p, c.params))]);
    }
    check_op<T>(device, tf::ops::gather{.axis = c.axis}, {params, indices}, out, expected);
  }
}

template <class T, class Device>
void check_gather(Device& device, const std::vector<gather_case>& cases = gather_cases) {
  check_gather_with<T, std::int32_t>(device, cases);
  check_gather_with<T, std::int64_t>(device, cases);
}

// --- split -------------------------------------------------------------------------------

struct split_case { tf::shape x; std::int64_t axis; std::int64_t parts; };
const std::vector<split_case> split_cases = {
    {{6}, 0, 3},         {{6}, -1, 1},       {{4, 6}, 1, 2},       {{4, 6}, 0, 4},      {{2, 3, 4}, 1, 3},
    {{2, 3, 4}, -1, 2},  {{3, 0, 2}, 2, 2},  {{3, 4, 2, 5}, 2, 2}, {{0, 4}, 1, 2},
};

template <class T, class Device>
void check_split(Device& device, const std::vector<split_case>& cases = split_cases) {
  std::uint64_t seed = 500;
  for (const split_case& c : cases) {
    INFO("split " << c.x.to_string() << " axis " << c.axis << " into " << c.parts);
    const auto x = random_values<T>(c.x, seed++);
    const auto values = as_doubles<T>(x);
    const std::size_t axis = *tf::normalize_axis(c.axis, c.x.rank());
    tf::shape part = c.x;
    part[axis] = c.x[axis] / c.parts;
    auto y = tf::test::call<T>(device, tf::ops::split{.axis = c.axis, .num_split = c.parts}, x);
    INFO("status: " << y.status().to_string());
    REQUIRE(y.ok());
    REQUIRE(y->size() == static_cast<std::size_t>(c.parts));
    for (std::int64_t k = 0; k < c.parts; ++k) {
      std::vector<double> expected;
      for (std::int64_t f = 0; f < part.num_elements(); ++f) {
        auto at = unravel(f, part);
        at[axis] += k * part[axis];
        expected.push_back(values[static_cast<std::size_t>(ravel(at, c.x))]);
      }
      tf::test::require_close<T>((*y)[static_cast<std::size_t>(k)], part, expected, 0.0);
    }
  }
}

// --- fill --------------------------------------------------------------------------------

const std::vector<tf::shape> fill_shapes = {tf::shape{}, tf::shape{0}, tf::shape{3}, tf::shape{2, 0, 4},
                                           tf::shape{2, 3, 4}, tf::shape{50, 100}};

template <class T, class Device>
void check_fill(Device& device, const std::vector<tf::shape>& shapes = fill_shapes) {
  const double value = std::is_same_v<T, bool> ? 1 : std::is_integral_v<T> ? -3 : 2.5;
  for (const tf::shape& s : shapes) {
    INFO("fill " << s.to_string());
    for (double v : {value, 0.0}) {
      auto y = tf::test::call<T>(device, tf::ops::fill{.dims = s, .value = v, .type = tf::dtype_of<T>});
      INFO("status: " << y.status().to_string());
      REQUIRE(y.ok());
      tf::test::require_close<T>(*y, s, std::vector<double>(static_cast<std::size_t>(s.num_elements()), v), 0.0);
    }
  }
}

template <class T, class Device>
void check_array_ops(Device& device) {
  check_reshape<T>(device);
  check_identity<T>(device);
  check_transpose<T>(device);
  check_concat<T>(device);
  check_slice<T>(device);
  check_pad<T>(device);
  check_pad_modes<T>(device);
  check_gather<T>(device);
  check_split<T>(device);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("array ops match their references", "[array]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  SECTION("f32") { check_array_ops<float>(device); check_fill<float>(device); }
  SECTION("f64") { check_array_ops<double>(device); check_fill<double>(device); }
  SECTION("i32") { check_array_ops<std::int32_t>(device); check_fill<std::int32_t>(device); }
  SECTION("i64") { check_array_ops<std::int64_t>(device); check_fill<std::int64_t>(device); }
  SECTION("u8") { check_array_ops<std::uint8_t>(device); }
  SECTION("bool") { check_array_ops<bool>(device); check_fill<bool>(device); }
  SECTION("f16") { check_array_ops<Eigen::half>(device); }
  SECTION("bf16") { check_array_ops<Eigen::bfloat16>(device); }
}

// Sizes whose work is worth several threads by the cost models (Eigen's parallelFor hands out
// blocks above ~100k cycles): the thread_pool runs split the copies, the Eigen expressions and
// the per-row loops, including block edges in the middle of rows.
TEMPLATE_LIST_TEST_CASE("array ops on tensors large enough to split over threads", "[array][large]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  const std::vector<reshape_case> reshapes = {{{300, 1001}, {dyn, 77}, {3900, 77}}};
  const std::vector<transpose_case> transposes = {{{128, 65, 33}, {2, 0, 1}}, {{40, 30, 20, 9}, {3, 1, 2, 0}}};
  const std::vector<concat_case> concats = {{{{200, 300}, {200, 7}, {200, 501}}, 1},
                                            {{{300, 1000}, {1, 1000}, {500, 1000}}, 0}};
  const std::vector<slice_case> slices = {{{300, 70, 20}, {7, 3, 1}, {290, 60, 17}},
                                          {{3000, 200}, {5, 0}, {2900, -1}},
                                          {{3000, 200}, {2999, 1}, {-1, 50}, {-2, 3}}};
  const std::vector<pad_case> pads = {{{200, 100, 9}, {1, 2, 0, 0, 3, 1}}, {{500, 501}, {0, 0, 7, 5}}};
  const std::vector<gather_case> gathers = {{{1000, 300}, 0, {900}}, {{30, 1000, 3}, 1, {2000}}};
  const std::vector<tf::shape> fills = {{1000, 513}};
  const std::vector<split_case> splits = {{{2000, 300}, 1, 3}, {{3000, 200}, 0, 2}};
  SECTION("f32") {
    check_split<float>(device, splits);
    check_reshape<float>(device, reshapes);
    check_transpose<float>(device, transposes);
    check_concat<float>(device, concats);
    check_slice<float>(device, slices);
    check_pad<float>(device, pads);
    check_gather<float>(device, gathers);
    check_fill<float>(device, fills);
  }
  SECTION("bool") {
    check_transpose<bool>(device, transposes);
    check_slice<bool>(device, slices);
    check_pad<bool>(device, pads);
    check_gather<bool>(device, gathers);
  }
}

TEST_CASE("array shape inference at compile time", "[array][static]") {
  using tf::spec;
  using tf::static_shape;
  using tf::tensor_spec;
  using tf::dtype;
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::reshape{.to = {4, dyn}}, spec<float, static_shape<2, 3, 4>>> ==
                 tensor_spec{dtype::f32, tf::shape{4, 6}});
  // An unknown input dimension leaves the -1 unknown; a known zero makes the count known.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::reshape{.to = {dyn, 2}}, spec<float, static_shape<dyn, 4>>> ==
                 tensor_spec{dtype::f32, tf::shape{dyn, 2}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::reshape{.to = {dyn, 2}}, spec<bool, static_shape<dyn, 0>>> ==
                 tensor_spec{dtype::boolean, tf::shape{0, 2}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::identity{}, spec<std::int64_t, static_shape<dyn, 3>>> ==
                 tensor_spec{dtype::i64, tf::shape{dyn, 3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::transpose{}, spec<float, static_shape<2, dyn, 4>>> ==
                 tensor_spec{dtype::f32, tf::shape{4, dyn, 2}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::transpose{.perm = {0, 2, 1}}, spec<double, static_shape<2, 3, 4>>> ==
                 tensor_spec{dtype::f64, tf::shape{2, 4, 3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::concat{.axis = -1}, spec<float, static_shape<2, 3>>,
                                    spec<float, static_shape<dyn, 4>>, spec<float, static_shape<2, 0>>> ==
                 tensor_spec{dtype::f32, tf::shape{2, 7}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::concat{}, spec<float, static_shape<2, 3>>,
                                    spec<float, static_shape<dyn, 3>>> ==
                 tensor_spec{dtype::f32, tf::shape{dyn, 3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::slice{.begin = {1, 0, 2}, .size = {2, -1, -1}},
                                    spec<std::int32_t, static_shape<4, dyn, 5>>> ==
                 tensor_spec{dtype::i32, tf::shape{2, dyn, 3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::pad{.paddings = {1, 2, 0, 0, 3, 0}, .value = 1.5},
                                    spec<float, static_shape<2, dyn, 4>>> ==
                 tensor_spec{dtype::f32, tf::shape{5, dyn, 7}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::gather{.axis = 1}, spec<float, static_shape<5, 4, 3>>,
                                    spec<std::int64_t, static_shape<dyn, 2>>> ==
                 tensor_spec{dtype::f32, tf::shape{5, dyn, 2, 3}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::gather{}, spec<std::uint8_t, static_shape<5, 4>>,
                                    spec<std::int32_t, static_shape<>>> ==
                 tensor_spec{dtype::u8, tf::shape{4}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::fill{.dims = {2, 3}, .value = 1, .type = dtype::i64}> ==
                 tensor_spec{dtype::i64, tf::shape{2, 3}});
  // Errors are found at compile time too.
  constexpr auto f23 = std::array{tensor_spec{dtype::f32, tf::shape{2, 3}}};
  STATIC_REQUIRE(!tf::infer(tf::ops::reshape{.to = {dyn, dyn}}, f23).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::reshape{.to = {4, 2}}, f23).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::transpose{.perm = {0, 0}}, f23).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::slice{.begin = {0, 2}, .size = {1, 2}}, f23).ok());
  // Strides count elements; clamp resolves against known dimensions and leaves unknown ones dyn.
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::slice{.begin = {4, 0, 1}, .size = {-1, -1, 2}, .strides = {-2, 3, 4}},
                                    spec<float, tf::static_shape<5, 7, dyn>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{3, 3, 2}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::slice{.begin = {-2, 1}, .size = {9, 0}, .clamp = true},
                                    spec<float, tf::static_shape<5, dyn>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{2, 0}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::slice{.begin = {1}, .size = {3}, .clamp = true}, spec<float, tf::static_shape<dyn>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{dyn}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::squeeze{.axes = {0, -1}}, spec<float, tf::static_shape<dyn, 4, 1>>> ==
                 tf::tensor_spec{tf::dtype::f32, tf::shape{4}});
  STATIC_REQUIRE(tf::static_infer_v<tf::ops::expand_dims{.axis = 1}, spec<bool, tf::static_shape<dyn, 4>>> ==
                 tf::tensor_spec{tf::dtype::boolean, tf::shape{dyn, 1, 4}});
  STATIC_REQUIRE(!tf::infer(tf::ops::squeeze{}, std::array{tf::tensor_spec{tf::dtype::f32, tf::shape{dyn, 1}}}).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::pad{.paddings = {0, 0, -1, 0}}, f23).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::pad{.paddings = {0, 0, 0, 0}, .value = 300},
                            std::array{tensor_spec{dtype::u8, tf::shape{2, 3}}}).ok());
  STATIC_REQUIRE(!tf::infer(tf::ops::fill{.dims = {dyn}}, std::span<const tensor_spec>()).ok());
  // fill takes no inputs: its kernel is picked by the output dtype.
  STATIC_REQUIRE(tf::kernel_dtype<tf::ops::fill>(std::span<const tensor_spec>(), tensor_spec{dtype::i32, {}}) ==
                 dtype::i32);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::gather, tf::thread_pool, bool>);
  STATIC_REQUIRE(tf::default_registry::has_kernel<tf::ops::transpose, tf::cpu, Eigen::bfloat16>);
}

TEST_CASE("reshape and identity report bad attributes and inputs", "[array][errors]") {
  tf::cpu device;
  const auto x = random_values<float>(tf::shape{2, 3}, 1);
  const auto run = [&](const tf::ops::reshape& op) { return tf::test::call<float>(device, op, x); };
  require_error(run({.to = {dyn, dyn}}), tf::status_code::invalid_argument,
                "reshape: target shape [?, ?] has more than one -1 dimension (0 and 1)");
  require_error(run({.to = {3, -2}}), tf::status_code::invalid_argument,
                "reshape: target shape [3, -2] has negative dimension -2 at index 1");
  require_error(run({.to = {4, 2}}), tf::status_code::invalid_argument,
                "reshape: cannot reshape input of shape [2, 3] (6 elements) to [4, 2] (8 elements)");
  require_error(run({.to = {dyn, 4}}), tf::status_code::invalid_argument,
                "reshape: cannot reshape input of shape [2, 3] (6 elements) to [?, 4]: 6 is not a multiple of 4");
  require_error(run({.to = {0, dyn}}), tf::status_code::invalid_argument,
                "reshape: cannot infer the -1 dimension of target shape [0, ?] for input of shape [2, 3]");
  const auto empty = random_values<float>(tf::shape{2, 0}, 1);
  require_error(tf::test::call<float>(device, tf::ops::reshape{.to = {dyn, 0}}, empty), tf::status_code::invalid_argument,
                "the other dimensions have 0 elements, so any size would fit");
  // The kernel dtype must be the input's; arity is checked.
  require_error(tf::test::call<double>(device, tf::ops::reshape{.to = {6}}, x), tf::status_code::invalid_argument,
                "reshape: called with the kernel for f64 but input 0 has dtype f32");
  require_error(tf::test::call<float>(device, tf::ops::identity{}, x, x), tf::status_code::invalid_argument,
                "identity: expects 1 input, got 2");
  require_error(tf::test::call<float>(device, tf::ops::identity{}, tf::tensor{}), tf::status_code::invalid_argument,
                "identity: input 0 is an empty tensor");
}

TEST_CASE("transpose reports bad permutations", "[array][errors]") {
  tf::cpu device;
  const auto x = random_values<float>(tf::shape{2, 3}, 1);
  const auto run = [&](const tf::ops::transpose& op) { return tf::test::call<float>(device, op, x); };
  require_error(run({.perm = {1, 0, 2}}), tf::status_code::invalid_argument,
                "transpose: perm (1, 0, 2) has 3 entries but the input has rank 2 (shape [2, 3])");
  require_error(run({.perm = {0, -1}}), tf::status_code::invalid_argument,
                "transpose: perm (0, -1) entry -1 at position 1 is out of range [0, 2) for rank 2");
  require_error(run({.perm = {2, 0}}), tf::status_code::invalid_argument,
                "transpose: perm (2, 0) entry 2 at position 0 is out of range [0, 2) for rank 2");
  require_error(run({.perm = {1, 1}}), tf::status_code::invalid_argument,
                "transpose: perm (1, 1) is not a permutation of 0..1 for rank 2: 1 appears twice");
}

TEST_CASE("concat reports bad axes, dtypes and shapes", "[array][errors]") {
  tf::cpu device;
  const auto a = random_values<float>(tf::shape{2, 3}, 1);
  const auto b = random_values<float>(tf::shape{2, 4}, 2);
  const auto c = random_values<float>(tf::shape{2, 3, 1}, 3);
  const auto run = [&](std::int64_t axis, std::vector<tf::tensor> xs) {
    return tf::test::call<float>(device, tf::ops::concat{.axis = axis}, std::span<const tf::tensor>(xs));
  };
  require_error(run(0, {}), tf::status_code::invalid_argument, "concat: expects at least 1 input, got 0");
  require_error(run(0, {a, a, b}), tf::status_code::invalid_argument,
                "concat: input 2 has shape [2, 4] and input 0 has shape [2, 3]: dimension 1 is 4 vs 3, but only "
                "the axis (0) may differ");
  require_error(run(1, {a, c}), tf::status_code::invalid_argument,
                "concat: input 1 has rank 3 (shape [2, 3, 1]) but input 0 has rank 2 (shape [2, 3])");
  require_error(run(2, {a, a}), tf::status_code::invalid_argument, "concat: axis 2 is out of range for rank 2");
  require_error(run(-3, {a, a}), tf::status_code::invalid_argument, "concat: axis -3 is out of range for rank 2");
  require_error(run(0, {random_values<float>(tf::shape{}, 1)}), tf::status_code::invalid_argument,
                "concat: inputs must have rank >= 1, input 0 is a scalar");
  const auto i = random_values<std::int32_t>(tf::shape{2, 3}, 1);
  require_error(tf::test::call<float>(device, tf::ops::concat{}, a, i), tf::status_code::invalid_argument,
                "concat: all inputs must have one dtype, input 0 is f32 and input 1 is i32");
}

TEST_CASE("slice reports bad begins and sizes", "[array][errors]") {
  tf::cpu device;
  const auto x = random_values<float>(tf::shape{5, 6}, 1);
  const auto run = [&](const tf::ops::slice& op) { return tf::test::call<float>(device, op, x); };
  require_error(run({.begin = {0}, .size = {1, 1}}), tf::status_code::invalid_argument,
                "slice: begin (0) and size (1, 1) must have one entry per input dimension; the input has shape [5, 6]");
  require_error(run({.begin = {0, -1}, .size = {1, 1}}), tf::status_code::invalid_argument,
                "slice: axis 1: begin -1 is negative");
  require_error(run({.begin = {6, 0}, .size = {0, 1}}), tf::status_code::invalid_argument,
                "slice: axis 0: begin 6 is out of range [0, 5] for input shape [5, 6]");
  require_error(run({.begin = {0, 2}, .size = {1, 5}}), tf::status_code::invalid_argument,
                "slice: axis 1: begin 2 + size 5 exceeds dimension 6 of input shape [5, 6]");
  require_error(run({.begin = {0, 0}, .size = {-2, 1}}), tf::status_code::invalid_argument,
                "slice: axis 0: size -2 is negative (only -1, meaning to the end, is allowed)");
  require_error(run({.begin = {0, 0}, .size = {1, 1}, .strides = {1, 0}}), tf::status_code::invalid_argument,
                "slice: axis 1: stride is 0");
  require_error(run({.begin = {0, 0}, .size = {1, 1}, .strides = {1}}), tf::status_code::invalid_argument,
                "slice: strides (1) must be empty or have one entry per input dimension; the input has shape [5, 6]");
  require_error(run({.begin = {0, 0}, .size = {4, 1}, .strides = {2, 1}}), tf::status_code::invalid_argument,
                "slice: axis 0: 4 elements from 0 in steps of 2 leave dimension 5 of input shape [5, 6] (3 fit)");
  require_error(run({.begin = {5, 0}, .size = {1, 1}, .strides = {-1, 1}}), tf::status_code::invalid_argument,
                "slice: axis 0: begin 5 is out of range [0, 4] for input shape [5, 6]");
  require_error(run({.begin = {2, 0}, .size = {4, 1}, .strides = {-1, 1}}), tf::status_code::invalid_argument,
                "slice: axis 0: 4 elements from 2 in steps of -1 leave dimension 5 of input shape [5, 6] (3 fit)");
  // clamp moves bounds into the dimension instead, but a zero stride or bad size is still wrong.
  REQUIRE(run({.begin = {-9, 4}, .size = {9, 9}, .clamp = true}).ok());
  require_error(run({.begin = {0, 0}, .size = {1, 1}, .strides = {0, 1}, .clamp = true}),
                tf::status_code::invalid_argument, "slice: axis 0: stride is 0");
  require_error(run({.begin = {0, 0}, .size = {-3, 1}, .clamp = true}), tf::status_code::invalid_argument,
                "slice: axis 0: size -3 is negative");
}

TEST_CASE("squeeze and expand_dims", "[array]") {
  tf::cpu device;
  const auto x = random_values<float>(tf::shape{1, 3, 1, 2}, 1);
  const auto values = as_doubles<float>(x);
  check_op<float>(device, tf::ops::squeeze{}, {x}, tf::shape{3, 2}, values);
  check_op<float>(device, tf::ops::squeeze{.axes = {-2}}, {x}, tf::shape{1, 3, 2}, values);
  check_op<float>(device, tf::ops::squeeze{.axes = {2, 0}}, {x}, tf::shape{3, 2}, values);
  check_op<float>(device, tf::ops::expand_dims{}, {x}, tf::shape{1, 1, 3, 1, 2}, values);
  check_op<float>(device, tf::ops::expand_dims{.axis = -1}, {x}, tf::shape{1, 3, 1, 2, 1}, values);
  check_op<float>(device, tf::ops::expand_dims{.axis = 2}, {x}, tf::shape{1, 3, 1, 1, 2}, values);
  const auto scalar = random_values<std::int32_t>(tf::shape{}, 2);
  check_op<std::int32_t>(device, tf::ops::expand_dims{}, {scalar}, tf::shape{1}, as_doubles<std::int32_t>(scalar));
  const auto code = tf::status_code::invalid_argument;
  require_error(tf::test::call<float>(device, tf::ops::squeeze{.axes = {1}}, x), code,
                "squeeze: axis 1 has size 3 in input shape [1, 3, 1, 2]; only dimensions of size 1 can be squeezed");
  require_error(tf::test::call<float>(device, tf::ops::squeeze{.axes = {4}}, x), code,
                "squeeze: axis 4 is out of range for input shape [1, 3, 1, 2]");
  require_error(tf::test::call<float>(device, tf::ops::squeeze{.axes = {0, -4}}, x), code,
                "squeeze: axis -4 is named twice in axes (0, -4)");
  require_error(tf::test::call<float>(device, tf::ops::expand_dims{.axis = 5}, x), code,
                "expand_dims: axis 5 is out of range [-5, 4] for input shape [1, 3, 1, 2]");
  require_error(tf::test::call<float>(device, tf::ops::expand_dims{}, random_values<float>(tf::shape{1, 1, 1, 1, 1, 1, 1, 1}, 3)),
                code, "expand_dims: input shape [1, 1, 1, 1, 1, 1, 1, 1] already has the largest rank, 8");
}

TEST_CASE("pad reports bad paddings and values", "[array][errors]") {
  tf::cpu device;
  const auto x = random_values<float>(tf::shape{2, 3}, 1);
  require_error(tf::test::call<float>(device, tf::ops::pad{.paddings = {1, 1}}, x), tf::status_code::invalid_argument,
                "pad: paddings (1, 1) has 2 entries; expected 2 per input dimension (before, after), 4 for input "
                "shape [2, 3]");
  require_error(tf::test::call<float>(device, tf::ops::pad{.paddings = {0, 0, 2, -1}}, x),
                tf::status_code::invalid_argument,
                "pad: paddings (0, 0, 2, -1) for axis 1 are (2, -1); paddings must be >= 0");
  const auto u = random_values<std::uint8_t>(tf::shape{2}, 1);
  require_error(tf::test::call<std::uint8_t>(device, tf::ops::pad{.paddings = {1, 1}, .value = -1}, u),
                tf::status_code::invalid_argument, "pad: value does not fit in dtype u8, whose range is [0, 255]");
  const auto i = random_values<std::int32_t>(tf::shape{2}, 1);
  require_error(tf::test::call<std::int32_t>(device, tf::ops::pad{.paddings = {1, 1}, .value = 3e9}, i),
                tf::status_code::invalid_argument, "pad: value does not fit in dtype i32");
  require_error(tf::test::call<std::int32_t>(device, tf::ops::pad{.paddings = {1, 1}, .value = std::nan("")}, i),
                tf::status_code::invalid_argument, "pad: value does not fit in dtype i32");
  // The modes that read the input: how far each may pad, and no value.
  const auto x3 = *tf::tensor::allocate(tf::dtype::f32, tf::shape{2, 3});
  require_error(tf::test::call<float>(device, tf::ops::pad{.paddings = {0, 0, 3, 0}, .mode = tf::ops::pad_mode::reflect}, x3),
                tf::status_code::invalid_argument, "pad: axis 1 has 3 elements; reflect pads at most 2 on a side, not 3");
  require_error(tf::test::call<float>(device, tf::ops::pad{.paddings = {0, 0, 0, 4}, .mode = tf::ops::pad_mode::symmetric}, x3),
                tf::status_code::invalid_argument, "pad: axis 1 has 3 elements; symmetric pads at most 3 on a side, not 4");
  const auto empty = *tf::tensor::allocate(tf::dtype::f32, tf::shape{0, 3});
  require_error(tf::test::call<float>(device, tf::ops::pad{.paddings = {1, 0, 0, 0}, .mode = tf::ops::pad_mode::edge}, empty),
                tf::status_code::invalid_argument, "pad: axis 0 is empty; edge has no element to repeat");
  require_error(tf::test::call<float>(device, tf::ops::pad{.paddings = {0, 0, 1, 1}, .value = 1, .mode = tf::ops::pad_mode::edge}, x3),
                tf::status_code::invalid_argument, "pad: mode edge takes its values from the input; value must be 0, not 1");
  // A dimension known only at run time is checked by the kernel.
  auto parsed = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[?]\ny = pad(x) paddings=[2, 0] mode=\"reflect\"\n");
  REQUIRE(parsed.ok());
  auto g = tf::runtime_graph<tf::cpu>::make(*parsed);
  REQUIRE(g.ok());
  tf::runtime_session<tf::cpu> s(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*g)), device);
  auto r = s.run({{"x", *tf::tensor::from_values<float>({1, 2})}}, {"y"});
  require_error(r.status(), tf::status_code::invalid_argument, "pad: axis 0 has 2 elements; reflect pads at most 1 on a side, not 2");
  auto ok = s.run({{"x", *tf::tensor::from_values<float>({1, 2, 3})}}, {"y"});
  REQUIRE(ok.ok());
  REQUIRE(*(*ok)[0].at<float>(0) == 3.0f);
  REQUIRE(*(*ok)[0].at<float>(1) == 2.0f);
  // A mode that is not one of the four.
  auto bad = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[2]\ny = pad(x) paddings=[1, 0] mode=\"wrap\"\n");
  REQUIRE(bad.ok());
  require_error(tf::runtime_graph<tf::cpu>::make(*bad).status(), tf::status_code::invalid_argument,
                "op pad: attribute 'mode' must be one of \"constant\", \"reflect\", \"symmetric\", \"edge\", got \"wrap\"");
}

TEST_CASE("gather reports bad inputs and out-of-range indices", "[array][errors]") {
  tf::cpu device;
  const auto params = random_values<float>(tf::shape{5, 4}, 1);
  const auto run = [&](std::int64_t axis, const tf::tensor& indices) {
    return tf::test::call<float>(device, tf::ops::gather{.axis = axis}, params, indices);
  };
  require_error(run(0, random_values<float>(tf::shape{2}, 1)), tf::status_code::invalid_argument,
                "gather: indices (input 1) must be i32 or i64, got f32");
  require_error(run(2, *tf::tensor::from_values<std::int32_t>({0})), tf::status_code::invalid_argument,
                "gather: axis 2 is out of range for rank 2");
  require_error(tf::test::call<float>(device, tf::ops::gather{}, random_values<float>(tf::shape{}, 1),
                                *tf::tensor::scalar<std::int32_t>(0)),
                tf::status_code::invalid_argument, "gather: params (input 0) must have rank >= 1, got shape []");
  require_error(run(0, tf::test::random_tensor<std::int32_t>(tf::shape{2, 2, 2, 2, 2, 2, 2, 2}, 1, 0, 1)),
                tf::status_code::invalid_argument, "gather: the output would have rank 9");
  // Out-of-range indices are found before anything is copied, at run time, with their position.
  require_error(run(0, *tf::tensor::from_values<std::int32_t>({0, 5, 1})), tf::status_code::invalid_argument,
                "gather: indices[1] = 5 is not in [-5, 5)");
  require_error(run(1, *tf::tensor::from_values<std::int64_t>({0, 3, 2, -5}, tf::shape{2, 2})),
                tf::status_code::invalid_argument, "gather: indices[1, 1] = -5 is not in [-4, 4)");
  require_error(run(-1, *tf::tensor::scalar<std::int64_t>(std::int64_t{1} << 40)), tf::status_code::invalid_argument,
                "gather: indices[] = 1099511627776 is not in [-4, 4)");
  require_error(tf::test::call<float>(device, tf::ops::gather{}, random_values<float>(tf::shape{0, 3}, 1),
                                *tf::tensor::from_values<std::int32_t>({0})),
                tf::status_code::invalid_argument, "gather: indices[0] = 0 is not in [0, 0)");
}

TEST_CASE("gather reads a negative index from the end, as NumPy", "[array]") {
  tf::cpu device;
  const auto params = random_values<float>(tf::shape{5, 4}, 3);
  for (std::int64_t axis : {0, 1}) {
    const std::int64_t n = params.dim(static_cast<std::size_t>(axis));
    auto negative = tf::tensor::from_values<std::int64_t>({-1, 0, -n, 2 - n}, tf::shape{2, 2});
    auto positive = tf::tensor::from_values<std::int64_t>({n - 1, 0, 0, 2}, tf::shape{2, 2});
    auto a = tf::test::call<float>(device, tf::ops::gather{.axis = axis}, params, *negative);
    auto b = tf::test::call<float>(device, tf::ops::gather{.axis = axis}, params, *positive);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->shape() == b->shape());
    REQUIRE(std::memcmp(a->data(), b->data(), a->bytes()) == 0);
  }
}

TEST_CASE("fill reports bad dims, dtypes and values", "[array][errors]") {
  tf::cpu device;
  require_error(tf::test::call<float>(device, tf::ops::fill{.dims = {2, dyn}}), tf::status_code::invalid_argument,
                "fill: dims [2, ?] must be fully defined: dimension 1 is unknown (-1)");
  require_error(tf::test::call<float>(device, tf::ops::fill{.dims = {2, -3}}), tf::status_code::invalid_argument,
                "fill: dims [2, -3] has negative dimension -3 at index 1");
  require_error(tf::test::call<float>(device, tf::ops::fill{.dims = {2}, .type = tf::dtype::i32}),
                tf::status_code::invalid_argument, "fill: called with the kernel for f32 but the output has dtype i32");
  require_error(tf::test::call<float>(device, tf::ops::fill{.type = static_cast<tf::dtype>(42)}),
                tf::status_code::invalid_argument, "fill: invalid dtype code 42");
  require_error(tf::test::call<std::int64_t>(device, tf::ops::fill{.value = 1e19, .type = tf::dtype::i64}),
                tf::status_code::invalid_argument, "fill: value does not fit in dtype i64");
  require_error(tf::test::call<float>(device, tf::ops::fill{}, random_values<float>(tf::shape{2}, 1)),
                tf::status_code::invalid_argument, "fill: expects 0 inputs, got 1");
}

TEST_CASE("split reports bad axes, part counts and outputs", "[array][errors]") {
  tf::cpu device;
  const auto x = random_values<float>(tf::shape{4, 6}, 1);
  const auto run = [&](std::int64_t axis, std::int64_t parts) {
    return tf::test::call<float>(device, tf::ops::split{.axis = axis, .num_split = parts}, x);
  };
  require_error(run(1, 4), tf::status_code::invalid_argument,
                "split: dimension 1 of input shape [4, 6] (6) does not divide into 4 equal parts");
  require_error(run(2, 2), tf::status_code::invalid_argument, "split: axis 2 is out of range for rank 2");
  require_error(run(0, 0), tf::status_code::invalid_argument, "split: num_split must be at least 1, got 0");
  // A count from a file is refused before anything is sized by it.
  require_error(run(0, std::int64_t{1} << 40), tf::status_code::invalid_argument,
                "split: 1099511627776 outputs, more than the 65536 an op may have");
  require_error(tf::test::call<float>(device, tf::ops::split{}, random_values<float>(tf::shape{}, 1)),
                tf::status_code::invalid_argument, "split: the input must have rank >= 1, got a scalar");
  const tf::tensor_spec in[] = {x.spec()};
  require_error(tf::infer(tf::ops::split{.num_split = 2}, in, 2), tf::status_code::invalid_argument,
                "split: output 2 does not exist (it has 2 outputs)");
  require_error(tf::infer(tf::ops::concat{}, in, 1), tf::status_code::invalid_argument,
                "concat: output 1 does not exist (it has 1 output)");
  static_assert(tf::num_outputs_of(tf::ops::split{.num_split = 5}) == 5);
  static_assert(tf::multi_output_op<tf::ops::split> && !tf::multi_output_op<tf::ops::concat>);
}

namespace {

// where and broadcast_to on random inputs of the given shapes against a reference that indexes
// every input through NumPy's broadcast by hand.
std::vector<std::int64_t> broadcast_index(const tf::shape& out, const tf::shape& in, std::int64_t flat) {
  std::vector<std::int64_t> coord(out.rank());
  for (std::size_t d = out.rank(); d-- > 0;) {
    coord[d] = flat % out[d];
    flat /= out[d];
  }
  std::int64_t at = 0;
  const auto strides = tf::test::strides_of(in);
  const std::size_t shift = out.rank() - in.rank();
  for (std::size_t d = 0; d < in.rank(); ++d) at += (in[d] == 1 ? 0 : coord[d + shift]) * strides[d];
  return {at};
}

template <class T, class Device>
void check_where(Device& device, const tf::shape& sc, const tf::shape& sx, const tf::shape& sy, std::uint64_t seed) {
  INFO("where " << sc.to_string() << " " << sx.to_string() << " " << sy.to_string());
  const auto c = tf::test::random_tensor<bool>(sc, seed);
  const auto x = tf::test::random_tensor<T>(sx, seed + 1);
  const auto y = tf::test::random_tensor<T>(sy, seed + 2);
  auto out = tf::test::call<T>(device, tf::ops::where{}, c, x, y);
  REQUIRE(out.ok());
  const tf::shape s = *tf::broadcast(sc, *tf::broadcast(sx, sy));
  REQUIRE(out->shape() == s);
  const auto cv = tf::test::as_doubles<bool>(c), xv = tf::test::as_doubles<T>(x), yv = tf::test::as_doubles<T>(y);
  std::vector<double> expected(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto k = static_cast<std::int64_t>(i);
    expected[i] = cv[broadcast_index(s, sc, k)[0]] != 0 ? xv[broadcast_index(s, sx, k)[0]] : yv[broadcast_index(s, sy, k)[0]];
  }
  tf::test::require_close<T>(*out, s, expected, 0);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("where selects with three-way broadcasting", "[array][where]", tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  check_where<float>(device, tf::shape{5, 7}, tf::shape{5, 7}, tf::shape{5, 7}, 1);
  check_where<float>(device, tf::shape{1, 7}, tf::shape{5, 1}, tf::shape{}, 2);
  check_where<std::int64_t>(device, tf::shape{3, 1, 4}, tf::shape{2, 1}, tf::shape{1, 2, 4}, 3);
  check_where<std::uint8_t>(device, tf::shape{}, tf::shape{6}, tf::shape{6}, 4);
  check_where<Eigen::half>(device, tf::shape{2, 2, 2, 2, 2, 2}, tf::shape{2, 1, 2, 1, 2, 1}, tf::shape{1, 2, 1, 2, 1, 2}, 5);
  check_where<double>(device, tf::shape{0, 3}, tf::shape{3}, tf::shape{1}, 6);
}

TEST_CASE("where reports bad dtypes and shapes", "[array][where][errors]") {
  tf::cpu device;
  const auto c = tf::test::random_tensor<bool>(tf::shape{3}, 1);
  const auto f = tf::test::random_tensor<float>(tf::shape{3}, 1);
  const auto d = tf::test::random_tensor<double>(tf::shape{3}, 1);
  require_error(tf::test::call<float>(device, tf::ops::where{}, f, f, f), tf::status_code::invalid_argument,
                "where: condition (input 0) must be bool, got f32");
  require_error(tf::test::call<float>(device, tf::ops::where{}, c, f, d), tf::status_code::invalid_argument,
                "where: x (input 1) and y (input 2) must have one dtype, got f32 and f64");
  require_error(tf::test::call<float>(device, tf::ops::where{}, c, f, tf::test::random_tensor<float>(tf::shape{4}, 1)),
                tf::status_code::invalid_argument, "where: x and y: shapes [3] and [4] do not broadcast");
  require_error(tf::test::call<float>(device, tf::ops::where{}, tf::test::random_tensor<bool>(tf::shape{2}, 1), f, f),
                tf::status_code::invalid_argument, "where: condition and values: shapes [2] and [3] do not broadcast");
}

TEMPLATE_LIST_TEST_CASE("broadcast_to repeats the input as NumPy broadcasts it, both ways", "[array][broadcast_to]",
                        tf::test::device_policies) {
  auto device = tf::test::make_device<TestType>();
  for (const auto& [in, to] : std::vector<std::pair<tf::shape, tf::shape>>{
           {tf::shape{3}, tf::shape{2, 3}}, {tf::shape{3, 1}, tf::shape{2, 1, 6}}, {tf::shape{}, tf::shape{4, 5}},
           {tf::shape{2, 1, 4}, tf::shape{3, 1}}, {tf::shape{5}, tf::shape{0, 5}}}) {
    INFO("input " << in.to_string() << ", shape " << to.to_string());
    const auto x = tf::test::random_tensor<std::int32_t>(in, 7, -100, 100);
    auto y = tf::test::call<std::int32_t>(device, tf::ops::broadcast_to{to}, x);
    REQUIRE(y.ok());
    const tf::shape s = *tf::broadcast(in, to);
    const auto xv = tf::test::as_doubles<std::int32_t>(x);
    std::vector<double> expected(static_cast<std::size_t>(s.num_elements()));
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = xv[broadcast_index(s, in, static_cast<std::int64_t>(i))[0]];
    tf::test::require_close<std::int32_t>(*y, s, expected, 0);
  }
  tf::test::require_error(tf::test::call<float>(device, tf::ops::broadcast_to{tf::shape{2, 4}},
                                          tf::test::random_tensor<float>(tf::shape{3}, 1)),
                          tf::status_code::invalid_argument, "broadcast_to: shapes [3] and [2, 4] do not broadcast");
}
