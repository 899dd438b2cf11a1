// SPDX-License-Identifier: Apache-2.0
// The default registry's kernel table on tf::cpu, the only device the harnesses run graphs on
// (check_graph.hpp), instantiated once for fuzz_graph and fuzz_onnx instead of in each (with the
// fuzzer's instrumentation, as they are built).
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/dispatch_table.hpp>
#include <typeflow/registry/extern_kernels.hpp>

template const typeflow::kernel_table<typeflow::cpu>& typeflow::kernels_of<typeflow::default_registry, typeflow::cpu>();
