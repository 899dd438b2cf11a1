// SPDX-License-Identifier: Apache-2.0
// Matrix products through cuBLASLt (include/typeflow/cuda/blas.hpp).
//
// Row-major to column-major: a row-major [r, c] matrix is a column-major [c, r] one, so
// out = a * b (row-major) is out^T = b^T * a^T (column-major): cuBLASLt's "A" is our b and its "B" is
// our a, and its D has n rows, which puts the bias (one value per row of D) on the output features.
#include <typeflow/cuda/blas.hpp>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <tuple>
#include <unordered_map>
#include <utility>

#include <typeflow/cuda/elementwise.hpp>

#include "detail/check.hpp"
#include "kernels/elementwise.cuh"

namespace typeflow::gpu {

namespace {

using typeflow::detail::cat;

status_code code_of(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return status_code::resource_exhausted;
    case CUBLAS_STATUS_INVALID_VALUE: return status_code::invalid_argument;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return status_code::unimplemented;
    case CUBLAS_STATUS_NOT_INITIALIZED: return status_code::failed_precondition;
    default: return status_code::internal;
  }
}

template <class... What>
status blas_status(cublasStatus_t s, std::string_view call, const What&... what) {
  if (s == CUBLAS_STATUS_SUCCESS) return ok_status();
  return status(code_of(s), cat(call, " (", what..., "): ", cublasLtGetStatusString(s), " (", cublasLtGetStatusName(s), ")"));
}

#define TYPEFLOW_BLAS_RETURN_IF_ERROR(call, ...) \
  TYPEFLOW_CUDA_RETURN_IF_ERROR(blas_status((call), __VA_ARGS__))

// The largest power of two (at most 16) that divides an address: what cuBLASLt's heuristic may
// assume about a matrix (its default, 256, would pick algorithms a sub-tensor of an arena breaks).
std::uint32_t alignment_of(const void* p, std::int64_t batch_stride_bytes) {
  std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(p) | 16u;
  if (batch_stride_bytes != 0) bits |= static_cast<std::uintptr_t>(batch_stride_bytes);
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

cudaDataType_t data_type(elem e) {
  switch (e) {
    case elem::f16: return CUDA_R_16F;
    case elem::bf16: return CUDA_R_16BF;
    case elem::f64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

cublasComputeType_t compute_type(elem e, precision m) {
  if (e == elem::f64) return CUBLAS_COMPUTE_64F;
  if (e == elem::f32 && m == precision::tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  if (e == elem::f32 && m == precision::bf16) return CUBLAS_COMPUTE_32F_FAST_16BF;
  return CUBLAS_COMPUTE_32F;
}

cublasLtEpilogue_t to_cublas(epilogue e) {
  switch (e) {
    case epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case epilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case epilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case epilogue::gelu_tanh: return CUBLASLT_EPILOGUE_GELU;
    case epilogue::bias_gelu_tanh: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

std::int64_t packed_or(std::int64_t stride, std::int64_t packed) { return stride < 0 ? packed : stride; }

// Everything a cached plan depends on.
struct plan_key {
  elem type;
  precision math;
  epilogue post;
  bool transpose_a, transpose_b;
  std::int64_t batch, m, n, k, stride_a, stride_b, stride_out;
  std::uint32_t align_a, align_b, align_out, align_bias;

  friend bool operator==(const plan_key&, const plan_key&) = default;
};

struct plan_key_hash {
  std::size_t operator()(const plan_key& key) const noexcept {
    // FNV-1a over the fields (the struct has padding, so not over its bytes).
    std::size_t h = 1469598103934665603ull;
    const auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<std::uint64_t>(key.type) | static_cast<std::uint64_t>(key.math) << 8 |
        static_cast<std::uint64_t>(key.post) << 16 | static_cast<std::uint64_t>(key.transpose_a) << 24 |
        static_cast<std::uint64_t>(key.transpose_b) << 25);
    for (const std::int64_t v : {key.batch, key.m, key.n, key.k, key.stride_a, key.stride_b, key.stride_out})
      mix(static_cast<std::uint64_t>(v));
    mix(static_cast<std::uint64_t>(key.align_a) | static_cast<std::uint64_t>(key.align_b) << 16 |
        static_cast<std::uint64_t>(key.align_out) << 32 | static_cast<std::uint64_t>(key.align_bias) << 48);
    return h;
  }
};

// The descriptors and algorithm of one shape; owns its cuBLASLt objects.
struct plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_out = nullptr;  // cuBLASLt's A, B, D
  cublasLtMatmulAlgo_t algo{};

  plan() = default;
  plan(const plan&) = delete;
  plan& operator=(const plan&) = delete;
  ~plan() {
    if (layout_out != nullptr) cublasLtMatrixLayoutDestroy(layout_out);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

status make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                   std::int64_t ld, std::int64_t batch, std::int64_t stride, std::string_view which) {
  TYPEFLOW_BLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(layout, type, static_cast<std::uint64_t>(rows),
                                                           static_cast<std::uint64_t>(cols), ld),
                                "cublasLtMatrixLayoutCreate", which);
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    TYPEFLOW_BLAS_RETURN_IF_ERROR(
        cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
        "cublasLtMatrixLayoutSetAttribute", which, " batch count");
    TYPEFLOW_BLAS_RETURN_IF_ERROR(
        cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
        "cublasLtMatrixLayoutSetAttribute", which, " batch stride");
  }
  return ok_status();
}

} // namespace

struct blas_context::impl {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  std::unordered_map<plan_key, plan, plan_key_hash> plans;

  ~impl() {
    plans.clear();
    if (handle != nullptr) cublasLtDestroy(handle);
  }

  result<plan*> find_or_make(const plan_key& key, const void* bias, std::string_view op);
};

result<plan*> blas_context::impl::find_or_make(const plan_key& key, const void* bias, std::string_view op) {
  if (auto it = plans.find(key); it != plans.end()) return &it->second;
  auto [it, inserted] = plans.try_emplace(key);
  plan& p = it->second;
  auto fail = [&](status s) {
    plans.erase(it);
    return s.with_context(op);
  };
  const cudaDataType_t type = data_type(key.type);
  const cudaDataType_t scale = key.type == elem::f64 ? CUDA_R_64F : CUDA_R_32F;
  if (auto s = blas_status(cublasLtMatmulDescCreate(&p.desc, compute_type(key.type, key.math), scale),
                           "cublasLtMatmulDescCreate", to_string(key.type));
      !s.ok())
    return fail(s);
  const cublasOperation_t op_a = key.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our b
  const cublasOperation_t op_b = key.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto post = static_cast<std::uint32_t>(to_cublas(key.post));
  for (const auto& [attribute, value, bytes] :
       {std::tuple{CUBLASLT_MATMUL_DESC_TRANSA, static_cast<const void*>(&op_a), sizeof op_a},
        std::tuple{CUBLASLT_MATMUL_DESC_TRANSB, static_cast<const void*>(&op_b), sizeof op_b},
        std::tuple{CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<const void*>(&post), sizeof post}}) {
    if (auto s = blas_status(cublasLtMatmulDescSetAttribute(p.desc, attribute, value, bytes),
                             "cublasLtMatmulDescSetAttribute", static_cast<int>(attribute));
        !s.ok())
      return fail(s);
  }
  // The heuristic reads the bias pointer's alignment from the descriptor, so it is set before the
  // algorithm is chosen (the key holds that alignment; each call sets its own pointer).
  if (has_bias(key.post)) {
    if (auto s = blas_status(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                            sizeof bias),
                             "cublasLtMatmulDescSetAttribute", "bias");
        !s.ok())
      return fail(s);
  }
  // Column-major views: cuBLASLt's A = b stored [k, n] (or [n, k]), B = a stored [m, k] (or [k, m]).
  const std::int64_t m = key.m, n = key.n, k = key.k;
  status s = make_layout(&p.layout_a, type, key.transpose_b ? k : n, key.transpose_b ? n : k,
                         key.transpose_b ? k : n, key.batch, key.stride_b, "input 1");
  if (s.ok())
    s = make_layout(&p.layout_b, type, key.transpose_a ? m : k, key.transpose_a ? k : m, key.transpose_a ? m : k,
                    key.batch, key.stride_a, "input 0");
  if (s.ok()) s = make_layout(&p.layout_out, type, n, m, n, key.batch, key.stride_out, "the output");
  if (!s.ok()) return fail(s);

  cublasLtMatmulPreference_t preference = nullptr;
  if (auto e = blas_status(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate", op); !e.ok())
    return fail(e);
  const std::uint64_t workspace_limit = workspace_bytes;
  const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_out},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_out}};
  s = blas_status(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_limit, sizeof workspace_limit),
                  "cublasLtMatmulPreferenceSetAttribute", "workspace");
  for (const auto& [attribute, value] : aligns)
    if (s.ok())
      s = blas_status(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value),
                      "cublasLtMatmulPreferenceSetAttribute", "alignment");
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  if (s.ok())
    s = blas_status(cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.layout_a, p.layout_b, p.layout_out, p.layout_out,
                                                   preference, 1, &found, &count),
                    "cublasLtMatmulAlgoGetHeuristic", to_string(key.type), " [", m, ", ", k, "] x [", k, ", ", n, "]");
  cublasLtMatmulPreferenceDestroy(preference);
  if (!s.ok()) return fail(s);
  if (count == 0)
    return fail(errors::unimplemented("cuBLASLt has no algorithm for ", to_string(key.type), " [", m, ", ", k, "] x [",
                                      k, ", ", n, "] (batch ", key.batch, ") with this epilogue and ", workspace_bytes,
                                      " bytes of workspace"));
  p.algo = found.algo;
  return &p;
}

