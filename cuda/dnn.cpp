// SPDX-License-Identifier: Apache-2.0
// Convolutions through cuDNN 9's graph API (include/typeflow/cuda/dnn.hpp), with the backend
// descriptors the cuDNN frontend builds (its samples/cpp/convolution/fprop.cpp):
//   tensors x [N, C, H, W] with channels-last strides, w [K, C, R, S] (KRSC), y, a bias [1, K, 1, 1]
//   -> CONVOLUTION_FORWARD (-> pointwise ADD of the bias -> pointwise RELU_FWD; intermediates
//   virtual, in f32) -> OPERATIONGRAPH -> ENGINEHEUR (mode A, then FALLBACK) -> the first engine
//   config whose notes the precision allows and whose EXECUTION_PLAN finalizes
//   -> per call a VARIANT_PACK of the pointers and cudnnBackendExecute on the handle's stream.
// TensorFlow's filter is HWIO; cuDNN's NHWC engines want KRSC, so each call first transposes the
// filter into the workspace (one strided copy of the filter's elements). Padding cuDNN takes as
// one amount per axis; where a side has more (TensorFlow's same padding with an even window), the
// input is first padded by the difference into the workspace, as TensorFlow's GPU kernel does.
#include <typeflow/cuda/dnn.hpp>

#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include <typeflow/cuda/array.hpp>
#include <typeflow/cuda/elementwise.hpp>

#include "detail/check.hpp"
#include "detail/dims.hpp"

