// SPDX-License-Identifier: Apache-2.0
// An instance is added whose policy type the set does not list.
// expect: device_set<Ds...>::add(d): the type of d is not one of Ds
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  tf::device_set<tf::cpu> set;
  tf::thread_pool pool(2);
  set.add(pool);
  return static_cast<int>(set.size());
}