blas_context::blas_context(std::unique_ptr<impl> i) noexcept : impl_(std::move(i)) {}
blas_context::blas_context(blas_context&&) noexcept = default;
blas_context& blas_context::operator=(blas_context&&) noexcept = default;
blas_context::~blas_context() = default;

std::size_t blas_context::cached_plans() const noexcept { return impl_ ? impl_->plans.size() : 0; }

result<blas_context> blas_context::create(const stream& s, void* workspace, std::size_t workspace_bytes) {
  if (s.native() == nullptr) return errors::failed_precondition("blas_context::create with a moved-from stream");
  if (workspace == nullptr && workspace_bytes > 0)
    return errors::invalid_argument("blas_context::create: the workspace is null but has ", workspace_bytes, " bytes");
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    return errors::invalid_argument("blas_context::create: the workspace must be 256-byte aligned (cuBLAS's "
                                    "requirement), but its address is ", reinterpret_cast<std::uintptr_t>(workspace) % 256,
                                    " bytes past a multiple of 256");
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(s.ordinal()));
  auto state = std::make_unique<impl>();
  state->ordinal = s.ordinal();
  state->stream = static_cast<cudaStream_t>(s.native());
  state->workspace = workspace;
  state->workspace_bytes = workspace_bytes;
  TYPEFLOW_BLAS_RETURN_IF_ERROR(cublasLtCreate(&state->handle), "cublasLtCreate", "GPU:", s.ordinal());
  return blas_context(std::move(state));
}