namespace typeflow::gpu {

namespace {

using typeflow::detail::cat;

status_code code_of(cudnnStatus_t s) {
  // The categories are thousands (2000: bad parameter, 3000: not supported); 1001 is not initialized.
  if (s == CUDNN_STATUS_NOT_INITIALIZED) return status_code::failed_precondition;
  switch (CUDNN_STATUS_CATEGORY(s)) {
    case CUDNN_STATUS_BAD_PARAM: return status_code::invalid_argument;
    case CUDNN_STATUS_NOT_SUPPORTED: return status_code::unimplemented;
    default: break;
  }
  if (s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED || s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    return status_code::resource_exhausted;
  return status_code::internal;
}

// "cudnnBackendFinalize (conv2d: convolution forward operation): CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH
// (cuDNN's last message)".
template <class... What>
status dnn_status(cudnnStatus_t s, std::string_view call, const What&... what) {
  if (s == CUDNN_STATUS_SUCCESS) return ok_status();
  char last[512] = {};
  cudnnGetLastErrorString(last, sizeof last);
  if (last[0] != '\0') return status(code_of(s), cat(call, " (", what..., "): ", cudnnGetErrorString(s), ": ", last));
  return status(code_of(s), cat(call, " (", what..., "): ", cudnnGetErrorString(s)));
}

#define TYPEFLOW_DNN_RETURN_IF_ERROR(call, ...) TYPEFLOW_CUDA_RETURN_IF_ERROR(dnn_status((call), __VA_ARGS__))

// One backend descriptor, destroyed with its owner.
class descriptor {
 public:
  descriptor() = default;
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
  descriptor(descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  descriptor& operator=(descriptor&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  ~descriptor() {
    if (d_ != nullptr) (void)cudnnBackendDestroyDescriptor(d_);
  }
  cudnnBackendDescriptor_t get() const noexcept { return d_; }
  cudnnBackendDescriptor_t* out() noexcept { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

result<descriptor> make_descriptor(cudnnBackendDescriptorType_t type, std::string_view what) {
  descriptor d;
  TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnBackendCreateDescriptor(type, d.out()), "cudnnBackendCreateDescriptor", what);
  return d;
}

// Sets one attribute; `what` names the descriptor in errors.
template <class T>
status set(const descriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
           const T* values, std::string_view what) {
  return dnn_status(cudnnBackendSetAttribute(d.get(), name, type, count, values), "cudnnBackendSetAttribute", what,
                    ", attribute ", static_cast<int>(name));
}

status finalize(const descriptor& d, std::string_view what) {
  return dnn_status(cudnnBackendFinalize(d.get()), "cudnnBackendFinalize", what);
}

cudnnDataType_t data_type(elem e) {
  switch (e) {
    case elem::f16: return CUDNN_DATA_HALF;
    case elem::bf16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

// The unique ids of the graph's tensors; the virtual ones never reach a variant pack.
enum uid : std::int64_t { uid_x = 1, uid_w, uid_y, uid_bias, uid_conv, uid_sum };

// The largest power of two (at most 16) dividing an address: the alignment a tensor is declared
// with, so that a slice of an arena never meets an engine that assumes more.
std::int64_t alignment_of(const void* p) {
  const std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(p) | 16u;
  return static_cast<std::int64_t>(bits & (~bits + 1));
}

// The convolution cuDNN runs: the caller's, with the padding made the same on both sides of each
// axis (the input grown by the difference where it is not), and the alignments of the pointers.
struct conv_shape {
  elem type = elem::f32;
  precision math = precision::exact;
  conv_epilogue post = conv_epilogue::none;
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // of the input cuDNN reads
  std::int64_t k = 0, r = 0, s = 0;
  std::int64_t p = 0, q = 0;                // output height and width
  std::int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t align_x = 16, align_y = 16, align_bias = 16;
  friend bool operator==(const conv_shape&, const conv_shape&) = default;
};

struct conv_shape_hash {
  std::size_t operator()(const conv_shape& k) const noexcept {
    const std::int64_t fields[] = {static_cast<std::int64_t>(k.type), static_cast<std::int64_t>(k.math),
                                   static_cast<std::int64_t>(k.post), k.n, k.c, k.h, k.w, k.k, k.r, k.s, k.p, k.q,
                                   k.stride_h, k.stride_w, k.dilation_h, k.dilation_w, k.pad_h, k.pad_w, k.align_x,
                                   k.align_y, k.align_bias};
    std::size_t h = 1469598103934665603ull;
    for (const std::int64_t f : fields) h = (h ^ static_cast<std::size_t>(f)) * 1099511628211ull;
    return h;
  }
};

// Elements of padding before and after the input, per axis, that the workspace's padded copy adds.
struct extra_padding {
  std::int64_t top = 0, bottom = 0, left = 0, right = 0;
  bool any() const noexcept { return top != 0 || bottom != 0 || left != 0 || right != 0; }
};

extra_padding extra_of(const conv2d_params& p) {
  const std::int64_t ph = std::min(p.pad_top, p.pad_bottom), pw = std::min(p.pad_left, p.pad_right);
  return {p.pad_top - ph, p.pad_bottom - ph, p.pad_left - pw, p.pad_right - pw};
}

conv_shape shape_of(const conv2d_params& p, const void* x) {
  const extra_padding e = extra_of(p);
  return {.type = p.type, .math = p.math, .post = p.post,
          .n = p.batch, .c = p.in_channels, .h = p.height + e.top + e.bottom, .w = p.width + e.left + e.right,
          .k = p.out_channels, .r = p.filter_h, .s = p.filter_w, .p = p.out_h, .q = p.out_w,
          .stride_h = p.stride_h, .stride_w = p.stride_w, .dilation_h = p.dilation_h, .dilation_w = p.dilation_w,
          .pad_h = std::min(p.pad_top, p.pad_bottom), .pad_w = std::min(p.pad_left, p.pad_right),
          .align_x = alignment_of(x), .align_y = alignment_of(p.y),
          .align_bias = p.post == conv_epilogue::none ? 16 : alignment_of(p.bias)};
}

constexpr std::size_t round_up(std::size_t n) noexcept { return (n + 255) / 256 * 256; }

// The workspace: the filter in KRSC, then the padded input where there is one, then cuDNN's.
struct workspace_layout {
  std::size_t filter = 0, input = 0, dnn = 0;  // offsets
  std::size_t total = 0;
};

workspace_layout layout_of(const conv2d_params& p, std::size_t dnn_bytes) {
  const std::size_t esize = size_of(p.type);
  workspace_layout l;
  l.filter = 0;
  l.input = round_up(static_cast<std::size_t>(p.filter_h * p.filter_w * p.in_channels * p.out_channels) * esize);
  const extra_padding e = extra_of(p);
  const std::size_t padded =
      e.any() ? static_cast<std::size_t>(p.batch * (p.height + e.top + e.bottom) * (p.width + e.left + e.right) *
                                         p.in_channels) * esize
              : 0;
  l.dnn = l.input + round_up(padded);
  l.total = l.dnn + round_up(dnn_bytes);
  return l;
}

// The operation graph of one convolution and the descriptors it refers to.
struct conv_graph {
  std::vector<descriptor> parts;  // tensors, the convolution, pointwise descriptors and operations
  descriptor graph;
};

result<descriptor> tensor(std::int64_t id, cudnnDataType_t type, const std::array<std::int64_t, 4>& dims,
                          const std::array<std::int64_t, 4>& strides, std::int64_t alignment, bool is_virtual) {
  auto d = make_descriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
  if (!d.ok()) return d.status();
  const auto name = cat("tensor ", id);
  const std::string_view what = name.view();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what));
  if (is_virtual) {
    const bool yes = true;
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, what));
  }
  TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*d, what));
  return d;
}

// A pointwise operation y = mode(x[, b]).
result<descriptor> pointwise(conv_graph& g, cudnnPointwiseMode_t mode, const descriptor& x, const descriptor* b,
                             const descriptor& y, std::string_view what) {
  auto pw = make_descriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
  if (!pw.ok()) return pw.status();
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*pw, what));
  auto op = make_descriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
  if (!op.ok()) return op.status();
  const cudnnBackendDescriptor_t pw_d = pw->get(), x_d = x.get(), y_d = y.get();
  const float one = 1.0f;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw_d, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x_d, what));
  if (b != nullptr) {
    const cudnnBackendDescriptor_t b_d = b->get();
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b_d, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, what));
  }
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y_d, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, what));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*op, what));
  g.parts.push_back(std::move(*pw));
  return op;
}

