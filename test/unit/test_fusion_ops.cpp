// SPDX-License-Identifier: Apache-2.0
// Fusion: more random expressions on the calling thread, and the ops the random trees leave out
// (exp, log, sqrt, rsqrt, div, pow) on inputs where they are defined and well conditioned.
#include "fusion_support.hpp"

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using namespace tf::test::fusion;

TEST_CASE("fusion: more random expressions on the calling thread", "[fusion]") {
  tf::cpu device;
  check_random_expressions<tf::cpu, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28>(device);
}

TEST_CASE("fusion: exp, log, sqrt, rsqrt, div and pow on safe inputs", "[fusion]") {
  tf::cpu device;
  // Inputs in [0.5, 2]: every op below is defined and well conditioned there.
  check_expression<tf::cpu, tf::log(a * r + 1.0_c) / tf::sqrt(a + s)>(device, 91, 0.5, 2);
  check_expression<tf::cpu, tf::pow(a, r) * tf::rsqrt(tf::exp(-a) + 0.5_c)>(device, 92, 0.5, 2);
  check_expression<tf::cpu, tf::square(a / r) - s>(device, 93, 0.5, 2);
}

