// SPDX-License-Identifier: Apache-2.0
// Fused elementwise groups for the GPU on any machine: the program a static graph's fused tree
// becomes at compile time, the library's checks of a program, and NVRTC compiling the generated
// kernel for GPU architectures (NVRTC needs no device), for every op and dtype a group can hold.
#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

#include <typeflow/cuda/fused.hpp>
#include <typeflow/kernels/cuda/kernel_list.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
namespace gpu = tf::gpu;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tf::status_code;
using kind = gpu::fused_step::kind;
using namespace tf::literals;

namespace {

using registry = tf::registry<tf::cuda_kernel_list, tf::cpu_kernel_list>;

// relu(#0 + #1) * 0.5, #1 a row
using tree = tf::fused::binary<tf::ops::mul{},
                               tf::fused::unary<tf::ops::relu{}, tf::fused::binary<tf::ops::add{}, tf::fused::leaf<0, tf::fused::leaf_layout::full>,
                                                                                 tf::fused::leaf<1, tf::fused::leaf_layout::row>>>,
                               tf::fused::constant<0.5>>;
constexpr auto program = tf::cuda_kernels::fused_program<tree>;
static_assert(program.size() == 6);
static_assert(program[0].what == kind::load && program[0].input == 0 && program[0].layout == gpu::fused_layout::full);
static_assert(program[1].what == kind::load && program[1].input == 1 && program[1].layout == gpu::fused_layout::row);
static_assert(program[2].what == kind::binary && program[2].binary == gpu::binary_op::add);
static_assert(program[3].what == kind::unary && program[3].unary == gpu::unary_op::relu);
static_assert(program[4].what == kind::constant && program[4].a == 0.5);
static_assert(program[5].what == kind::binary && program[5].binary == gpu::binary_op::mul);
static_assert(tf::fused::leaf_count<tree> == 2);
static_assert(tf::fused::leaf_layouts<tree>[1] == tf::fused::leaf_layout::row);

// An op's attributes travel in the step: leaky_relu's alpha, clip's bounds, gelu's approximation.
using attributed = tf::fused::unary<tf::ops::clip{.min = -1.5, .max = 2.0},
                                    tf::fused::unary<tf::ops::gelu{.approximate = true},
                                                     tf::fused::unary<tf::ops::leaky_relu{.alpha = 0.25},
                                                                      tf::fused::leaf<0, tf::fused::leaf_layout::scalar>>>>;
constexpr auto attributed_program = tf::cuda_kernels::fused_program<attributed>;
static_assert(attributed_program[0].layout == gpu::fused_layout::scalar);
static_assert(attributed_program[1].unary == gpu::unary_op::leaky_relu && attributed_program[1].a == 0.25);
static_assert(attributed_program[2].unary == gpu::unary_op::gelu_tanh);
static_assert(attributed_program[3].unary == gpu::unary_op::clip && attributed_program[3].a == -1.5 &&
              attributed_program[3].b == 2.0);

// The GPU has the fused kernel for every float dtype, so a static plan on it fuses.
static_assert(registry::has_kernel<tf::ops::fused_elementwise<tree>, tf::cuda<0>, float>);
static_assert(registry::has_kernel<tf::ops::fused_elementwise<tree>, tf::cuda<1>, Eigen::bfloat16>);
static_assert(tf::fuses_by_default<tf::cuda<0>>);

gpu::fused_step load(std::uint16_t input, gpu::fused_layout layout = gpu::fused_layout::full) {
  return {.what = kind::load, .layout = layout, .input = input};
}
gpu::fused_step unary(gpu::unary_op op, double a = 0, double b = 0) {
  return {.what = kind::unary, .unary = op, .a = a, .b = b};
}
gpu::fused_step binary(gpu::binary_op op) { return {.what = kind::binary, .binary = op}; }
gpu::fused_step constant(double v) { return {.what = kind::constant, .a = v}; }

void require_invalid(const tf::status& s, const std::string& part) {
  INFO(s.to_string());
  REQUIRE(s.code() == status_code::invalid_argument);
  CHECK_THAT(std::string(s.message()), Contains("fused_elementwise") && Contains(part));
}

} // namespace