// The operation graph of `k`, bound to `handle` where there is one (cuDNN before 9.8 needs it; a
// graph built without one is what check_conv2d_graph finalizes on a machine without a GPU).
result<conv_graph> build_graph(const conv_shape& k, cudnnHandle_t handle) {
  conv_graph g;
  const cudnnDataType_t io = data_type(k.type);
  // NCHW-ordered dimensions with channels-last strides: NHWC in memory.
  const std::array<std::int64_t, 4> x_dims{k.n, k.c, k.h, k.w}, x_strides{k.c * k.h * k.w, 1, k.w * k.c, k.c};
  const std::array<std::int64_t, 4> w_dims{k.k, k.c, k.r, k.s}, w_strides{k.c * k.r * k.s, 1, k.s * k.c, k.c};
  const std::array<std::int64_t, 4> y_dims{k.n, k.k, k.p, k.q}, y_strides{k.k * k.p * k.q, 1, k.q * k.k, k.k};
  const std::array<std::int64_t, 4> b_dims{1, k.k, 1, 1}, b_strides{k.k, 1, k.k, k.k};
  const bool fused = k.post != conv_epilogue::none;

  auto x = tensor(uid_x, io, x_dims, x_strides, k.align_x, false);
  if (!x.ok()) return x.status();
  auto w = tensor(uid_w, io, w_dims, w_strides, 16, false);
  if (!w.ok()) return w.status();
  auto y = tensor(uid_y, io, y_dims, y_strides, k.align_y, false);
  if (!y.ok()) return y.status();
  // The convolution writes y itself, or a virtual f32 tensor the epilogue reads.
  auto conv_out = fused ? tensor(uid_conv, CUDNN_DATA_FLOAT, y_dims, y_strides, 16, true) : result<descriptor>(descriptor{});
  if (!conv_out.ok()) return conv_out.status();

  auto conv = make_descriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution");
  if (!conv.ok()) return conv.status();
  {
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const std::int64_t spatial = 2;
    const std::int64_t padding[] = {k.pad_h, k.pad_w}, dilations[] = {k.dilation_h, k.dilation_w},
                       strides[] = {k.stride_h, k.stride_w};
    const std::string_view what = "convolution";
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*conv, what));
  }
  auto fprop = make_descriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "convolution forward");
  if (!fprop.ok()) return fprop.status();
  {
    const std::string_view what = "convolution forward operation";
    const cudnnBackendDescriptor_t x_d = x->get(), w_d = w->get(), y_d = fused ? conv_out->get() : y->get(),
                                   c_d = conv->get();
    const float alpha = 1.0f, beta = 0.0f;
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x_d, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w_d, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y_d, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(
        set(*fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c_d, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, what));
    TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*fprop, what));
  }
  std::vector<cudnnBackendDescriptor_t> ops{fprop->get()};
  std::vector<descriptor> op_parts;
  if (fused) {
    auto bias = tensor(uid_bias, io, b_dims, b_strides, k.align_bias, false);
    if (!bias.ok()) return bias.status();
    const bool relu = k.post == conv_epilogue::bias_relu;
    auto sum = relu ? tensor(uid_sum, CUDNN_DATA_FLOAT, y_dims, y_strides, 16, true) : result<descriptor>(descriptor{});
    if (!sum.ok()) return sum.status();
    auto add = pointwise(g, CUDNN_POINTWISE_ADD, *conv_out, &*bias, relu ? *sum : *y, "bias add");
    if (!add.ok()) return add.status();
    ops.push_back(add->get());
    op_parts.push_back(std::move(*add));
    if (relu) {
      auto act = pointwise(g, CUDNN_POINTWISE_RELU_FWD, *sum, nullptr, *y, "relu");
      if (!act.ok()) return act.status();
      ops.push_back(act->get());
      op_parts.push_back(std::move(*act));
      g.parts.push_back(std::move(*sum));
    }
    g.parts.push_back(std::move(*bias));
  }

  auto graph = make_descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  if (!graph.ok()) return graph.status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                    static_cast<std::int64_t>(ops.size()), ops.data(), "operation graph"));
  if (handle != nullptr)
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "operation graph"));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*graph, "operation graph"));

  g.graph = std::move(*graph);
  for (descriptor* d : {&*x, &*w, &*y, &*conv_out, &*conv, &*fprop}) g.parts.push_back(std::move(*d));
  for (descriptor& d : op_parts) g.parts.push_back(std::move(d));
  return g;
}

