// SPDX-License-Identifier: Apache-2.0
// op_with names attributes as the text format does; a name the op does not have is refused with the list.
// expect: op_with: op conv2d has no attribute named strides; it takes: stride_h, stride_w, padding, dilation_h, dilation_w
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
  constexpr auto op = tf::op_with<tf::ops::conv2d>(tf::attr<"strides">(2));
  (void)op;
}
