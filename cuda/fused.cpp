// SPDX-License-Identifier: Apache-2.0
// Fused elementwise kernels (include/typeflow/cuda/fused.hpp): the program checked, written as CUDA
// C++ after kernels/float_ops.cuh (the unfused kernels' formulas), compiled by NVRTC for the device's
// architecture, loaded with cudaLibraryLoadData and kept per (program, dtype, device) for the life
// of the process, like PyTorch's and XLA's kernel caches. The compiled kernels are never unloaded:
// a kernel may be enqueued until the process ends, and the driver frees them with the context.
#include <typeflow/cuda/fused.hpp>

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "detail/check.hpp"
#include "detail/dims.hpp"

namespace typeflow::gpu {

namespace {

#include "float_ops_source.inc"

using typeflow::detail::cat;

constexpr std::string_view op_name = "fused_elementwise";

// "step 3 (unary exp)"
typeflow::detail::text step_text(std::span<const fused_step> program, std::size_t i) {
  const fused_step& s = program[i];
  switch (s.what) {
    case fused_step::kind::load: return cat("step ", static_cast<long long>(i), " (load of input ", static_cast<int>(s.input), ")");
    case fused_step::kind::constant: return cat("step ", static_cast<long long>(i), " (constant)");
    case fused_step::kind::unary: return cat("step ", static_cast<long long>(i), " (", to_string(s.unary), ")");
    case fused_step::kind::binary: return cat("step ", static_cast<long long>(i), " (", to_string(s.binary), ")");
  }
  return cat("step ", static_cast<long long>(i), " (kind ", static_cast<int>(s.what), ")");
}

// The C++ type of an element and of its arithmetic in the generated source; f16 and bf16 as their bits.
struct type_names {
  std::string_view storage, compute, load, store;  // load/store: "" for a plain conversion
};

type_names names_of(elem type) {
  switch (type) {
    case elem::f16: return {"unsigned short", "float", "typeflow_float_ops::from_f16", "typeflow_float_ops::to_f16"};
    case elem::bf16: return {"unsigned short", "float", "typeflow_float_ops::from_bf16", "typeflow_float_ops::to_bf16"};
    case elem::f64: return {"double", "double", "", ""};
    default: return {"float", "float", "", ""};
  }
}

// A double as an exact expression of the compute type: its bits, so NaN, infinities and every
// fraction survive the text.
std::string literal(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "(C)__longlong_as_double(0x%016llxLL)", static_cast<unsigned long long>(bits));
  return buffer;
}

// The op codes the generated source names (float_ops.cuh has a function of each name).
constexpr bool fusable(unary_op op) noexcept { return static_cast<int>(op) < num_unary_ops; }
constexpr bool fusable(binary_op op) noexcept { return static_cast<int>(op) < num_binary_ops && !is_comparison(op); }

constexpr bool takes_alpha(unary_op op) noexcept {
  return op == unary_op::leaky_relu || op == unary_op::hard_sigmoid || op == unary_op::clip;
}
constexpr bool takes_beta(unary_op op) noexcept { return op == unary_op::hard_sigmoid || op == unary_op::clip; }

// The body of the element loop for index type `index`: loads, the steps, the store.
void append_loop(std::string& out, std::span<const fused_step> program, int num_inputs, const type_names& t,
                 std::string_view index) {
  const std::string ix(index);
  out += "  for (" + ix + " i = (" + ix + ")blockIdx.x * blockDim.x + threadIdx.x; i < (" + ix + ")size; i += (" + ix +
         ")blockDim.x * gridDim.x) {\n";
  std::array<fused_layout, max_fused_inputs> layouts{};
  for (const fused_step& s : program)
    if (s.what == fused_step::kind::load) layouts[s.input] = s.layout;
  for (int k = 0; k < num_inputs; ++k) {
    const std::string at = layouts[k] == fused_layout::full  ? "i"
                           : layouts[k] == fused_layout::row ? "i % (" + ix + ")inner"
                                                              : "0";
    const std::string element = "in" + std::to_string(k) + "[" + at + "]";
    out += "    const C x" + std::to_string(k) + " = ";
    out += t.load.empty() ? "(C)" + element : std::string(t.load) + "(" + element + ")";
    out += ";\n";
  }
  // Each step's value is a named constant; the stack holds their names.
  std::vector<std::string> stack;
  int constants = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const fused_step& s = program[i];
    const std::string v = "v" + std::to_string(i);
    switch (s.what) {
      case fused_step::kind::load: stack.push_back("x" + std::to_string(s.input)); continue;
      case fused_step::kind::constant: stack.push_back("k" + std::to_string(constants++)); continue;
      case fused_step::kind::unary: {
        std::string call = "typeflow_float_ops::" + std::string(to_string(s.unary)) + "(" + stack.back();
        if (takes_alpha(s.unary)) call += ", k" + std::to_string(constants++);
        if (takes_beta(s.unary)) call += ", k" + std::to_string(constants++);
        out += "    const C " + v + " = " + call + ");\n";
        stack.back() = v;
        continue;
      }
      case fused_step::kind::binary: {
        const std::string b = std::move(stack.back());
        stack.pop_back();
        out += "    const C " + v + " = typeflow_float_ops::" + std::string(to_string(s.binary)) + "(" + stack.back() +
               ", " + b + ");\n";
        stack.back() = v;
        continue;
      }
    }
  }
  if (t.store.empty()) out += "    out[i] = (" + std::string(t.storage) + ")" + stack.back() + ";\n";
  else out += "    out[i] = " + std::string(t.store) + "(" + stack.back() + ");\n";
  out += "  }\n";
}