// Whether an engine config's numerical notes are allowed for `k`: no engine accumulates in less than
// f32 (reduced-precision reductions); exact f32 takes none that rounds its inputs (TF32 tensor
// cores, down-converted inputs) and none that is nondeterministic.
result<bool> allowed(const descriptor& config, const conv_shape& k) {
  const bool exact = k.type == elem::f32 && k.math == precision::exact;
  auto engine = make_descriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
  if (!engine.ok()) return engine.status();
  std::int64_t got = 0;
  cudnnBackendDescriptor_t e = engine->get();
  TYPEFLOW_DNN_RETURN_IF_ERROR(
      cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e),
      "cudnnBackendGetAttribute", "engine of an engine config");
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  std::int64_t count = 0;
  TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                                        static_cast<std::int64_t>(notes.size()), &count, notes.data()),
                               "cudnnBackendGetAttribute", "numerical notes of an engine");
  for (std::int64_t i = 0; i < count && i < static_cast<std::int64_t>(notes.size()); ++i) {
    const auto note = notes[static_cast<std::size_t>(i)];
    if (note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) return false;
    if (exact && (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
                  note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC))
      return false;
  }
  return true;
}

// The engine configs cuDNN's heuristic in `mode` proposes for the graph, best first.
result<std::vector<descriptor>> engine_configs(const descriptor& graph, cudnnBackendHeurMode_t mode) {
  auto heur = make_descriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristic");
  if (!heur.ok()) return heur.status();
  const cudnnBackendDescriptor_t g = graph.get();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g, "engine heuristic"));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "engine heuristic"));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*heur, "engine heuristic"));
  std::int64_t count = 0;
  TYPEFLOW_DNN_RETURN_IF_ERROR(
      cudnnBackendGetAttribute(heur->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
      "cudnnBackendGetAttribute", "number of engine configs");
  std::vector<descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    auto c = make_descriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
    if (!c.ok()) return c.status();
    raw.push_back(c->get());
    configs.push_back(std::move(*c));
  }
  std::int64_t got = 0;
  if (count > 0)
    TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(heur->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                                 "cudnnBackendGetAttribute", "engine configs");
  configs.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(got, 0, count)));
  return configs;
}