status blas_context::bind(const stream& s, void* workspace, std::size_t workspace_bytes) {
  if (!impl_) return errors::failed_precondition("blas_context::bind on a moved-from context");
  if (s.native() == nullptr) return errors::failed_precondition("blas_context::bind to a moved-from stream");
  if (s.ordinal() != impl_->ordinal)
    return errors::invalid_argument("blas_context::bind: the context is on GPU:", impl_->ordinal, ", the stream on GPU:",
                                    s.ordinal());
  if (workspace_bytes < impl_->workspace_bytes || (workspace == nullptr && workspace_bytes > 0))
    return errors::invalid_argument("blas_context::bind: the workspace has ", workspace_bytes,
                                    " bytes, fewer than the ", impl_->workspace_bytes, " the context was made with");
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    return errors::invalid_argument("blas_context::bind: the workspace must be 256-byte aligned");
  impl_->stream = static_cast<cudaStream_t>(s.native());
  impl_->workspace = workspace;
  return ok_status();
}

result<std::size_t> recommended_workspace(int ordinal) {
  auto props = properties(ordinal);
  if (!props.ok()) return props.status();
  return std::size_t{props->compute_major >= 9 ? 32u : 4u} << 20;
}

status validate(const matmul_params& p, std::string_view op) {
  if (!is_valid(p.type) || !is_floating(p.type))
    return errors::invalid_argument(op, ": dtype ", is_valid(p.type) ? to_string(p.type) : "(invalid)",
                                    " is not supported by the GPU's matmul (f16, bf16, f32, f64)");
  if (p.math != precision::exact && p.type != elem::f32)
    return errors::invalid_argument(op, ": tf32 and bf16 precision apply to f32 data, not ", to_string(p.type));
  if (static_cast<int>(p.math) > 2) return errors::invalid_argument(op, ": invalid precision code ", static_cast<int>(p.math));
  if (static_cast<int>(p.post) > 5) return errors::invalid_argument(op, ": invalid epilogue code ", static_cast<int>(p.post));
  if (p.m < 0 || p.n < 0 || p.k < 0)
    return errors::invalid_argument(op, ": negative dimension in m = ", p.m, ", n = ", p.n, ", k = ", p.k);
  if (p.batch < 1 || p.batch > INT32_MAX)
    return errors::invalid_argument(op, ": batch ", p.batch, " is outside [1, 2^31 - 1]");
  constexpr std::int64_t limit = std::int64_t{1} << 31;
  if (p.m >= limit || p.n >= limit || p.k >= limit)
    return errors::invalid_argument(op, ": a dimension of [", p.m, ", ", p.k, "] x [", p.k, ", ", p.n,
                                    "] reaches 2^31, beyond cuBLASLt's leading dimensions");
  const std::int64_t mk = p.m * p.k, kn = p.k * p.n, mn = p.m * p.n;
  if (p.batch_stride_a < -1 || p.batch_stride_b < -1 || p.batch_stride_out < -1)
    return errors::invalid_argument(op, ": a batch stride is below -1 (-1 means packed)");
  if (p.batch > 1 && (p.batch_stride_a > 0 && p.batch_stride_a < mk))
    return errors::invalid_argument(op, ": the batch stride of input 0 (", p.batch_stride_a,
                                    ") is smaller than one matrix (", mk, " elements)");
  if (p.batch > 1 && (p.batch_stride_b > 0 && p.batch_stride_b < kn))
    return errors::invalid_argument(op, ": the batch stride of input 1 (", p.batch_stride_b,
                                    ") is smaller than one matrix (", kn, " elements)");
  if (p.batch > 1 && p.batch_stride_out >= 0 && p.batch_stride_out < mn)
    return errors::invalid_argument(op, ": the batch stride of the output (", p.batch_stride_out,
                                    ") is smaller than one matrix (", mn, " elements), so batches would overlap");
  if (mn > 0) {
    if (p.out == nullptr) return errors::invalid_argument(op, ": the output is null");
    if (p.k > 0 && (p.a == nullptr || p.b == nullptr))
      return errors::invalid_argument(op, ": input ", p.a == nullptr ? 0 : 1, " is null");
  }
  if (has_bias(p.post) && p.bias == nullptr && mn > 0)
    return errors::invalid_argument(op, ": the epilogue adds a bias, but the bias is null");
  if (!has_bias(p.post) && p.bias != nullptr)
    return errors::invalid_argument(op, ": a bias was given, but the epilogue does not add one");
  return ok_status();
}

