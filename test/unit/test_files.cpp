// SPDX-License-Identifier: Apache-2.0
// Files in and out: tensors in the safetensors format (round trips, bytes written by the format's
// own Python library, every malformed header and layout refused with its reason), a static
// session's variables saved and restored, op values by attribute name (op_with), and runtime
// graphs written as C++ static graphs (to_cpp).
#include "support.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace tf = typeflow;
using tf::test::random_tensor;

namespace {

// to_cpp's options, member by member (GCC 12's -Wextra warns about the members a designated
// initializer leaves to their defaults).
tf::to_cpp_options options(std::string struct_name, std::string namespace_name = "",
                           std::vector<std::string> outputs = {}) {
  tf::to_cpp_options o;
  o.struct_name = std::move(struct_name);
  o.namespace_name = std::move(namespace_name);
  o.outputs = std::move(outputs);
  return o;
}

void require_error(const tf::status& st, tf::status_code code, std::string_view text) {
  INFO(st.to_string());
  REQUIRE(st.code() == code);
  REQUIRE(st.message().find(text) != std::string_view::npos);
}

// A safetensors file from its header's JSON and data.
std::string file_of(std::string_view header, std::string_view data = {}) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  out += header;
  out += data;
  return out;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("typeflow-test-files-" + name)).string();
}

}  // namespace

TEST_CASE("safetensors: every dtype round-trips, with names and metadata", "[files][safetensors]") {
  tf::tensor_file f;
  REQUIRE(f.add("f32", random_tensor<float>(tf::shape{2, 3}, 1)).ok());
  REQUIRE(f.add("f64", random_tensor<double>(tf::shape{4}, 2)).ok());
  REQUIRE(f.add("f16", random_tensor<Eigen::half>(tf::shape{3}, 3)).ok());
  REQUIRE(f.add("bf16", random_tensor<Eigen::bfloat16>(tf::shape{1, 2}, 4)).ok());
  REQUIRE(f.add("i8", random_tensor<std::int8_t>(tf::shape{5}, 5, -100, 100)).ok());
  REQUIRE(f.add("i32", random_tensor<std::int32_t>(tf::shape{2, 2}, 6, -1e6, 1e6)).ok());
  REQUIRE(f.add("i64", *tf::tensor::scalar<std::int64_t>(-(std::int64_t{1} << 60))).ok());
  REQUIRE(f.add("u8", random_tensor<std::uint8_t>(tf::shape{3}, 7, 0, 255)).ok());
  REQUIRE(f.add("bool", *tf::tensor::from_values<bool>({true, false, true})).ok());
  REQUIRE(f.add("empty", *tf::tensor::allocate(tf::dtype::f32, tf::shape{0, 3})).ok());
  REQUIRE(f.add("a \"quoted\\\" name\n", *tf::tensor::scalar(1.5f)).ok());
  f.metadata = {{"format", "pt"}, {"note", "tab\there"}};

  auto bytes = tf::to_safetensors(f);
  REQUIRE(bytes.ok());
  std::uint64_t header = 0;
  std::memcpy(&header, bytes->data(), 8);
  REQUIRE(header % 8 == 0);  // padded, so the data is aligned
  auto back = tf::parse_safetensors(*bytes);
  REQUIRE(back.ok());
  REQUIRE(back->metadata == f.metadata);
  REQUIRE(back->tensors.size() == f.tensors.size());
  for (const auto& [name, value] : f.tensors) {
    INFO(name);
    const tf::tensor* t = back->find(name);
    REQUIRE(t != nullptr);
    REQUIRE(t->spec() == value.spec());
    REQUIRE(std::memcmp(t->data(), value.data(), value.bytes()) == 0);
  }

  const std::string path = temp_path("roundtrip.safetensors");
  REQUIRE(tf::save_safetensors(path, f).ok());
  auto loaded = tf::load_safetensors(path);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->tensors.size() == f.tensors.size());
  std::remove(path.c_str());
}