// "[n, h, w, c] x [r, s, c, k] -> [n, p, q, k] f32"
typeflow::detail::text describe(const conv_shape& k) {
  return cat("[", k.n, ", ", k.h, ", ", k.w, ", ", k.c, "] x [", k.r, ", ", k.s, ", ", k.c, ", ", k.k, "] -> [", k.n,
             ", ", k.p, ", ", k.q, ", ", k.k, "] ", to_string(k.type));
}

struct conv_plan {
  conv_graph graph;
  descriptor config;  // the engine config the plan was made from, kept with it
  descriptor plan;
  std::size_t workspace = 0;  // cuDNN's, in bytes
  // The bias and ReLU run as kernels of the library after the plain convolution: cuDNN had no engine
  // for the fused graph in this precision.
  bool separate_epilogue = false;
};

// y = post(y + bias) with the library's elementwise kernels, y viewed as [rows, out_channels].
status epilogue_kernels(const stream& s, const conv2d_params& p, std::string_view op) {
  if (p.post == conv_epilogue::none) return ok_status();
  const std::int64_t y_dims[] = {p.batch * p.out_h * p.out_w, p.out_channels}, bias_dims[] = {p.out_channels};
  TYPEFLOW_CUDA_RETURN_IF_ERROR(binary(s, {.op = binary_op::add, .type = p.type, .a = p.y, .a_dims = y_dims, .b = p.bias,
                                           .b_dims = bias_dims, .out = p.y, .out_dims = y_dims})
                                    .with_context(op));
  if (p.post != conv_epilogue::bias_relu) return ok_status();
  return unary(s, {.op = unary_op::relu, .type = p.type, .x = p.y, .y = p.y, .size = y_dims[0] * y_dims[1]}).with_context(op);
}

bool empty_input(const conv2d_params& p) { return p.batch * p.height * p.width * p.in_channels == 0; }

} // namespace

struct dnn_context::impl {
  int ordinal = 0;
  const stream* on = nullptr;  // the caller's, which outlives the context
  cudnnHandle_t handle = nullptr;
  std::unordered_map<conv_shape, conv_plan, conv_shape_hash> plans;

  ~impl() {
    plans.clear();
    if (handle != nullptr) (void)cudnnDestroy(handle);
  }

  // The cached plan of k, made on first use.
  result<conv_plan*> find_or_make(const conv_shape& k, std::string_view op);
  result<conv_plan> make_plan(const conv_shape& k, std::string_view op);
};

result<conv_plan*> dnn_context::impl::find_or_make(const conv_shape& k, std::string_view op) {
  if (auto it = plans.find(k); it != plans.end()) return &it->second;
  auto made = make_plan(k, op);
  if (!made.ok() && made.status().code() == status_code::unimplemented && k.post != conv_epilogue::none) {
    // No engine for the fused graph: the plain convolution, with the epilogue as kernels after it.
    conv_shape plain = k;
    plain.post = conv_epilogue::none;
    plain.align_bias = 16;
    made = make_plan(plain, op);
    if (made.ok()) made->separate_epilogue = true;
  }
  if (!made.ok()) return made.status();
  return &plans.try_emplace(k, std::move(made).value()).first->second;
}

