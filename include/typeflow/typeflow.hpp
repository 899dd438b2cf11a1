// SPDX-License-Identifier: Apache-2.0
// The umbrella header: core types, every op, the CPU kernels, the registry, the host device
// policies and eager calls. It only includes.
#pragma once

#include <typeflow/fwd.hpp>

#include <typeflow/core/compile_error.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/int_list.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/tensor_spec.hpp>
#include <typeflow/core/typed_tensor.hpp>
#include <typeflow/device/cpu.hpp>
#include <typeflow/device/device.hpp>
#include <typeflow/device/thread_pool.hpp>
#include <typeflow/graph/expr.hpp>
#include <typeflow/graph/memory_plan.hpp>
#include <typeflow/graph/node.hpp>
#include <typeflow/graph/node_list.hpp>
#include <typeflow/graph/plan.hpp>
#include <typeflow/graph/static_graph.hpp>
#include <typeflow/kernels/cpu/kernel_list.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/memory/allocator.hpp>
#include <typeflow/memory/arena_plan.hpp>
#include <typeflow/memory/bfc_allocator.hpp>
#include <typeflow/memory/cpu_allocator.hpp>
#include <typeflow/memory/fallback_allocator.hpp>
#include <typeflow/memory/guard_allocator.hpp>
#include <typeflow/memory/sub_allocator.hpp>
#include <typeflow/memory/tracking_allocator.hpp>
#include <typeflow/ops/array.hpp>
#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/conv.hpp>
#include <typeflow/ops/fused.hpp>
#include <typeflow/ops/linalg.hpp>
#include <typeflow/ops/nn.hpp>
#include <typeflow/ops/op.hpp>
#include <typeflow/ops/padding.hpp>
#include <typeflow/ops/pool.hpp>
#include <typeflow/ops/reduction.hpp>
#include <typeflow/ops/static_infer.hpp>
#include <typeflow/ops/unary.hpp>
#include <typeflow/registry/default_registry.hpp>
#include <typeflow/registry/registry.hpp>
#include <typeflow/runtime/call.hpp>
#include <typeflow/runtime/session.hpp>
#include <typeflow/runtime/static_executor.hpp>
#include <typeflow/runtime/variable_store.hpp>
