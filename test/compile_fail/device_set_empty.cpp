// SPDX-License-Identifier: Apache-2.0
// A device set of no device types.
// expect: device_set<Ds...> needs at least one device policy type
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  tf::device_set<> set;
  return static_cast<int>(set.size());
}