TEST_CASE("safetensors: reads what the format's own library writes", "[files][safetensors]") {
  // safetensors.numpy.save_file({"a": arange(6, f32).reshape(2, 3), "b": [True, False], "c": int64(7),
  //                              "e": zeros((0, 3), f16)}, metadata={"format": "np"}): its header, byte for byte.
  const std::string header =
      R"({"__metadata__":{"format":"np"},"c":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]},"e":{"dtype":"F16","shape":[0,3],"data_offsets":[32,32]},)"
      R"("b":{"dtype":"BOOL","shape":[2],"data_offsets":[32,34]}})";
  std::string data(34, '\0');
  data[0] = 7;
  for (int i = 0; i < 6; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(data.data() + 8 + 4 * i, &v, 4);
  }
  data[32] = 1;
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  auto f = tf::parse_safetensors(file_of(padded, data));
  REQUIRE(f.ok());
  REQUIRE(f->metadata == std::vector<std::pair<std::string, std::string>>{{"format", "np"}});
  REQUIRE(f->find("c")->spec() == tf::tensor_spec{tf::dtype::i64, tf::shape{}});
  REQUIRE(*f->find("c")->at<std::int64_t>(0) == 7);
  REQUIRE(f->find("a")->spec() == tf::tensor_spec{tf::dtype::f32, tf::shape{2, 3}});
  REQUIRE(*f->find("a")->at<float>(5) == 5.0f);
  REQUIRE(f->find("e")->spec() == tf::tensor_spec{tf::dtype::f16, tf::shape{0, 3}});
  REQUIRE(*f->find("b")->at<bool>(0));
  REQUIRE_FALSE(*f->find("b")->at<bool>(1));
  // In the order of their data.
  REQUIRE(f->tensors[0].name == "c");
  REQUIRE(f->tensors[1].name == "a");
}

TEST_CASE("safetensors: a bad file is refused with the reason, before anything is allocated", "[files][safetensors][errors]") {
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  const std::string eight(8, '\0');
  auto refused = [](const std::string& bytes, std::string_view text, tf::status_code code = tf::status_code::invalid_argument) {
    auto f = tf::parse_safetensors(bytes, "w.safetensors");
    REQUIRE_FALSE(f.ok());
    require_error(f.status(), code, text);
    REQUIRE(f.status().message().starts_with("w.safetensors: "));
  };
  refused("abc", "shorter (3 bytes) than the 8-byte header length");
  refused(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8), "more than the limit of 104857600");
  refused(std::string("\x40\x00\x00\x00\x00\x00\x00\x00{}", 10), "the header is 64 bytes, the file has 2 after the length");
  refused(file_of("[]"), "expected an object at byte 8");
  refused(file_of("{\"a\":{" + f32x2 + "}}", eight), "tensor 'a' lacks data_offsets");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8],\"x\":1}}", eight), "tensor 'a' has an unknown key 'x'");
  refused(file_of("{\"a\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]}}", "1234"),
          "tensor 'a' has dtype I16, which typeflow has no type for", tf::status_code::unimplemented);
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,4]}}", "1234"),
          "tensor 'a' (f32[2]) needs 8 bytes, its data_offsets [0, 4] give 4");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[8,0]}}", eight), "give a negative size");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]},\"b\":{" + f32x2 + ",\"data_offsets\":[4,12]}}", eight + "1234"),
          "tensor 'b' starts at byte 4 of the data, where 8 (it overlaps the tensor before it)");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[4,12]}}", "1234" + eight), "(a hole before it)");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]}}", "1234"), "tensor 'a' ends at byte 8 of the data, which has 4");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]}}", eight + "x"), "1 bytes after the last tensor's data");
  refused(file_of("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]},\"a\":{" + f32x2 + ",\"data_offsets\":[8,16]}}", eight + eight),
          "a second tensor named 'a'");
  refused(file_of("{\"a\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", "\x01\x02"),
          "tensor 'a' (bool) holds byte 2 at element 1");
  refused(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", "1234"), "an array longer than 8");
  refused(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "1234"), "expected a non-negative integer");
  refused(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", "1234"), "expected an integer");
  refused(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", "1234"), "an integer too large");
  refused(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]}}", "1234"),
          "tensor 'a'");
  refused(file_of("{\"\\ud800\":{}}"), "a lone UTF-16 surrogate");
  refused(file_of("{\"a\\q\":{}}"), "an unknown escape");
  refused(file_of("{\"a"), "an unterminated string");
  refused(file_of("{} x"), "more after the header's object");
  refused(file_of("{\"\":{" + f32x2 + ",\"data_offsets\":[0,8]}}", eight), "a tensor with an empty name");
  // A name escaped in JSON is read as the text it stands for.
  auto f = tf::parse_safetensors(file_of("{\"\\u00e9\\ud83d\\ude00\\n\":{" + f32x2 + ",\"data_offsets\":[0,8]}}", eight));
  REQUIRE(f.ok());
  REQUIRE(f->tensors[0].name == "\xc3\xa9\xf0\x9f\x98\x80\n");

  tf::tensor_file dup;
  REQUIRE(dup.add("w", *tf::tensor::scalar(1.0f)).ok());
  require_error(dup.add("w", *tf::tensor::scalar(2.0f)), tf::status_code::invalid_argument, "a tensor named 'w' is already there");
  require_error(dup.add("", *tf::tensor::scalar(2.0f)), tf::status_code::invalid_argument, "a tensor's name is empty");
}

