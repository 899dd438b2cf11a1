// SPDX-License-Identifier: Apache-2.0
// Adding [2, 3] and [4, 3] at compile time: both shapes appear in the message.
// expect: add: shapes [2, 3] and [4, 3] do not broadcast
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
constexpr auto y = tf::static_infer_v<tf::ops::add{}, tf::spec<float, tf::static_shape<2, 3>>,
                                      tf::spec<float, tf::static_shape<4, 3>>>;

int main() { return static_cast<int>(y.dims.rank()); }
