// SPDX-License-Identifier: Apache-2.0
// resize_map: where each output row and column of a resize reads (the input positions and, bilinear,
// their weights), for the op's coordinate mode, rounding and scale. Every device's resize kernel maps
// its axes through it (the CPU kernel into scratch tables, the GPU kernel into tables it copies to
// the device), so both read the same pixels with the same weights.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <cstdint>

#include <typeflow/ops/resize.hpp>

namespace typeflow::resize_map {

// Where the output positions along one axis read: `first[i]` and `second[i]` are input positions,
// `first_weight[i]` and `second_weight[i]` their weights (bilinear; nearest reads `first` alone).
template <class Acc>
struct axis {
  std::int64_t* first;
  std::int64_t* second;
  Acc* first_weight;
  Acc* second_weight;
};

// Fills the tables of an axis of `in` input and `out` output positions, for the op's scale
// attribute of that axis (0: not given).
template <class Acc>
void map_axis(const ops::resize& op, std::int64_t in, std::int64_t out, double scale, const axis<Acc>& a) {
  const double last = static_cast<double>(in - 1);
  for (std::int64_t i = 0; i < out; ++i) {
    const double v = ops::source_coordinate(op.coordinates, i, in, out, scale);
    if (op.method == ops::resize_method::nearest) {
      a.first[i] = ops::nearest_position(op.rounding, v, in);
      continue;
    }
    const double clamped = v > 0 ? std::min(v, last) : 0.0;  // a NaN reads position 0
    const auto lo = static_cast<std::int64_t>(clamped);     // floor: clamped >= 0
    const double t = clamped - static_cast<double>(lo);
    a.first[i] = lo;
    a.second[i] = std::min(lo + 1, in - 1);
    a.second_weight[i] = static_cast<Acc>(t);
    a.first_weight[i] = static_cast<Acc>(1.0 - t);
  }
}

}  // namespace typeflow::resize_map