TEST_CASE("safetensors: loading names the file; a failed save leaves the old file", "[files][safetensors][errors]") {
  auto missing = tf::load_safetensors("/nonexistent/w.safetensors");
  require_error(missing.status(), tf::status_code::not_found, "cannot open safetensors file '/nonexistent/w.safetensors'");
  require_error(tf::load_safetensors("/").status(), tf::status_code::invalid_argument, "is a directory");
  tf::tensor_file f;
  REQUIRE(f.add("w", *tf::tensor::scalar(1.0f)).ok());
  require_error(tf::save_safetensors("/nonexistent/w.safetensors", f), tf::status_code::not_found,
                "cannot write safetensors file '/nonexistent/w.safetensors'");
  const std::string path = temp_path("kept.safetensors");
  REQUIRE(tf::save_safetensors(path, f).ok());
  tf::tensor_file bad;
  bad.tensors.push_back({"__metadata__", *tf::tensor::scalar(1.0f)});
  require_error(tf::save_safetensors(path, bad), tf::status_code::invalid_argument, "which the format cannot hold");
  auto kept = tf::load_safetensors(path);
  REQUIRE(kept.ok());
  REQUIRE(kept->find("w") != nullptr);
  auto garbage = tf::load_safetensors(path, {.max_bytes = 8});
  require_error(garbage.status(), tf::status_code::resource_exhausted, "larger than the limit of 8 bytes");
  std::remove(path.c_str());
}

TEST_CASE("save_variables and restore_variables: a session's variables by name", "[files][session]") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<2>>;
  constexpr auto w = tf::variable<"layer/w", float, tf::static_shape<2>>;
  constexpr auto b = tf::variable<"layer/b", float, tf::static_shape<2>>;
  constexpr auto y = x * w + b;
  tf::cpu device;
  tf::session s(tf::graph(y), device);
  REQUIRE(s.initialize(w, *tf::tensor::from_values<float>({2, 3})).ok());
  REQUIRE(s.initialize(b, *tf::tensor::from_values<float>({-1, 1})).ok());
  const std::string path = temp_path("vars.safetensors");
  REQUIRE(tf::save_variables(s, path, w, b).ok());

  tf::session t(tf::graph(y), device);
  REQUIRE(tf::restore_variables(t, path, w, b).ok());
  auto r = t.run(tf::feed(x, *tf::tensor::from_values<float>({1, 1})), tf::fetch(y));
  REQUIRE(r.ok());
  REQUIRE(*std::get<0>(*r).untyped().at<float>(0) == 1.0f);
  REQUIRE(*std::get<0>(*r).untyped().at<float>(1) == 4.0f);

  // A variable the file lacks: nothing is set.
  constexpr auto v = tf::variable<"other", float, tf::static_shape<2>>;
  tf::session u(tf::graph(y * v), device);
  require_error(tf::restore_variables(u, path, w, b, v), tf::status_code::not_found,
                "variable 'other' is not in safetensors file '" + path + "'");
  require_error(u.value_of(w).status(), tf::status_code::failed_precondition, "layer/w");
  // A tensor of another shape: the session's message.
  tf::tensor_file wrong;
  REQUIRE(wrong.add("layer/w", *tf::tensor::from_values<float>({1, 2, 3})).ok());
  require_error(tf::restore_variables(u, wrong, w), tf::status_code::invalid_argument,
                "variable 'layer/w': initial value is f32[3], the variable is f32[2]");
  std::remove(path.c_str());
}

