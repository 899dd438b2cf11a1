// SPDX-License-Identifier: Apache-2.0
// A static shape with a negative dimension other than dyn.
// expect: static_shape<...>: every dimension must be >= 0 or typeflow::dyn
#include <typeflow/typeflow.hpp>

constexpr auto s = typeflow::static_shape<2, -3>::value;

int main() { return static_cast<int>(s.rank()); }