std::string source_of(std::span<const fused_step> program, elem type, int num_inputs) {
  const type_names t = names_of(type);
  std::string out = float_ops_source;
  out += "\n// The fused kernel: ";
  out += std::to_string(program.size()) + " steps over " + std::to_string(num_inputs) + " inputs of " +
         std::string(to_string(type)) + ".\n";
  out += "typedef " + std::string(t.compute) + " C;\n";
  out += "extern \"C\" __global__ void __launch_bounds__(256) typeflow_fused(";
  for (int k = 0; k < num_inputs; ++k) out += "const " + std::string(t.storage) + "* in" + std::to_string(k) + ", ";
  out += std::string(t.storage) + "* out, long long size, long long inner) {\n";
  // Constants and attributes, in the order the loop names them (k0, k1, ...).
  int constants = 0;
  for (const fused_step& s : program) {
    if (s.what == fused_step::kind::constant)
      out += "  const C k" + std::to_string(constants++) + " = " + literal(s.a) + ";\n";
    if (s.what == fused_step::kind::unary && takes_alpha(s.unary))
      out += "  const C k" + std::to_string(constants++) + " = " + literal(s.a) + ";\n";
    if (s.what == fused_step::kind::unary && takes_beta(s.unary))
      out += "  const C k" + std::to_string(constants++) + " = " + literal(s.b) + ";\n";
  }
  out += "  (void)inner;\n";
  // 32-bit indices where they reach (their division by `inner` is several times cheaper).
  out += "  if (size <= 0x7fffffffLL) {\n";
  append_loop(out, program, num_inputs, t, "unsigned");
  out += "  } else {\n";
  append_loop(out, program, num_inputs, t, "long long");
  out += "  }\n}\n";
  return out;
}

// NVRTC's result as a status naming the call.
status nvrtc_status(nvrtcResult r, std::string_view call) {
  if (r == NVRTC_SUCCESS) return ok_status();
  return errors::internal(op_name, ": ", call, ": ", nvrtcGetErrorString(r));
}

// The architectures this NVRTC compiles for, ascending.
const std::vector<int>& supported_archs() {
  static const std::vector<int> archs = [] {
    std::vector<int> a;
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
      a.resize(static_cast<std::size_t>(n));
      if (nvrtcGetSupportedArchs(a.data()) != NVRTC_SUCCESS) a.clear();
    }
    std::sort(a.begin(), a.end());
    return a;
  }();
  return archs;
}