TEST_CASE("a static plan on cuda<0> fuses its elementwise chains into one group") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 3>>;
  constexpr auto b = tf::variable<"b", float, tf::static_shape<3>>;
  constexpr auto y = tf::relu(x + b) * x * 0.5_c;
  using g = decltype(tf::graph(y));
  const std::string plan = tf::session<g, tf::cuda<0>, registry>::describe_plan(tf::fetch(y));
  INFO(plan);
  CHECK_THAT(plan, Contains("[fused: 4 ops, inputs 0 1]"));
}

TEST_CASE("a fused program is checked before anything is compiled or launched") {
  const std::vector<gpu::fused_step> good{load(0), load(1, gpu::fused_layout::row), binary(gpu::binary_op::add),
                                          unary(gpu::unary_op::exp)};
  CHECK(gpu::validate_program(good, gpu::elem::f32, 2).ok());
  CHECK(gpu::validate_program(good, gpu::elem::bf16, 2).ok());

  require_invalid(gpu::validate_program(good, gpu::elem::i32, 2), "not a floating dtype");
  require_invalid(gpu::validate_program({}, gpu::elem::f32, 1), "0 steps");
  require_invalid(gpu::validate_program(good, gpu::elem::f32, 0), "0 inputs");
  require_invalid(gpu::validate_program(good, gpu::elem::f32, gpu::max_fused_inputs + 1), "1 to 64");
  require_invalid(gpu::validate_program(good, gpu::elem::f32, 3), "input 2 is never loaded");
  require_invalid(gpu::validate_program(good, gpu::elem::f32, 1), "step 1 (load of input 1) names input 1 of 1");

  const std::vector<gpu::fused_step> underflow{load(0), binary(gpu::binary_op::mul)};
  require_invalid(gpu::validate_program(underflow, gpu::elem::f32, 1), "step 1 (mul) has fewer than two operands");
  const std::vector<gpu::fused_step> no_operand{unary(gpu::unary_op::neg)};
  require_invalid(gpu::validate_program(no_operand, gpu::elem::f32, 1), "step 0 (neg) has no operand");
  const std::vector<gpu::fused_step> leftover{load(0), load(0)};
  require_invalid(gpu::validate_program(leftover, gpu::elem::f32, 1), "leaves 2 values");
  const std::vector<gpu::fused_step> two_layouts{load(0), load(0, gpu::fused_layout::scalar), binary(gpu::binary_op::add)};
  require_invalid(gpu::validate_program(two_layouts, gpu::elem::f32, 1), "another layout");
  const std::vector<gpu::fused_step> comparison{load(0), load(0), binary(gpu::binary_op::less)};
  require_invalid(gpu::validate_program(comparison, gpu::elem::f32, 1), "step 2 (less) is not an arithmetic binary op");
  std::vector<gpu::fused_step> bad_code{load(0), unary(gpu::unary_op::neg)};
  bad_code[1].unary = static_cast<gpu::unary_op>(200);
  require_invalid(gpu::validate_program(bad_code, gpu::elem::f32, 1), "step 1 (invalid) is not a unary op of f32");
  std::vector<gpu::fused_step> bad_kind{load(0)};
  bad_kind[0].what = static_cast<kind>(9);
  require_invalid(gpu::validate_program(bad_kind, gpu::elem::f32, 1), "invalid kind");
  std::vector<gpu::fused_step> bad_layout{load(0)};
  bad_layout[0].layout = static_cast<gpu::fused_layout>(7);
  require_invalid(gpu::validate_program(bad_layout, gpu::elem::f32, 1), "invalid layout code 7");

  // The data: pointers, the output's size and its last dimension.
  float a = 0, r = 0;
  std::array<const void*, 2> inputs{&a, &r};
  gpu::fused_params p{.program = good, .type = gpu::elem::f32, .inputs = inputs, .out = &a, .size = 6, .inner = 3};
  CHECK(gpu::validate(p).ok());
  p.inner = 4;
  require_invalid(gpu::validate(p), "last dimension 4 does not divide its 6 elements");
  p.inner = 0;
  require_invalid(gpu::validate(p), "last dimension 0");
  p.inner = 3;
  p.size = -3;
  require_invalid(gpu::validate(p), "negative size");
  p.size = 6;
  p.out = nullptr;
  require_invalid(gpu::validate(p), "the output is null");
  p.out = &a;
  inputs[1] = nullptr;
  require_invalid(gpu::validate(p), "input 1 is null");
  p.size = 0;  // nothing to read or write: null pointers are fine
  p.out = nullptr;
  CHECK(gpu::validate(p).ok());
}