result<conv_plan> dnn_context::impl::make_plan(const conv_shape& k, std::string_view op) {
  auto graph = build_graph(k, handle);
  if (!graph.ok()) return graph.status().with_context(op);
  status last = errors::unimplemented(op, ": cuDNN has no engine for the convolution ", describe(k),
                                      k.type == elem::f32 && k.math == precision::exact
                                          ? " in exact f32 (no TF32, deterministic); precision::tf32 allows more"
                                          : "");
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    auto configs = engine_configs(graph->graph, mode);
    if (!configs.ok()) {
      last = configs.status().with_context(op);
      continue;
    }
    for (descriptor& config : *configs) {
      auto ok = allowed(config, k);
      if (!ok.ok()) return ok.status().with_context(op);
      if (!*ok) continue;
      auto plan = make_descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
      if (!plan.ok()) return plan.status().with_context(op);
      const cudnnBackendDescriptor_t c = config.get();
      if (!set(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "execution plan").ok())
        continue;
      if (!set(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "execution plan").ok()) continue;
      if (!finalize(*plan, "execution plan").ok()) continue;  // this engine does not take the graph: the next
      std::int64_t bytes = 0;
      TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                            CUDNN_TYPE_INT64, 1, nullptr, &bytes),
                                   "cudnnBackendGetAttribute", op, ": workspace size of ", describe(k));
      return conv_plan{std::move(*graph), std::move(config), std::move(*plan), static_cast<std::size_t>(bytes)};
    }
  }
  return last;
}

dnn_context::dnn_context(std::unique_ptr<impl> i) noexcept : impl_(std::move(i)) {}
dnn_context::dnn_context(dnn_context&&) noexcept = default;
dnn_context& dnn_context::operator=(dnn_context&&) noexcept = default;
dnn_context::~dnn_context() = default;

std::size_t dnn_context::cached_plans() const noexcept { return impl_ ? impl_->plans.size() : 0; }

status dnn_context::bind(const stream& s) {
  if (!impl_) return errors::failed_precondition("dnn_context::bind on a moved-from context");
  if (s.native() == nullptr) return errors::failed_precondition("dnn_context::bind to a moved-from stream");
  if (s.ordinal() != impl_->ordinal)
    return errors::invalid_argument("dnn_context::bind: the context is on GPU:", impl_->ordinal, ", the stream on GPU:",
                                    s.ordinal());
  if (impl_->on == &s) return ok_status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(s.ordinal()));
  TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnSetStream(impl_->handle, static_cast<cudaStream_t>(s.native())), "cudnnSetStream",
                               "GPU:", s.ordinal());
  impl_->on = &s;
  return ok_status();
}

result<dnn_context> dnn_context::create(const stream& s) {
  if (s.native() == nullptr) return errors::failed_precondition("dnn_context::create with a moved-from stream");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(s.ordinal()));
  auto state = std::make_unique<impl>();
  state->ordinal = s.ordinal();
  state->on = &s;
  TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnCreate(&state->handle), "cudnnCreate", "GPU:", s.ordinal());
  TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnSetStream(state->handle, static_cast<cudaStream_t>(s.native())), "cudnnSetStream",
                               "GPU:", s.ordinal());
  return dnn_context(std::move(state));
}

