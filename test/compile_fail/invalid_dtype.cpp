// SPDX-License-Identifier: Apache-2.0
// sqrt of an integer tensor described at compile time: the dtype is rejected with the op's own message.
// expect: sqrt: input dtype i32 is not supported; expected a floating-point dtype
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
constexpr auto y = tf::static_infer_v<tf::ops::sqrt{}, tf::spec<std::int32_t, tf::static_shape<4>>>;

int main() { return static_cast<int>(y.dims.rank()); }
