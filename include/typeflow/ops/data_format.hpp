// SPDX-License-Identifier: Apache-2.0
// The layout of image tensors for conv2d, the pools and resize (TensorFlow's data_format):
// NHWC, channels last (TensorFlow's default), or NCHW, channels first (ONNX's and PyTorch's).
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <cstddef>
#include <string_view>

#include <typeflow/ops/detail/named_enum.hpp>

namespace typeflow::ops {

enum class data_format : unsigned char { nhwc, nchw };

// A named enum (ops/detail/named_enum.hpp): written "NHWC" or "NCHW" in graph files and op_with.
constexpr std::array<std::string_view, 2> names_of(data_format) noexcept { return {"NHWC", "NCHW"}; }

// Where an image tensor [n, h, w, c] or [n, c, h, w] keeps its height, width and channels.
struct image_axes {
  std::size_t h, w, c;
};

constexpr image_axes axes_of(data_format f) noexcept {
  return f == data_format::nchw ? image_axes{2, 3, 1} : image_axes{1, 2, 3};
}

}  // namespace typeflow::ops
