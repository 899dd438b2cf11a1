// SPDX-License-Identifier: Apache-2.0
// A device set lists one policy type twice (two CPUs are two instances of one type).
// expect: device_set<Ds...> lists each device policy type once (add several instances of a type instead)
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  tf::device_set<tf::cpu, tf::cpu> set;
  return static_cast<int>(set.size());
}