status validate(const conv2d_params& p, std::string_view op) {
  if (p.type != elem::f32 && p.type != elem::f16 && p.type != elem::bf16)
    return errors::invalid_argument(op, ": dtype ", is_valid(p.type) ? to_string(p.type) : "(invalid)",
                                    " is not supported by the GPU's convolution (f16, bf16, f32)");
  if (p.math != precision::exact && p.math != precision::tf32)
    return errors::invalid_argument(op, ": the GPU's convolution takes exact or tf32 precision, not code ",
                                    static_cast<int>(p.math));
  if (p.math == precision::tf32 && p.type != elem::f32)
    return errors::invalid_argument(op, ": tf32 precision applies to f32 data, not ", to_string(p.type));
  if (static_cast<int>(p.post) > static_cast<int>(conv_epilogue::bias_relu))
    return errors::invalid_argument(op, ": invalid epilogue code ", static_cast<int>(p.post));
  const std::int64_t x_dims[] = {p.batch, p.height, p.width, p.in_channels};
  const std::int64_t f_dims[] = {p.filter_h, p.filter_w, p.in_channels, p.out_channels};
  const std::int64_t y_dims[] = {p.batch, p.out_h, p.out_w, p.out_channels};
  auto x = detail::elements(op, "the input", x_dims);
  if (!x.ok()) return x.status();
  auto f = detail::elements(op, "the filter", f_dims);
  if (!f.ok()) return f.status();
  auto y = detail::elements(op, "the output", y_dims);
  if (!y.ok()) return y.status();
  if (p.filter_h < 1 || p.filter_w < 1)
    return errors::invalid_argument(op, ": the filter is ", p.filter_h, " x ", p.filter_w, "; both must be >= 1");
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1)
    return errors::invalid_argument(op, ": strides ", p.stride_h, " x ", p.stride_w, " and dilations ", p.dilation_h, " x ",
                                    p.dilation_w, " must be >= 1");
  constexpr std::int64_t most = 2147483647;  // ops::max_window_attr
  for (const std::int64_t v : {p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_bottom, p.pad_left,
                               p.pad_right, p.filter_h, p.filter_w})
    if (v > most) return errors::invalid_argument(op, ": a window attribute is ", v, ", more than ", most);
  if (p.pad_top < 0 || p.pad_bottom < 0 || p.pad_left < 0 || p.pad_right < 0)
    return errors::invalid_argument(op, ": padding must be >= 0, got ", p.pad_top, ", ", p.pad_bottom, ", ", p.pad_left,
                                    ", ", p.pad_right);
  // floor((in + pads - extent) / stride) + 1 positions, 0 when the window does not fit
  const auto positions = [](std::int64_t in, std::int64_t before, std::int64_t after, std::int64_t size,
                            std::int64_t dilation, std::int64_t stride) -> std::int64_t {
    const std::int64_t extent = (size - 1) * dilation + 1;
    const std::int64_t padded = in + before + after;
    return in == 0 || padded < extent ? 0 : (padded - extent) / stride + 1;
  };
  const std::int64_t oh = positions(p.height, p.pad_top, p.pad_bottom, p.filter_h, p.dilation_h, p.stride_h);
  const std::int64_t ow = positions(p.width, p.pad_left, p.pad_right, p.filter_w, p.dilation_w, p.stride_w);
  if (p.out_h != oh || p.out_w != ow)
    return errors::invalid_argument(op, ": the output is ", p.out_h, " x ", p.out_w, " but the input ", p.height, " x ",
                                    p.width, " with this filter, stride, dilation and padding gives ", oh, " x ", ow);
  // An empty input or filter (no channel) may have no memory; the output of zeros still has.
  if (*y > 0 && ((*x > 0 && p.x == nullptr) || (*f > 0 && p.filter == nullptr) || p.y == nullptr))
    return errors::invalid_argument(op, ": ", p.y == nullptr ? "the output" : p.filter == nullptr && *f > 0 ? "the filter" : "the input",
                                    " is null");
  if (*y > 0 && p.post != conv_epilogue::none && p.bias == nullptr)
    return errors::invalid_argument(op, ": the epilogue adds a bias but the bias is null");
  return ok_status();
}

status check_conv2d_graph(const conv2d_params& p, std::string_view op) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p, op));
  auto g = build_graph(shape_of(p, p.x), nullptr);
  return g.ok() ? ok_status() : g.status().with_context(op);
}

