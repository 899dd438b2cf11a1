// SPDX-License-Identifier: Apache-2.0
// A downstream program of the ONNX importer, built through pkg-config typeflow-onnx with -O2 -Wall
// -Wextra -Werror: makes a one-node model with ONNX's classes, imports it, checks the graph_def.
#include <typeflow/onnx/import.hpp>

#include <cstdio>

int main() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  for (auto* v : {g->add_input(), g->add_output()}) {
    v->set_name(v == &g->input(0) ? "x" : "y");
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("n");
  }
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  auto model = typeflow::parse_onnx(m.SerializeAsString());
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  if (model->graph.nodes.size() != 2 || model->graph.nodes[1].op != "relu" || model->outputs[0] != "y") return 1;
  std::puts("onnx consumer: ok");
  return 0;
}