namespace {

// out = post(0 [+ bias]) for a product over k = 0 (cuBLASLt rejects an empty inner dimension).
status empty_product(int ordinal, cudaStream_t s, const matmul_params& p, std::string_view op) {
  const std::int64_t stride = packed_or(p.batch_stride_out, p.m * p.n);
  const std::int64_t esize = static_cast<std::int64_t>(size_of(p.type));
  const std::int64_t mn = p.m * p.n;
  const std::int64_t out_dims[] = {p.m, p.n};
  const std::int64_t bias_dims[] = {p.n};
  auto layout = broadcast_layout(op, out_dims, bias_dims, out_dims);
  if (!layout.ok()) return layout.status();
  const bool relu = p.post == epilogue::relu || p.post == epilogue::bias_relu;
  const bool gelu = p.post == epilogue::gelu_tanh || p.post == epilogue::bias_gelu_tanh;
  for (std::int64_t i = 0; i < p.batch; ++i) {
    void* out = static_cast<char*>(p.out) + i * stride * esize;
    cudaError_t e = kernels::launch_fill(s, p.type, out, mn, 0.0);
    if (e == cudaSuccess && has_bias(p.post))
      e = kernels::launch_binary(s, binary_op::add, p.type, out, p.bias, out, *layout, nullptr);
    if (e == cudaSuccess && (relu || gelu))
      e = kernels::launch_unary(s, relu ? unary_op::relu : unary_op::gelu_tanh, p.type, out, out, mn, 0, 0);
    TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(e, "kernel launch", op, " with k = 0 on GPU:", ordinal));
  }
  return ok_status();
}

} // namespace