TEST_CASE("the generated kernel reads each input once per element, with its layout, and keeps constants exact") {
  const std::vector<gpu::fused_step> p{load(0), load(1, gpu::fused_layout::row), load(2, gpu::fused_layout::scalar),
                                       binary(gpu::binary_op::mul), binary(gpu::binary_op::add), constant(0.1),
                                       binary(gpu::binary_op::maximum), unary(gpu::unary_op::leaky_relu, 0.25)};
  auto source = gpu::fused_source(p, gpu::elem::f16, 3);
  REQUIRE(source.ok());
  INFO(*source);
  CHECK_THAT(*source, Contains("extern \"C\" __global__"));
  CHECK_THAT(*source, Contains("typeflow_fused(const unsigned short* in0, const unsigned short* in1, const unsigned short* in2, "
                               "unsigned short* out, long long size, long long inner)"));
  CHECK_THAT(*source, Contains("typeflow_float_ops::from_f16(in0[i])"));
  CHECK_THAT(*source, Contains("typeflow_float_ops::from_f16(in1[i % (unsigned)inner])"));
  CHECK_THAT(*source, Contains("typeflow_float_ops::from_f16(in2[0])"));
  CHECK_THAT(*source, Contains("0x3fb999999999999aLL"));  // 0.1 as its bits
  CHECK_THAT(*source, Contains("typeflow_float_ops::leaky_relu(v6, k1)"));
  CHECK_THAT(*source, Contains("out[i] = typeflow_float_ops::to_f16(v7)"));
  // The formulas are the unfused kernels' (float_ops.cuh), compiled in front of the kernel.
  CHECK_THAT(*source, StartsWith("// SPDX-License-Identifier") && Contains("namespace typeflow_float_ops"));

  auto bad = gpu::fused_source(std::vector<gpu::fused_step>{load(0), load(1)}, gpu::elem::f32, 2);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == status_code::invalid_argument);
}

TEST_CASE("NVRTC compiles every unary and binary op of a group, for every float dtype, without a device") {
  // One program that uses every op: unary ops in a chain, then each arithmetic binary op against a row.
  std::vector<gpu::fused_step> p{load(0)};
  for (int u = 0; u < gpu::num_unary_ops; ++u) p.push_back(unary(static_cast<gpu::unary_op>(u), 0.5, 1.5));
  for (int b = 0; b < gpu::num_binary_ops; ++b) {
    if (gpu::is_comparison(static_cast<gpu::binary_op>(b))) continue;
    p.push_back(load(1, gpu::fused_layout::row));
    p.push_back(binary(static_cast<gpu::binary_op>(b)));
  }
  p.push_back(constant(-0.0));
  p.push_back(binary(gpu::binary_op::sub));
  for (const gpu::elem e : {gpu::elem::f32, gpu::elem::f64, gpu::elem::f16, gpu::elem::bf16}) {
    for (const int arch : {75, 80, 90, 120}) {
      auto image = gpu::compile_fused(p, e, 2, arch);
      INFO(gpu::to_string(e) << " sm_" << arch << ": " << (image.ok() ? "" : image.status().to_string()));
      REQUIRE(image.ok());
      CHECK(image->size() > 1000);
    }
  }
}

TEST_CASE("compile_fused targets the architecture asked for, PTX for one newer than NVRTC knows") {
  const std::vector<gpu::fused_step> p{load(0), unary(gpu::unary_op::tanh)};
  auto cubin = gpu::compile_fused(p, gpu::elem::f32, 1, 90);
  REQUIRE(cubin.ok());
  CHECK(std::string(cubin->data(), 4) == "\x7f" "ELF");
  auto ptx = gpu::compile_fused(p, gpu::elem::f32, 1, 990);  // a compute capability 99.0 of the future
  REQUIRE(ptx.ok());
  CHECK_THAT(std::string(ptx->data()), Contains(".target sm_") && Contains(".entry typeflow_fused"));
  auto old = gpu::compile_fused(p, gpu::elem::f32, 1, 50);
  require_invalid(old.status(), "compute capability 5.0 is older than any NVRTC compiles for");
  CHECK(gpu::compile_fused(std::vector<gpu::fused_step>{}, gpu::elem::f32, 1, 90).status().code() ==
        status_code::invalid_argument);
}
