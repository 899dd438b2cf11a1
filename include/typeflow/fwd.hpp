// SPDX-License-Identifier: Apache-2.0
// Forward declarations of typeflow's public types, and the version.
#pragma once

#include <cstdint>

#define TYPEFLOW_VERSION_MAJOR 0
#define TYPEFLOW_VERSION_MINOR 1
#define TYPEFLOW_VERSION_PATCH 0

namespace typeflow {

// core/
enum class status_code : std::uint8_t;
class status;
template <class T> class result;
enum class dtype : std::uint8_t;
struct shape;
template <std::int64_t... Dims> struct static_shape;
struct tensor_spec;
class tensor;

// memory/
class heap_allocator;

// device/: the policies are templates on their allocator; cpu and thread_pool use heap_allocator.
template <class Allocator> class basic_cpu;
template <class Allocator> class basic_thread_pool;
using cpu = basic_cpu<heap_allocator>;
using thread_pool = basic_thread_pool<heap_allocator>;

// kernels/
template <class Device> struct kernel_context;

// registry/
template <class... KernelLists> struct registry;

} // namespace typeflow