TEST_CASE("op_with: an op value from attribute names, as a template argument", "[files][op_with]") {
  constexpr auto conv = tf::op_with<tf::ops::conv2d>(tf::attr<"stride_h">(2), tf::attr<"padding">("same"));
  STATIC_REQUIRE(conv.stride_h == 2);
  STATIC_REQUIRE(conv.stride_w == 1);
  STATIC_REQUIRE(conv.pad == tf::ops::padding::same);
  STATIC_REQUIRE(tf::op_with<tf::ops::transpose>(tf::attr<"perm">(tf::int_list{1, 0})).perm == tf::int_list{1, 0});
  STATIC_REQUIRE(tf::op_with<tf::ops::leaky_relu>(tf::attr<"alpha">(0.5)).alpha == 0.5);
  constexpr auto x = tf::input<"x", float, tf::static_shape<2, 3>>;
  constexpr auto y = tf::apply<tf::op_with<tf::ops::transpose>(tf::attr<"perm">(tf::int_list{1, 0}))>(x);
  STATIC_REQUIRE(decltype(y)::spec == tf::tensor_spec{tf::dtype::f32, tf::shape{3, 2}});
  // The same value as the runtime's reading of the same attributes.
  tf::attr_map attrs;
  attrs.set("stride_h", tf::attr_value(std::int64_t{2}));
  attrs.set("padding", tf::attr_value(std::string("same")));
  REQUIRE(*tf::from_attrs<tf::ops::conv2d>(attrs) == conv);
}