struct nvrtc_program {
  nvrtcProgram handle = nullptr;
  ~nvrtc_program() {
    if (handle != nullptr) (void)nvrtcDestroyProgram(&handle);
  }
};

// One compiled kernel of the cache; the mutex is held while it compiles, so that two threads that
// want one program compile it once.
struct cached_kernel {
  std::mutex mutex;
  bool tried = false;
  status error;
  cudaKernel_t kernel = nullptr;
};

struct kernel_cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<cached_kernel>> kernels;  // entries are never erased
};

kernel_cache& cache() {
  static auto* c = new kernel_cache;  // never destroyed: kernels may be enqueued during exit
  return *c;
}

// The cache key: the program's steps field by field, the dtype, the inputs and the device.
std::string key_of(std::span<const fused_step> program, elem type, int num_inputs, int ordinal) {
  std::string key;
  key.reserve(program.size() * 24 + 16);
  const auto put = [&](const void* p, std::size_t n) { key.append(static_cast<const char*>(p), n); };
  const auto t = static_cast<unsigned char>(type);
  put(&t, 1);
  put(&num_inputs, sizeof num_inputs);
  put(&ordinal, sizeof ordinal);
  for (const fused_step& s : program) {
    const unsigned char fields[5] = {static_cast<unsigned char>(s.what), static_cast<unsigned char>(s.layout),
                                     static_cast<unsigned char>(s.unary), static_cast<unsigned char>(s.binary), 0};
    put(fields, sizeof fields);
    put(&s.input, sizeof s.input);
    put(&s.a, sizeof s.a);
    put(&s.b, sizeof s.b);
  }
  return key;
}

result<cudaKernel_t> kernel_for(std::span<const fused_step> program, elem type, int num_inputs, int ordinal) {
  kernel_cache& c = cache();
  cached_kernel* entry;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto& slot = c.kernels[key_of(program, type, num_inputs, ordinal)];
    if (!slot) slot = std::make_unique<cached_kernel>();
    entry = slot.get();
  }
  std::lock_guard<std::mutex> lock(entry->mutex);
  if (!entry->tried) {
    entry->tried = true;
    entry->error = [&]() -> status {
      int major = 0, minor = 0;
      TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
          cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal), "cudaDeviceGetAttribute", "GPU:", ordinal));
      TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
          cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal), "cudaDeviceGetAttribute", "GPU:", ordinal));
      auto image = compile_fused(program, type, num_inputs, major * 10 + minor);
      if (!image.ok()) return image.status();
      cudaLibrary_t library = nullptr;
      TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::cuda_status(
          cudaLibraryLoadData(&library, image->data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData",
          op_name, " on GPU:", ordinal));
      return detail::cuda_status(cudaLibraryGetKernel(&entry->kernel, library, "typeflow_fused"), "cudaLibraryGetKernel",
                                 op_name, " on GPU:", ordinal);
    }();
  }
  if (!entry->error.ok()) return entry->error;
  return entry->kernel;
}

} // namespace

