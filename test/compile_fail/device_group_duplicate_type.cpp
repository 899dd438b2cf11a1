// SPDX-License-Identifier: Apache-2.0
// A device group with two devices of one type: a static graph places nodes on types, so it could
// not tell them apart.
// expect: typeflow::device_group: one device of each policy type
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  tf::cpu a, b;
  tf::device_group group(a, b);
  return static_cast<int>(group.size);
}