result<std::size_t> conv2d_workspace(dnn_context& ctx, const conv2d_params& p, std::string_view op) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p, op));
  if (!ctx.impl_) return errors::failed_precondition(op, ": the dnn_context was moved from");
  if (p.batch * p.out_h * p.out_w * p.out_channels == 0 || empty_input(p)) return std::size_t{0};
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(ctx.impl_->ordinal));
  // The padded input lives in the workspace, whose alignment is 256.
  auto plan = ctx.impl_->find_or_make(shape_of(p, extra_of(p).any() ? nullptr : p.x), op);
  if (!plan.ok()) return plan.status();
  return layout_of(p, (*plan)->workspace).total;
}

status conv2d(dnn_context& ctx, const conv2d_params& p, void* workspace, std::size_t workspace_bytes, std::string_view op) {
  auto needed = conv2d_workspace(ctx, p, op);
  if (!needed.ok()) return needed.status();
  const std::int64_t outputs = p.batch * p.out_h * p.out_w * p.out_channels;
  if (outputs == 0) return ok_status();
  if (empty_input(p)) {
    // No input channel (or an image padded from nothing): every sum is empty, so y is 0, then the epilogue.
    const stream& s = *ctx.impl_->on;
    TYPEFLOW_CUDA_RETURN_IF_ERROR(set_async(s, p.y, 0, static_cast<std::size_t>(outputs) * size_of(p.type)));
    return epilogue_kernels(s, p, op);
  }
  if (workspace == nullptr || workspace_bytes < *needed)
    return errors::invalid_argument(op, ": the workspace has ", workspace_bytes, " bytes, fewer than the ", *needed,
                                    " the convolution needs");
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    return errors::invalid_argument(op, ": the workspace must be 256-byte aligned");
  dnn_context::impl& c = *ctx.impl_;
  const extra_padding extra = extra_of(p);
  const void* x = p.x;
  conv_plan& plan = *c.find_or_make(shape_of(p, extra.any() ? nullptr : p.x), op).value();
  const workspace_layout l = layout_of(p, plan.workspace);
  char* base = static_cast<char*>(workspace);
  const stream& s = *c.on;

  // The filter, HWIO [r * s * c, k], as KRSC [k, r * s * c].
  const std::int64_t rsc = p.filter_h * p.filter_w * p.in_channels, k = p.out_channels;
  const std::int64_t dims[] = {k, rsc}, src_strides[] = {1, k}, dst_strides[] = {rsc, 1};
  TYPEFLOW_CUDA_RETURN_IF_ERROR(strided_copy(s, {.type = p.type, .dims = dims, .src = p.filter, .src_strides = src_strides,
                                                 .dst = base + l.filter, .dst_strides = dst_strides},
                                             op));
  if (extra.any()) {
    const std::int64_t x_dims[] = {p.batch, p.height, p.width, p.in_channels};
    const std::int64_t paddings[] = {0, 0, extra.top, extra.bottom, extra.left, extra.right, 0, 0};
    TYPEFLOW_CUDA_RETURN_IF_ERROR(
        pad(s, {.type = p.type, .x = p.x, .x_dims = x_dims, .paddings = paddings, .y = base + l.input}));
    x = base + l.input;
  }
  std::vector<std::int64_t> ids{uid_x, uid_w, uid_y};
  std::vector<void*> pointers{const_cast<void*>(x), base + l.filter, p.y};
  if (p.post != conv_epilogue::none && !plan.separate_epilogue) {
    ids.push_back(uid_bias);
    pointers.push_back(const_cast<void*>(p.bias));
  }
  void* scratch = plan.workspace > 0 ? base + l.dnn : nullptr;
  auto pack = make_descriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  if (!pack.ok()) return pack.status().with_context(op);
  const auto n = static_cast<std::int64_t>(ids.size());
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, ids.data(), "variant pack"));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers.data(), "variant pack"));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(set(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &scratch, "variant pack"));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(finalize(*pack, "variant pack"));
  TYPEFLOW_DNN_RETURN_IF_ERROR(cudnnBackendExecute(c.handle, plan.plan.get(), pack->get()), "cudnnBackendExecute", op,
                               " on GPU:", c.ordinal);
  return plan.separate_epilogue ? epilogue_kernels(s, p, op) : ok_status();
}

} // namespace typeflow::gpu