status validate_program(std::span<const fused_step> program, elem type, int num_inputs) {
  if (!is_valid(type) || !is_floating(type))
    return errors::invalid_argument(op_name, ": dtype ", to_string(type), " is not a floating dtype (f16, bf16, f32, f64)");
  if (num_inputs < 1 || num_inputs > max_fused_inputs)
    return errors::invalid_argument(op_name, ": ", num_inputs, " inputs; a fused kernel takes 1 to ", max_fused_inputs);
  if (program.empty() || program.size() > static_cast<std::size_t>(max_fused_steps))
    return errors::invalid_argument(op_name, ": a program of ", static_cast<long long>(program.size()),
                                    " steps; a fused kernel runs 1 to ", max_fused_steps);
  std::array<int, max_fused_inputs> layout_of;
  layout_of.fill(-1);
  std::size_t depth = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const fused_step& s = program[i];
    switch (s.what) {
      case fused_step::kind::load:
        if (s.input >= num_inputs)
          return errors::invalid_argument(op_name, ": ", step_text(program, i), " names input ", static_cast<int>(s.input), " of ",
                                          num_inputs);
        if (static_cast<int>(s.layout) > static_cast<int>(fused_layout::scalar))
          return errors::invalid_argument(op_name, ": ", step_text(program, i), " has the invalid layout code ",
                                          static_cast<int>(s.layout));
        if (layout_of[s.input] >= 0 && layout_of[s.input] != static_cast<int>(s.layout))
          return errors::invalid_argument(op_name, ": ", step_text(program, i),
                                          " reads the input with another layout than an earlier load of it");
        layout_of[s.input] = static_cast<int>(s.layout);
        ++depth;
        break;
      case fused_step::kind::constant: ++depth; break;
      case fused_step::kind::unary:
        if (!fusable(s.unary) || !accepts(s.unary, type))
          return errors::invalid_argument(op_name, ": ", step_text(program, i), " is not a unary op of ", to_string(type));
        if (depth < 1) return errors::invalid_argument(op_name, ": ", step_text(program, i), " has no operand");
        break;
      case fused_step::kind::binary:
        if (!fusable(s.binary) || !accepts(s.binary, type))
          return errors::invalid_argument(op_name, ": ", step_text(program, i), " is not an arithmetic binary op of ",
                                          to_string(type));
        if (depth < 2) return errors::invalid_argument(op_name, ": ", step_text(program, i), " has fewer than two operands");
        --depth;
        break;
      default:
        return errors::invalid_argument(op_name, ": ", step_text(program, i), " has an invalid kind");
    }
  }
  if (depth != 1)
    return errors::invalid_argument(op_name, ": the program leaves ", static_cast<long long>(depth),
                                    " values, not one (the output)");
  for (int k = 0; k < num_inputs; ++k)
    if (layout_of[k] < 0) return errors::invalid_argument(op_name, ": input ", k, " is never loaded");
  return ok_status();
}

status validate(const fused_params& p) {
  if (p.inputs.size() > static_cast<std::size_t>(max_fused_inputs))
    return errors::invalid_argument(op_name, ": ", static_cast<long long>(p.inputs.size()), " inputs; a fused kernel takes 1 to ",
                                    max_fused_inputs);
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate_program(p.program, p.type, static_cast<int>(p.inputs.size())));
  if (p.size < 0) return errors::invalid_argument(op_name, ": the output has a negative size ", static_cast<long long>(p.size));
  if (p.inner < 1 || p.size % p.inner != 0)
    return errors::invalid_argument(op_name, ": the output's last dimension ", static_cast<long long>(p.inner),
                                    " does not divide its ", static_cast<long long>(p.size), " elements");
  if (p.size == 0) return ok_status();
  if (p.out == nullptr) return errors::invalid_argument(op_name, ": the output is null but has ", static_cast<long long>(p.size), " elements");
  for (std::size_t k = 0; k < p.inputs.size(); ++k)
    if (p.inputs[k] == nullptr) return errors::invalid_argument(op_name, ": input ", static_cast<long long>(k), " is null");
  return ok_status();
}

result<std::string> fused_source(std::span<const fused_step> program, elem type, int num_inputs) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate_program(program, type, num_inputs));
  return source_of(program, type, num_inputs);
}

