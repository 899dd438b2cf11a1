// SPDX-License-Identifier: Apache-2.0
// A static session's variables to and from a safetensors file (core/safetensors.hpp), as
// TensorFlow's Saver restores and saves a checkpoint, by the variables' names:
//   tf::restore_variables(s, "weights.safetensors", w1, b1, w2);  // each from the tensor of its name
//   tf::save_variables(s, "trained.safetensors", w1, b1, w2);
// A variable the file lacks is not_found naming it and the file; a tensor of another dtype or
// shape is the session's invalid_argument for it. Tensors of the file that no variable names are
// left alone. Nothing is set unless every variable is found: a failed restore leaves the session's
// values as they were, up to the first variable whose value the session refuses.
#pragma once

#include <typeflow/fwd.hpp>

#include <array>
#include <string>
#include <string_view>

#include <typeflow/core/safetensors.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/graph/expr.hpp>

namespace typeflow {

template <class Session, expression... Vars>
status restore_variables(Session& session, const tensor_file& file, std::string_view origin, Vars... vars) {
  static_assert(((Vars::node::kind == node_kind::variable) && ...),
                "typeflow::restore_variables(session, file, vars...): each var must be a variable<...>");
  const std::array<std::string_view, sizeof...(Vars)> names{Vars::node::name...};
  for (std::string_view name : names)
    if (file.find(name) == nullptr) return errors::not_found("variable '", name, "' is not in ", origin);
  status st;
  ((st.ok() ? st.update(session.initialize(vars, *file.find(Vars::node::name))) : void()), ...);
  return st;
}

template <class Session, expression... Vars>
status restore_variables(Session& session, const tensor_file& file, Vars... vars) {
  return restore_variables(session, file, "the tensor file", vars...);
}

template <class Session, expression... Vars>
status restore_variables(Session& session, const std::string& path, Vars... vars) {
  auto file = load_safetensors(path);
  if (!file.ok()) return file.status();
  return restore_variables(session, *file, "safetensors file '" + path + "'", vars...);
}

template <class Session, expression... Vars>
status save_variables(const Session& session, const std::string& path, Vars... vars) {
  static_assert(((Vars::node::kind == node_kind::variable) && ...),
                "typeflow::save_variables(session, path, vars...): each var must be a variable<...>");
  tensor_file file;
  status st;
  (
      [&] {
        if (!st.ok()) return;
        auto value = session.value_of(vars);
        if (!value.ok()) {
          st = value.status();
          return;
        }
        st = file.add(std::string(Vars::node::name), std::move(*value));
      }(),
      ...);
  if (!st.ok()) return st;
  return save_safetensors(path, file);
}

}  // namespace typeflow