status matmul(blas_context& ctx, const matmul_params& p, std::string_view op) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p, op));
  if (!ctx.impl_) return errors::failed_precondition(op, ": matmul on a moved-from blas_context");
  auto& state = *ctx.impl_;
  if (p.m == 0 || p.n == 0) return ok_status();
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_device(state.ordinal));
  const std::int64_t esize = static_cast<std::int64_t>(size_of(p.type));
  plan_key key{};
  key.type = p.type;
  key.math = p.math;
  key.post = p.post;
  key.transpose_a = p.transpose_a;
  key.transpose_b = p.transpose_b;
  key.batch = p.batch;
  key.m = p.m;
  key.n = p.n;
  key.k = p.k;
  key.stride_a = p.batch > 1 ? packed_or(p.batch_stride_a, p.m * p.k) : 0;
  key.stride_b = p.batch > 1 ? packed_or(p.batch_stride_b, p.k * p.n) : 0;
  key.stride_out = p.batch > 1 ? packed_or(p.batch_stride_out, p.m * p.n) : 0;
  key.align_a = alignment_of(p.a, key.stride_a * esize);
  key.align_b = alignment_of(p.b, key.stride_b * esize);
  key.align_out = alignment_of(p.out, key.stride_out * esize);
  key.align_bias = has_bias(p.post) ? alignment_of(p.bias, 0) : 16;

  if (p.k == 0) return empty_product(state.ordinal, state.stream, p, op);

  auto found = state.find_or_make(key, p.bias, op);
  if (!found.ok()) return found.status();
  plan& pl = **found;
  if (has_bias(p.post)) {
    const void* bias = p.bias;
    TYPEFLOW_BLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
        "cublasLtMatmulDescSetAttribute", op, " bias");
  }
  const float alpha32 = 1, beta32 = 0;
  const double alpha64 = 1, beta64 = 0;
  const bool f64 = p.type == elem::f64;
  return blas_status(cublasLtMatmul(state.handle, pl.desc, f64 ? static_cast<const void*>(&alpha64) : &alpha32, p.b,
                                    pl.layout_a, p.a, pl.layout_b, f64 ? static_cast<const void*>(&beta64) : &beta32,
                                    p.out, pl.layout_out, p.out, pl.layout_out, &pl.algo, state.workspace,
                                    state.workspace_bytes, state.stream),
                     "cublasLtMatmul", op, ", ", to_string(p.type), " [", p.m, ", ", p.k, "] x [", p.k, ", ", p.n,
                     "], batch ", p.batch, ", GPU:", state.ordinal);
}

} // namespace typeflow::gpu