result<std::vector<char>> compile_fused(std::span<const fused_step> program, elem type, int num_inputs, int arch) {
  auto source = fused_source(program, type, num_inputs);
  if (!source.ok()) return source.status();
  const std::vector<int>& archs = supported_archs();
  if (archs.empty()) return errors::internal(op_name, ": NVRTC reports no GPU architecture it compiles for");
  // The device's own architecture as machine code; a newer one than NVRTC knows as PTX of the newest
  // it does know, which the driver compiles on load.
  const bool native = std::binary_search(archs.begin(), archs.end(), arch);
  const auto older = std::upper_bound(archs.begin(), archs.end(), arch);
  if (!native && older == archs.begin())
    return errors::invalid_argument(op_name, ": compute capability ", arch / 10, ".", arch % 10,
                                    " is older than any NVRTC compiles for (the oldest is ", archs.front() / 10, ".",
                                    archs.front() % 10, ")");
  const int target = native ? arch : *(older - 1);
  const std::string arch_option = (native ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") + std::to_string(target);
  const char* options[] = {arch_option.c_str(), "--std=c++17"};

  nvrtc_program program_handle;
  TYPEFLOW_CUDA_RETURN_IF_ERROR(nvrtc_status(
      nvrtcCreateProgram(&program_handle.handle, source->c_str(), "typeflow_fused.cu", 0, nullptr, nullptr),
      "nvrtcCreateProgram"));
  const nvrtcResult compiled = nvrtcCompileProgram(program_handle.handle, 2, options);
  if (compiled != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(program_handle.handle, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      if (nvrtcGetProgramLog(program_handle.handle, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    return errors::internal(op_name, ": NVRTC did not compile the generated kernel for ", arch_option.substr(19), " (",
                            nvrtcGetErrorString(compiled), "): ", log);
  }
  std::size_t size = 0;
  std::vector<char> image;
  if (native) {
    TYPEFLOW_CUDA_RETURN_IF_ERROR(nvrtc_status(nvrtcGetCUBINSize(program_handle.handle, &size), "nvrtcGetCUBINSize"));
    image.resize(size);
    TYPEFLOW_CUDA_RETURN_IF_ERROR(nvrtc_status(nvrtcGetCUBIN(program_handle.handle, image.data()), "nvrtcGetCUBIN"));
  } else {
    TYPEFLOW_CUDA_RETURN_IF_ERROR(nvrtc_status(nvrtcGetPTXSize(program_handle.handle, &size), "nvrtcGetPTXSize"));
    image.resize(size);
    TYPEFLOW_CUDA_RETURN_IF_ERROR(nvrtc_status(nvrtcGetPTX(program_handle.handle, image.data()), "nvrtcGetPTX"));
  }
  return image;
}

status fused_elementwise(const stream& s, const fused_params& p) {
  TYPEFLOW_CUDA_RETURN_IF_ERROR(validate(p));
  TYPEFLOW_CUDA_RETURN_IF_ERROR(detail::use_stream(s, op_name));
  if (p.size == 0) return ok_status();
  auto kernel = kernel_for(p.program, p.type, static_cast<int>(p.inputs.size()), s.ordinal());
  if (!kernel.ok()) return kernel.status();
  // The kernel's parameters: each input pointer, the output, the size, inner.
  std::array<const void*, max_fused_inputs> inputs{};
  std::array<void*, max_fused_inputs + 3> args{};
  for (std::size_t k = 0; k < p.inputs.size(); ++k) {
    inputs[k] = p.inputs[k];
    args[k] = &inputs[k];
  }
  void* out = p.out;
  long long size = p.size, inner = p.inner;
  args[p.inputs.size()] = &out;
  args[p.inputs.size() + 1] = &size;
  args[p.inputs.size() + 2] = &inner;
  const std::int64_t blocks = std::min<std::int64_t>((p.size - 1) / 256 + 1, 65536);  // p.size > 0
  return detail::launched(cudaLaunchKernel(reinterpret_cast<const void*>(*kernel), dim3(static_cast<unsigned>(blocks)),
                                           dim3(256), args.data(), 0, static_cast<cudaStream_t>(s.native())),
                          op_name, s);
}

std::size_t fused_kernels_compiled() {
  kernel_cache& c = cache();
  std::size_t n = 0;
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& [key, entry] : c.kernels) {
    std::lock_guard<std::mutex> entry_lock(entry->mutex);
    n += entry->tried && entry->error.ok() ? 1 : 0;
  }
  return n;
}

} // namespace typeflow::gpu
