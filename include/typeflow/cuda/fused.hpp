// SPDX-License-Identifier: Apache-2.0
// Fused elementwise kernels: a tree of unary and binary elementwise ops over several inputs, run as
// one kernel that reads each input once and writes the output once. The tree comes as a program of
// steps in postfix order (kernels/cuda/fused.hpp makes it from a static graph's fused_elementwise
// tree at compile time). The library writes the program as CUDA C++ (fused_source), compiles it
// with NVRTC for the device's architecture the first time the program, dtype and device are seen,
// and keeps the compiled kernel for the life of the process; a user's code never goes through nvcc.
// The op formulas are those of the unfused kernels (elementwise.hpp), from the same source.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <typeflow/core/status.hpp>
#include <typeflow/cuda/api.hpp>
#include <typeflow/cuda/ops.hpp>
#include <typeflow/cuda/runtime.hpp>

namespace typeflow::gpu {

// How an input covers the output: every element (full), the output's last dimension repeated over
// its rows (row: `inner` elements), or one value (scalar).
enum class fused_layout : std::uint8_t { full, row, scalar };

// One step of a program. load pushes input `input` (read as `layout` says); constant pushes `a`;
// unary pops x and pushes unary(x) (a and b are the op's alpha and beta, see unary_op); binary pops
// b, then a, and pushes binary(a, b). The program leaves one value: the output element.
struct fused_step {
  enum class kind : std::uint8_t { load, constant, unary, binary };
  kind what = kind::load;
  fused_layout layout = fused_layout::full;  // load
  std::uint16_t input = 0;                   // load
  unary_op unary = unary_op::neg;            // unary
  binary_op binary = binary_op::add;         // binary: arithmetic only, not a comparison
  double a = 0;                              // constant: the value; unary: alpha
  double b = 0;                              // unary: beta
};

// At most this many inputs and steps (a static graph's fused group has at most 24 ops).
inline constexpr int max_fused_inputs = 64;
inline constexpr int max_fused_steps = 1024;

struct fused_params {
  std::span<const fused_step> program;
  elem type = elem::f32;                   // of every input and the output: f16, bf16, f32 or f64
  std::span<const void* const> inputs;     // device memory; input i as every load of i says
  void* out = nullptr;                     // `size` elements; may be a full input
  std::int64_t size = 0;                   // elements of the output
  std::int64_t inner = 1;                  // the output's last dimension (1 for a scalar output)
};

// Checks a program alone: steps that keep the stack non-empty and end with one value, op codes the
// dtype accepts, inputs numbered below `num_inputs` and each loaded with one layout, every input
// loaded. invalid_argument naming the step otherwise.
TYPEFLOW_CUDA_API status validate_program(std::span<const fused_step> program, elem type, int num_inputs);
// validate_program, and the data: non-null pointers for a non-empty output, inner >= 1 dividing size.
TYPEFLOW_CUDA_API status validate(const fused_params& p);

// The CUDA C++ source of the program's kernel for `type` (one extern "C" kernel, typeflow_fused,
// taking the inputs in order, then the output, the size and inner), as fused_elementwise compiles it.
TYPEFLOW_CUDA_API result<std::string> fused_source(std::span<const fused_step> program, elem type, int num_inputs);

// Compiles the program with NVRTC for compute capability `arch` (75 for sm_75 ... 120): the cubin, or
// PTX where this NVRTC does not know `arch` but knows an older one. Needs no device: it is what
// fused_elementwise does on first use, and a way to check a program ahead of time.
// internal with NVRTC's log when NVRTC refuses the source.
TYPEFLOW_CUDA_API result<std::vector<char>> compile_fused(std::span<const fused_step> program, elem type, int num_inputs,
                                                         int arch);

// Enqueues the program on `s` as one kernel over the output (compiled on first use, as above).
TYPEFLOW_CUDA_API status fused_elementwise(const stream& s, const fused_params& p);

// How many distinct (program, dtype, device) kernels this process has compiled so far.
TYPEFLOW_CUDA_API std::size_t fused_kernels_compiled();

} // namespace typeflow::gpu