TEST_CASE("to_cpp: a runtime graph as a static graph's source and its weights", "[files][to_cpp]") {
  auto def = tf::parse_graph(R"(
x = placeholder() dtype=f32 shape=shape[?, 4]
w = const() dtype=f32 shape=shape[4, 6] value=0.25
half = const() dtype=f32 shape=shape[] value=0.5
h = matmul(x, w)
s = split(h) axis=1 num_split=2
t = top_k(s:1) k=2
y = mul(s:0, half)
unused = relu(x)
)");
  REQUIRE(def.ok());
  auto m = tf::to_cpp(*def, options("small", "gen::models", {"y", "t:1"}));
  REQUIRE(m.ok());
  const std::string& h = m->header;
  INFO(h);
  auto has = [&](std::string_view s) { return h.find(s) != std::string::npos; };
  REQUIRE(has("namespace gen::models {"));
  REQUIRE(has("struct small {"));
  REQUIRE(has("static constexpr auto n_x = typeflow::input<\"x\", float, typeflow::static_shape<typeflow::dyn, 4>>;"));
  REQUIRE(has("static constexpr auto n_w = typeflow::variable<\"w\", float, typeflow::static_shape<4, 6>>;"));
  REQUIRE(has("static constexpr auto n_half = typeflow::constant<0.5, float>;"));
  REQUIRE(has("static constexpr auto n_h = typeflow::apply<typeflow::ops::matmul{}>(n_x, n_w);"));
  // num_split is 2, its default: left out.
  REQUIRE(has("typeflow::apply_outputs<typeflow::op_with<typeflow::ops::split>(typeflow::attr<\"axis\">(std::int64_t{1}))>(n_h);"));
  REQUIRE(has("typeflow::apply_outputs<typeflow::op_with<typeflow::ops::top_k>(typeflow::attr<\"k\">(std::int64_t{2}))>(std::get<1>(n_s));"));
  REQUIRE(has("static constexpr auto n_y = typeflow::apply<typeflow::ops::mul{}>(std::get<0>(n_s), n_half);"));
  REQUIRE(has("static constexpr auto outputs = std::tuple{n_y, std::get<1>(n_t)};"));
  REQUIRE(has("output_names{\"y\", \"t:1\"}"));
  REQUIRE(has("return typeflow::restore_variables(session, path, n_w);"));
  REQUIRE_FALSE(has("unused"));  // only what the outputs need
  REQUIRE(m->weights.tensors.size() == 1);
  REQUIRE(m->weights.tensors[0].name == "w");
  REQUIRE(m->weights.tensors[0].value.spec() == tf::tensor_spec{tf::dtype::f32, tf::shape{4, 6}});
  REQUIRE(*m->weights.tensors[0].value.at<float>(23) == 0.25f);

  // Without outputs: every op output nobody reads, and names that are not identifiers made into some.
  auto sinks = tf::parse_graph("a.b = placeholder() dtype=f32 shape=shape[2]\nr-1 = relu(a.b)\nr_1 = neg(a.b)\n");
  REQUIRE(sinks.ok());
  auto n = tf::to_cpp(*sinks);
  REQUIRE(n.ok());
  REQUIRE(n->header.find("static constexpr auto n_r_1 = typeflow::apply<typeflow::ops::relu{}>(n_a_b);") != std::string::npos);
  REQUIRE(n->header.find("static constexpr auto n_r_1_2 = typeflow::apply<typeflow::ops::neg{}>(n_a_b);") != std::string::npos);
  REQUIRE(n->header.find("output_names{\"r-1\", \"r_1\"}") != std::string::npos);
}

TEST_CASE("to_cpp: what a static graph cannot express is refused, naming the node", "[files][to_cpp][errors]") {
  auto make = [](std::string_view text, tf::to_cpp_options options = {}) {
    auto def = tf::parse_graph(text);
    REQUIRE(def.ok());
    return tf::to_cpp(*def, options).status();
  };
  const std::string x = "x = placeholder() dtype=f32 shape=shape[2]\n";
  require_error(make(x + "y = relu(x)\nz = neg(x, ^y)\n"), tf::status_code::unimplemented,
                "to_cpp: node 'z' (neg): it has control inputs");
  // A device string must name the device the graph is made for; it is then the session's to choose.
  REQUIRE(make(x + "y = relu(x) @/device:CPU:0\n").ok());
  require_error(make(x + "y = relu(x) @/device:GPU:0\n"), tf::status_code::invalid_argument, "device '/device:GPU:0' is not available");
  require_error(make(x + "y = relu(x)\n", options("2bad")), tf::status_code::invalid_argument,
                "struct_name '2bad' is not a C++ identifier");
  require_error(make(x + "y = relu(x)\n", options("model", "a::")), tf::status_code::invalid_argument,
                "namespace_name 'a::' is not a C++ namespace name");
  require_error(make(x + "y = relu(x)\n", options("model", "", {"z"})), tf::status_code::invalid_argument,
                "to_cpp: output 'z' is not a tensor of the graph");
  require_error(make(x + "y = relu(x)\n", options("model", "", {"y:1"})), tf::status_code::invalid_argument,
                "node 'y' has one output (port 0)");
  require_error(make(x), tf::status_code::invalid_argument, "the graph has no op whose output nobody reads");
  // An invalid graph is the runtime graph's error.
  require_error(make(x + "y = matmul(x, x)\n"), tf::status_code::invalid_argument, "node 'y'");
  // What the partitioner adds has no static form.
  require_error(make(x + "s = _send(x) key=\"k\"\nr = _recv() key=\"k\" dtype=f32 shape=shape[2]\ny = relu(r)\n"),
                tf::status_code::unimplemented, "to_cpp: node 'r' (_recv): a static graph holds no _send or _recv");
}
