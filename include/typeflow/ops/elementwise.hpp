// SPDX-License-Identifier: Apache-2.0
// is_fusable_elementwise<Op>: the ops that compute each output element from the input elements at
// the same position (after broadcasting) and nothing else. Static graphs fuse them
// (graph/plan.hpp); executors let them write over an input they are the last reader of.
// is_cheap_elementwise<Op>: those of them that cost about one instruction an element, which a fused
// group may compute again rather than read from memory (plan.hpp's duplication).
#pragma once

#include <typeflow/fwd.hpp>

#include <type_traits>

#include <typeflow/ops/binary.hpp>
#include <typeflow/ops/unary.hpp>

namespace typeflow {

template <class Op>
inline constexpr bool is_fusable_elementwise =
    std::is_same_v<Op, ops::neg> || std::is_same_v<Op, ops::abs> || std::is_same_v<Op, ops::exp> ||
    std::is_same_v<Op, ops::log> || std::is_same_v<Op, ops::sqrt> || std::is_same_v<Op, ops::rsqrt> ||
    std::is_same_v<Op, ops::square> || std::is_same_v<Op, ops::tanh> || std::is_same_v<Op, ops::sigmoid> ||
    std::is_same_v<Op, ops::relu> || std::is_same_v<Op, ops::gelu> || std::is_same_v<Op, ops::softplus> ||
    std::is_same_v<Op, ops::add> || std::is_same_v<Op, ops::sub> || std::is_same_v<Op, ops::mul> ||
    std::is_same_v<Op, ops::div> || std::is_same_v<Op, ops::maximum> || std::is_same_v<Op, ops::minimum> ||
    std::is_same_v<Op, ops::pow> || std::is_same_v<Op, ops::erf> || std::is_same_v<Op, ops::leaky_relu> ||
    std::is_same_v<Op, ops::hard_sigmoid> || std::is_same_v<Op, ops::clip>;

template <class Op>
inline constexpr bool is_cheap_elementwise =
    std::is_same_v<Op, ops::neg> || std::is_same_v<Op, ops::abs> || std::is_same_v<Op, ops::square> ||
    std::is_same_v<Op, ops::relu> || std::is_same_v<Op, ops::add> || std::is_same_v<Op, ops::sub> ||
    std::is_same_v<Op, ops::mul> || std::is_same_v<Op, ops::maximum> || std::is_same_v<Op, ops::minimum>;

}  // namespace typeflow
