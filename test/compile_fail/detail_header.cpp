// SPDX-License-Identifier: Apache-2.0
// detail/ headers are internal and say so when included directly.
// expect: this typeflow header is internal
#include <typeflow/core/detail/format.hpp>

int main() { return 0; }
