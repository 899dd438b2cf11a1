// SPDX-License-Identifier: Apache-2.0
// Included first by every header under a detail/ folder: those headers are internal.
#ifndef TYPEFLOW_VERSION_MAJOR
#error "this typeflow header is internal; include a public header such as <typeflow/typeflow.hpp> instead"
#endif
