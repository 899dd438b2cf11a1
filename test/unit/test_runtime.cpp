// SPDX-License-Identifier: Apache-2.0
// Runtime graphs (the default kernel tables are compiled once, in test/kernels/):
//  - the dispatch table generated from the registry, op attributes, the text format (round trips
//    and every malformed input), and every validation error with its message;
//  - the runtime session: results against a plain reference, 1000 random DAGs run by the parallel
//    executor at 1, 2 and 4 threads against the sequential one, many threads on one session, feeds
//    that replace any node, targets, every run-time error, timeouts, cancellation, close while
//    running, and step stats.
#include "random_dag.hpp"
#include "support.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>


namespace tf = typeflow;

namespace {

using graph = tf::runtime_graph<tf::cpu>;

// The message of the error that building `text` gives (parse or validation), or "" when it builds.
std::string error_of(std::string_view text) {
  auto def = tf::parse_graph(text);
  if (!def.ok()) return std::string(def.status().message());
  auto g = graph::make(std::move(*def));
  if (!g.ok()) return std::string(g.status().message());
  return "";
}

constexpr std::string_view mlp_text = R"(# a small MLP
x  = placeholder() dtype=f32 shape=shape[?, 4]
w1 = const() dtype=f32 shape=shape[4, 3] value=[0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2]
b1 = const() dtype=f32 shape=shape[3] value=0.5
h  = matmul(x, w1)
hb = add(h:0, b1)            # port 0 spelled out
a  = relu(hb) @/job:localhost/replica:0/task:0/device:CPU:0
y  = softmax(a) axis=-1 @CPU:0
)";

}  // namespace

TEST_CASE("the dispatch table is generated from the registry, sorted, first list first", "[runtime][dispatch]") {
  // A constant expression: looked up at compile time (a small registry keeps this unit cheap).
  using small = tf::dispatch_table<tf::registry<tf::cpu_kernels::linalg_kernels>, tf::cpu>;
  STATIC_REQUIRE(small::find_kernel("matmul", tf::dtype::f32) != nullptr);
  STATIC_REQUIRE(small::find_kernel("matmul", tf::dtype::f32)->expensive);
  STATIC_REQUIRE(small::find_kernel("matmul", tf::dtype::i8) == nullptr);
  STATIC_REQUIRE(small::find_kernel("add", tf::dtype::f32) == nullptr);
  STATIC_REQUIRE(small::find_op("matmul") != nullptr);
  STATIC_REQUIRE(small::find_op("add") == nullptr);

  // The default registry's table, as runtime graphs reach it: instantiated once, in test/kernels/.
  const tf::kernel_table<tf::cpu>& table = tf::kernels_of<tf::default_registry, tf::cpu>();
  CHECK(&table == &graph::kernels());
  CHECK(table.kernels.size() > 100);
  CHECK(table.find_kernel("matmul", tf::dtype::f32) != nullptr);
  CHECK(table.find_kernel("matmul", tf::dtype::i8) == nullptr);
  CHECK(table.find_kernel("no_such_op", tf::dtype::f32) == nullptr);
  CHECK(table.find_op("conv2d") != nullptr);
  CHECK(table.find_op("fused_elementwise") == nullptr);  // template ops are static-graph only
  CHECK(table.find_kernel("conv2d", tf::dtype::f32)->expensive);
  CHECK(!table.find_kernel("add", tf::dtype::f32)->expensive);
  for (std::size_t i = 1; i < table.kernels.size(); ++i) {
    const auto& a = table.kernels[i - 1];
    const auto& b = table.kernels[i];
    REQUIRE(((a.op) < b.op || (a.op == b.op && a.type < b.type)));
  }
  CHECK(table.dtypes_of("matmul") == "f16, f32, f64, i32, i64");
  // Every op in the table has a kernel, and the table of another device is another table.
  for (const tf::op_entry& e : table.ops) CHECK(!table.dtypes_of(e.name).empty());
  CHECK(tf::kernels_of<tf::default_registry, tf::thread_pool>().kernels.size() == table.kernels.size());
}

namespace chained {

// Ops of the program's own with one input, the output of its shape and dtype, by name: "twice",
// and "relu", which takes a built-in op's name (a different op type of the same name).
template <int Which>
struct unary_op {
  static constexpr std::string_view name = Which == 0 ? "twice" : "relu";
  static constexpr int num_inputs = 1;
  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const { return in[0]; }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  [[maybe_unused]] friend constexpr bool operator==(const unary_op&, const unary_op&) = default;
};
using twice = unary_op<0>;
using my_relu = unary_op<1>;

// twice's kernel, and the program's own kernel for a built-in op: add on f32 that adds one more,
// so that which kernel ran shows in the answer.
template <class Op, class Device, class T>
struct twice_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  static tf::status compute(const Op&, tf::kernel_context<Device>& ctx) {
    auto x = ctx.inputs[0].template unchecked_flat<const T>();
    auto y = ctx.outputs[0].template unchecked_flat<T>();
    y = x + x;
    return tf::ok_status();
  }
};

template <class Op, class Device, class T>
struct add_one_more_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = false;
  // typeflow's add (broadcasting and all), reached through the default table, then one more.
  static tf::status compute(const Op& op, tf::kernel_context<Device>& ctx) {
    const auto* add = tf::kernels_of<tf::default_registry, Device>().find_kernel(Op::name, tf::dtype_of<T>);
    if (add == nullptr) return tf::errors::internal("the default table has no add for ", tf::dtype_of<T>);
    if (tf::status s = add->compute(&op, ctx); !s.ok()) return s;
    auto y = ctx.outputs[0].template unchecked_flat<T>();
    y = y + T(1);
    return tf::ok_status();
  }
};

struct kernels : tf::named_kernel_list<tf::kernel_list<
    tf::kernel_family<twice_kernel, twice, tf::devices<tf::cpu>, tf::dtypes<float>>,
    tf::kernel_family<add_one_more_kernel, tf::ops::add, tf::devices<tf::cpu>, tf::dtypes<float>>>> {};
using registry = tf::registry<kernels, tf::cpu_kernel_list>;

}  // namespace chained

TEST_CASE("a registry whose last list is typeflow's holds its own kernels and hands the rest to the default table",
          "[runtime][dispatch]") {
  const tf::kernel_table<tf::cpu>& defaults = tf::kernels_of<tf::default_registry, tf::cpu>();
  // Its own table: the two kernels of its first list, found at compile time.
  using own = tf::dispatch_table<chained::registry, tf::cpu>;
  STATIC_REQUIRE(own::kernels.size() == 2);
  STATIC_REQUIRE(own::ops.size() == 2);
  STATIC_REQUIRE(own::find_kernel("twice", tf::dtype::f32) != nullptr);
  STATIC_REQUIRE(own::find_kernel("add", tf::dtype::f32)->kernel ==
                 tf::kernel_id<chained::add_one_more_kernel<tf::ops::add, tf::cpu, float>>);

  const tf::kernel_table<tf::cpu>& table = tf::kernels_of<chained::registry, tf::cpu>();
  REQUIRE(table.next != nullptr);
  CHECK(&table.next() == &defaults);
  // typeflow's kernels are the default table's entries, not copies instantiated again.
  CHECK(table.find_kernel("relu", tf::dtype::f32) == defaults.find_kernel("relu", tf::dtype::f32));
  CHECK(table.find_kernel("add", tf::dtype::f64) == defaults.find_kernel("add", tf::dtype::f64));
  CHECK(table.find_op("conv2d") == defaults.find_op("conv2d"));
  // The first list wins where both have a kernel; the rest falls through.
  CHECK(table.find_kernel("add", tf::dtype::f32) != defaults.find_kernel("add", tf::dtype::f32));
  CHECK(table.find_kernel("twice", tf::dtype::f64) == nullptr);
  CHECK(table.find_kernel("no_such_op", tf::dtype::f32) == nullptr);
  CHECK(table.find_op("no_such_op") == nullptr);
  CHECK(table.dtypes_of("twice") == "f32");
  CHECK(table.dtypes_of("add") == defaults.dtypes_of("add"));
  CHECK(table.dtypes_of("no_such_op").empty());

  // A runtime graph over it runs both lists' kernels: z = (x + x) + x + 1, then relu.
  using chained_graph = tf::runtime_graph<tf::cpu, chained::registry>;
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[4]\ny = twice(x)\nz = add(y, x)\nr = relu(z)\n"
                             "w = placeholder() dtype=f64 shape=shape[4]\nv = add(w, w)\n"
                             "c = const() dtype=f32 shape=shape[] value=0.5\nb = add(x, c)\n");
  REQUIRE(def.ok());
  auto made = chained_graph::make(std::move(*def));
  REQUIRE(made.ok());
  tf::cpu device;
  tf::runtime_session<tf::cpu, chained::registry> session(std::make_shared<const chained_graph>(std::move(*made)), device);
  auto x = tf::tensor::from_values<float>({-2.0f, -0.5f, 0.0f, 1.5f});
  auto w = tf::tensor::from_values<double>({-2.0, -0.5, 0.0, 1.5});
  REQUIRE((x.ok() && w.ok()));
  auto out = session.run({{"x", *x}, {"w", *w}}, {"r", "v", "b"});
  REQUIRE(out.ok());
  const float want[] = {0.0f, 0.0f, 1.0f, 5.5f};  // relu(3x + 1)
  for (int i = 0; i < 4; ++i) {
    CHECK(*(*out)[0].at<float>(i) == want[i]);
    CHECK(*(*out)[1].at<double>(i) == 2 * *w->at<double>(i));  // typeflow's add on f64: no + 1
    CHECK(*(*out)[2].at<float>(i) == *x->at<float>(i) + 1.5f);  // the own add, broadcasting a scalar
  }

  // On a device where its own lists have no kernel, only typeflow's are found.
  const tf::kernel_table<tf::thread_pool>& pooled = tf::kernels_of<chained::registry, tf::thread_pool>();
  CHECK(pooled.kernels.empty());
  CHECK(pooled.find_op("twice") == nullptr);
  CHECK(pooled.find_kernel("add", tf::dtype::f32) ==
        tf::kernels_of<tf::default_registry, tf::thread_pool>().find_kernel("add", tf::dtype::f32));
  auto pooled_def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[4]\ny = twice(x)\n");
  REQUIRE(pooled_def.ok());
  auto refused = tf::runtime_graph<tf::thread_pool, chained::registry>::make(std::move(*pooled_def));
  REQUIRE(!refused.ok());
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("twice"));

  // typeflow's lists alone: an empty table of its own, all of the default one.
  const tf::kernel_table<tf::cpu>& same = tf::kernels_of<tf::registry<tf::cpu_kernel_list>, tf::cpu>();
  CHECK(same.kernels.empty());
  CHECK(&same.next() == &defaults);
  CHECK(same.find_kernel("matmul", tf::dtype::f32) == defaults.find_kernel("matmul", tf::dtype::f32));
  // The default registry and a registry without typeflow's list last are whole tables.
  CHECK(defaults.next == nullptr);
  STATIC_REQUIRE(tf::dispatch_table<tf::registry<tf::cpu_kernels::linalg_kernels>, tf::cpu>::table.next == nullptr);
}

namespace chained {

// my_relu, with a kernel for f32 only.
struct renamed_kernels : tf::named_kernel_list<tf::kernel_list<
    tf::kernel_family<twice_kernel, my_relu, tf::devices<tf::cpu>, tf::dtypes<float>>>> {};
using renamed_registry = tf::registry<renamed_kernels, tf::cpu_kernel_list>;

// A registry type that replaces the families of its base: one table, as it says.
struct shadowing_registry : tf::registry<kernels, tf::cpu_kernel_list> {
  static constexpr auto families = tf::registry<tf::cpu_kernels::linalg_kernels>::families;
};

}  // namespace chained

TEST_CASE("a chained table does not hand an op of the program's own to a built-in op of the same name",
          "[runtime][dispatch]") {
  const tf::kernel_table<tf::cpu>& table = tf::kernels_of<chained::renamed_registry, tf::cpu>();
  const tf::kernel_table<tf::cpu>& defaults = tf::kernels_of<tf::default_registry, tf::cpu>();
  REQUIRE(table.find_op("relu") != nullptr);
  CHECK(table.find_op("relu") != defaults.find_op("relu"));
  CHECK(table.find_kernel("relu", tf::dtype::f32) != nullptr);
  // typeflow's relu on f64 reads its op as tf::ops::relu: not this op's kernel.
  CHECK(table.find_kernel("relu", tf::dtype::f64) == nullptr);
  CHECK(table.dtypes_of("relu") == "f32");
  CHECK(table.find_kernel("add", tf::dtype::f64) == defaults.find_kernel("add", tf::dtype::f64));

  STATIC_REQUIRE(!tf::detail::table_source<chained::shadowing_registry>::chained);
  STATIC_REQUIRE(tf::detail::table_source<chained::registry>::chained);
  STATIC_REQUIRE(!tf::detail::table_source<tf::default_registry>::chained);
  STATIC_REQUIRE(tf::dispatch_table<chained::shadowing_registry, tf::cpu>::table.next == nullptr);
  STATIC_REQUIRE(tf::dispatch_table<chained::shadowing_registry, tf::cpu>::find_kernel("matmul", tf::dtype::f32) != nullptr);
  STATIC_REQUIRE(tf::dispatch_table<chained::shadowing_registry, tf::cpu>::find_kernel("twice", tf::dtype::f32) == nullptr);
}

TEST_CASE("op attributes: read, defaults, and errors naming op, attribute and types", "[runtime][attrs]") {
  auto m = tf::from_attrs<tf::ops::matmul>(tf::attr_map{{"transpose_b", true}});
  REQUIRE(m.ok());
  CHECK(m->transpose_b);
  CHECK(!m->transpose_a);
  CHECK(tf::to_attrs(*m) == tf::attr_map{{"transpose_a", false}, {"transpose_b", true}});

  auto c = tf::from_attrs<tf::ops::conv2d>(tf::attr_map{{"padding", "same"}, {"stride_h", 2}});
  REQUIRE(c.ok());
  CHECK(c->pad == tf::ops::padding::same);
  CHECK(c->stride_h == 2);

  auto bad_type = tf::from_attrs<tf::ops::matmul>(tf::attr_map{{"transpose_a", 1}});
  REQUIRE(!bad_type.ok());
  CHECK(bad_type.status().message() == "op matmul: attribute 'transpose_a' must be bool, got int 1");
  auto unknown = tf::from_attrs<tf::ops::relu>(tf::attr_map{{"alpha", 0.2}});
  REQUIRE(!unknown.ok());
  CHECK(unknown.status().message() == "op relu has no attribute 'alpha'; it takes none");
  auto unknown2 = tf::from_attrs<tf::ops::matmul>(tf::attr_map{{"transpose", true}});
  CHECK(unknown2.status().message() == "op matmul has no attribute 'transpose'; it takes: transpose_a, transpose_b");
  auto bad_padding = tf::from_attrs<tf::ops::max_pool2d>(tf::attr_map{{"padding", "full"}});
  CHECK(bad_padding.status().message() == "op max_pool2d: attribute 'padding' must be one of \"same\", \"valid\", \"explicit\", got \"full\"");
  auto axes = tf::from_attrs<tf::ops::reduce_sum>(tf::attr_map{{"axes", std::vector<std::int64_t>{0, 2}}});
  REQUIRE(axes.ok());
  CHECK(axes->axes.size() == 2);
  auto reshape = tf::from_attrs<tf::ops::reshape>(tf::attr_map{{"shape", std::vector<std::int64_t>{2, -1}}});
  REQUIRE(reshape.ok());
  CHECK(reshape->to.rank() == 2);
}

TEST_CASE("text format: a graph parses, validates, and round-trips", "[runtime][text]") {
  auto def = tf::parse_graph(mlp_text);
  REQUIRE(def.ok());
  REQUIRE(def->nodes.size() == 7);
  const tf::node_def& hb = def->nodes[4];
  CHECK(hb.name == "hb");
  CHECK(hb.inputs == std::vector<std::string>{"h:0", "b1"});
  CHECK(hb.line == 6);
  CHECK(def->nodes[6].attrs.find("axis")->to_string() == "-1");
  CHECK(def->nodes[5].device == "/job:localhost/replica:0/task:0/device:CPU:0");
  const std::string text = tf::to_text(*def);
  auto again = tf::parse_graph(text);
  REQUIRE(again.ok());
  REQUIRE(again->nodes.size() == def->nodes.size());
  for (std::size_t i = 0; i < def->nodes.size(); ++i) {
    CHECK(again->nodes[i].name == def->nodes[i].name);
    CHECK(again->nodes[i].op == def->nodes[i].op);
    CHECK(again->nodes[i].inputs == def->nodes[i].inputs);
    CHECK(again->nodes[i].attrs == def->nodes[i].attrs);
    CHECK(again->nodes[i].device == def->nodes[i].device);
  }
  auto g = graph::make(std::move(*def));
  REQUIRE(g.ok());
  CHECK(g->size() == 7);
  CHECK((*g)[*g->find("y")].spec() == tf::tensor_spec{tf::dtype::f32, tf::shape{tf::dyn, 3}});
  CHECK(g->to_dot().find("style=dashed") == std::string::npos);
  CHECK_THAT(g->to_dot(), Catch::Contains("matmul f32[?, 3]"));
  CHECK(tf::parse_graph("").ok());
  CHECK(tf::parse_graph("# only a comment\n\n   \n").value().nodes.empty());
}

TEST_CASE("text format: malformed input gives the line, the column and what was expected", "[runtime][text]") {
  struct bad {
    std::string_view text, message;
  };
  const bad cases[] = {
      {"x = placeholder(", "line 1, column 17: expected an input name, found the end of the line"},
      {"x placeholder()", "line 1, column 3: expected '=' after the node name, found 'placeholder()'"},
      {"= relu(x)", "line 1, column 1: expected a node name, found '= relu(x)'"},
      {"y = relu x", "line 1, column 10: expected '(' after the op name, found 'x'"},
      {"y = relu(x", "line 1, column 11: expected ',' or ')' in the input list, found the end of the line"},
      {"y = relu(x:)", "line 1, column 12: expected a port number after ':', found ')'"},
      {"x = placeholder() dtype", "line 1, column 24: expected '=' after attribute 'dtype', found the end of the line"},
      {"x = placeholder() dtype=", "line 1, column 25: attribute 'dtype': expected a value, found the end of the line"},
      {"x = const() value=1.2.3", "line 1, column 19: attribute 'value': expected a number, found '1.2.3'"},
      {"x = const() value=99999999999999999999",
       "line 1, column 19: attribute 'value': expected an integer in [-9223372036854775808, 9223372036854775807], found "
       "'99999999999999999999'"},
      {"x = const() value=\"abc", "line 1, column 19: the string is not closed by '\"'"},
      {"x = const() value=1e999", "line 1, column 19: attribute 'value': expected a number in the range of a double, found '1e999'"},
      {"x = const() value=+-1", "line 1, column 19: attribute 'value': expected a number, found '+-1'"},
      {"x = placeholder() shape=shape[9223372036854775807]",
       "line 1: attribute 'shape': shape [9223372036854775807] is too large: its dimensions multiply past "
       "1152921504606846975 elements"},
      {"x = placeholder() shape=shape[9223372036854775808]",
       "line 1, column 31: attribute 'shape': expected an integer in [-9223372036854775808, 9223372036854775807], found "
       "'9223372036854775808]'"},

      {"x = const() value=[1, 2", "line 1, column 24: attribute 'value': expected ',' or ']' in the list, found the end of the line"},
      {"x = const() value=[1, \"a\"]", "line 1, column 26: attribute 'value': expected list elements of one type (numbers or strings), found ']'"},
      {"x = placeholder() shape=shape[2, -1]", "line 1, column 34: attribute 'shape': expected a dimension: a non-negative integer or '?', found '-1]'"},
      {"x = placeholder() shape=shape[2, 3", "line 1, column 35: attribute 'shape': expected ',' or ']' in the shape, found the end of the line"},
      {"x = placeholder() dtype=float128", "line 1, column 25: attribute 'dtype': expected a value (number, true, false, \"string\", dtype, shape[...], [list]), found 'float128'"},
      {"x = placeholder() dtype=f32 dtype=f64", "line 1, column 29: attribute 'dtype' is given twice"},
      {"x = placeholder() @", "line 1, column 20: expected a device after '@', found the end of the line"},
      {"x = placeholder() @CPU:0 dtype=f32", "line 1, column 26: expected the end of the line after the device, found 'dtype=f32'"},
      {"a = placeholder() dtype=f32 shape=shape[]\nb = relu(a\n", "line 2, column 11: expected ',' or ')' in the input list, found the end of the line"},
  };
  for (const bad& b : cases) {
    INFO(b.text);
    auto def = tf::parse_graph(b.text);
    REQUIRE(!def.ok());
    CHECK(def.status().code() == tf::status_code::invalid_argument);
    CHECK(def.status().message() == b.message);
  }
  auto missing = tf::load_graph("/nonexistent/graph.tfg");
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == tf::status_code::not_found);
  CHECK(missing.status().message() == "cannot open graph file '/nonexistent/graph.tfg': No such file or directory");
}

TEST_CASE("text format: numbers are read exactly, integers as integers", "[runtime][text]") {
  auto attr = [](std::string_view text) {
    auto def = tf::parse_graph(std::string("x = const() v=") + std::string(text));
    REQUIRE(def.ok());
    return *def->nodes[0].attrs.find("v");
  };
  // Past 2^53 a double would round these; they stay exact.
  CHECK(*attr("9007199254740993").get<std::int64_t>() == 9007199254740993);
  CHECK(*attr("9223372036854775807").get<std::int64_t>() == 9223372036854775807);
  CHECK(*attr("-9223372036854775808").get<std::int64_t>() == std::numeric_limits<std::int64_t>::min());
  CHECK((*attr("[9007199254740993, -1]").get<std::vector<std::int64_t>>() == std::vector<std::int64_t>{9007199254740993, -1}));
  // inf and nan as single values, as to_text writes them.
  CHECK(*attr("inf").get<double>() == std::numeric_limits<double>::infinity());
  CHECK(*attr("-inf").get<double>() == -std::numeric_limits<double>::infinity());
  CHECK(*attr("+inf").get<double>() == std::numeric_limits<double>::infinity());
  CHECK(std::isnan(*attr("nan").get<double>()));
  CHECK(std::isnan(attr("[1, nan]").get<std::vector<double>>()->at(1)));
  CHECK(std::isnan(*attr("-nan").get<double>()));
  CHECK(std::isnan(*attr("+nan").get<double>()));
  CHECK((*attr("[inf, -inf, +inf]").get<std::vector<double>>() ==
         std::vector<double>{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::infinity()}));
  for (double v : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0.1, -2.5e300,
                   -0.0, 5e-324, 1.0}) {
    const tf::attr_value a(v);
    CHECK(attr(a.to_string()) == a);  // round-trips
  }
  // NaN (of either sign, as to_text writes it) comes back NaN, alone and in lists.
  for (double v : {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()}) {
    CHECK(std::isnan(*attr(tf::attr_value(v).to_string()).get<double>()));
    const auto list = attr(tf::attr_value(std::vector<double>{v, 2.0}).to_string());
    CHECK(std::isnan(list.get<std::vector<double>>()->at(0)));
  }
}

TEST_CASE("load_graph: only regular files, a size limit, I/O errors as I/O errors", "[runtime][text]") {
  tf::test::require_error(tf::load_graph("/dev/zero"), tf::status_code::invalid_argument,
                          "graph file '/dev/zero' is not a regular file");
  tf::test::require_error(tf::load_graph("/tmp"), tf::status_code::invalid_argument, "graph file '/tmp' is a directory");
  // /proc/self/mem is a regular file whose first page cannot be read.
  tf::test::require_error(tf::load_graph("/proc/self/mem"), tf::status_code::unavailable,
                          "I/O error reading graph file '/proc/self/mem' after 0 bytes: Input/output error");
  const std::string path = "typeflow_test_load_graph.tfg";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("x = placeholder() dtype=f32 shape=shape[2]\ny = relu(x)\n", f);
    std::fclose(f);
  }
  CHECK(tf::load_graph(path).ok());
  tf::test::require_error(tf::load_graph(path, {.max_bytes = 10}), tf::status_code::resource_exhausted,
                          "graph file 'typeflow_test_load_graph.tfg' is larger than the limit of 10 bytes");
  std::remove(path.c_str());
}

TEST_CASE("hostile values: out-of-range attributes and constants are errors naming them", "[runtime][validation]") {
  constexpr std::string_view x = "x = placeholder() dtype=f32 shape=shape[2, 3]\n";
  CHECK(error_of("c = const() dtype=i8 shape=shape[2] value=[1, 1000]") ==
        "node 'c' (line 1): const: value 1000 (index 1) does not fit in dtype i8, whose range is [-128, 127]");
  CHECK(error_of("c = const() dtype=i32 shape=shape[1] value=[inf]") ==
        "node 'c' (line 1): const: value inf does not fit in dtype i32, whose range is [-2147483648, 2147483647]");
  CHECK(error_of("c = const() dtype=u8 shape=shape[] value=nan") ==
        "node 'c' (line 1): const: value nan does not fit in dtype u8, whose range is [0, 255]");
  CHECK_THAT(error_of("c = const() dtype=f32 shape=shape[] value=1e300"),
             Catch::Contains("const: value 1.0000000000000001e+300 does not fit in dtype f32"));
  CHECK_THAT(error_of(std::string(x) + "y = softmax(x) axis=9223372036854775807"),
             Catch::Contains("softmax: axis 9223372036854775807 is out of range for an input of rank 2"));
  CHECK(error_of(std::string(x) + "y = reshape(x) shape=[4294967296, 4294967296, -1]") ==
        "node 'y' (line 2): op reshape: attribute 'shape': shape [4294967296, 4294967296, ?] is too large: its dimensions "
        "multiply past 1152921504606846975 elements");
  CHECK_THAT(error_of(std::string(x) + "y = slice(x) begin=[0, 1] size=[1, 9223372036854775807]"),
             Catch::Contains("slice: axis 1: begin 1 + size 9223372036854775807 exceeds dimension 3"));
  CHECK_THAT(error_of(std::string(x) + "y = pad(x) paddings=[0, 0, 9223372036854775807, 1]"),
             Catch::Contains("larger than 64 bits hold"));
  CHECK_THAT(error_of(std::string(x) + "y = fill() shape=shape[1152921504606846976] value=1 dtype=f32"),
             Catch::Contains("shape [1152921504606846976] is too large"));
  CHECK(error_of(std::string(x) + "y = concat(x, x) axis=-9223372036854775808") ==
        "node 'y' (line 2): concat: axis -9223372036854775808 is out of range for rank 2");
  CHECK_THAT(error_of("x = placeholder() dtype=f32 shape=shape[1, 8, 8, 1]\ny = max_pool2d(x) window_h=9223372036854775807"),
             Catch::Contains("max_pool2d: windows must be at most 2147483647, got window 9223372036854775807 x 2"));
  CHECK_THAT(error_of("x = placeholder() dtype=f32 shape=shape[1, 8, 8, 1]\nf = placeholder() dtype=f32 shape=shape[3, 3, 1, 1]\n"
                      "y = conv2d(x, f) dilation_h=4611686018427387904"),
             Catch::Contains("conv2d: strides and dilations must be at most 2147483647"));
  // Two dimensions fine alone whose product is not: the op's output is refused.
  CHECK_THAT(error_of("a = placeholder() dtype=f32 shape=shape[1073741824, 1]\nb = placeholder() dtype=f32 shape=shape[1, 1073741824]\n"
                      "y = add(a, b)"),
             Catch::Contains("add: output shape [1073741824, 1073741824] is too large"));
}

TEST_CASE("validation: every error names the node and says what is wrong", "[runtime][validation]") {
  constexpr std::string_view x = "x = placeholder() dtype=f32 shape=shape[2, 3]\n";
  CHECK(error_of(std::string(x) + "y = frobnicate(x)") ==
        "node 'y' (line 2): unknown op 'frobnicate' (no kernel list of this registry has it for device CPU; an op of your "
        "own needs a registry that lists its kernels: runtime_graph<Device, tf::registry<my_kernels, tf::cpu_kernel_list>> "
        "and the same registry for runtime_session)");
  CHECK(error_of(std::string(x) + "x = relu(x)") == "node 'x' (line 2): duplicate name (also node 0)");
  CHECK(error_of(std::string(x) + "y = relu(z)") == "node 'y' (line 2): input 'z' names no node in the graph");
  CHECK(error_of(std::string(x) + "y = relu(x:1)") ==
        "node 'y' (line 2): input 'x:1': node 'x' has one output (port 0)");
  CHECK(error_of(std::string(x) + "s = split(x) axis=1 num_split=1000000000") ==
        "node 's' (line 2): split: 1000000000 outputs, more than the 65536 an op may have");
  CHECK(error_of(std::string(x) + "s = split(x) axis=1 num_split=3\ny = relu(s:3)") ==
        "node 'y' (line 3): input 's:3': node 's' has 3 outputs (ports 0 to 2)");
  CHECK(error_of(std::string(x) + "y = add(x)") == "node 'y' (line 2): op add takes 2 inputs, got 1");
  CHECK(error_of(std::string(x) + "y = relu(x, x)") == "node 'y' (line 2): op relu takes 1 input, got 2");
  CHECK(error_of(std::string(x) + "y = concat()") == "node 'y' (line 2): op concat takes at least 1 input, got 0");
  CHECK(error_of(std::string(x) + "y = matmul(x, x) transpose_a=1") ==
        "node 'y' (line 2): op matmul: attribute 'transpose_a' must be bool, got int 1");
  CHECK(error_of(std::string(x) + "y = relu(x) alpha=0.1") == "node 'y' (line 2): op relu has no attribute 'alpha'; it takes none");
  CHECK(error_of(std::string(x) + "y = matmul(x, x)") ==
        "node 'y' (line 2): matmul: inner dimensions differ: a is [2, 3] (k = 3), b is [2, 3] (k = 2)");
  CHECK(error_of("a = relu(b)\nb = relu(a)\nc = relu(c)") == "the graph has a cycle through nodes 'a', 'b', 'c'");
  CHECK(error_of(std::string(x) + "y = relu(x, ^y)") == "the graph has a cycle through nodes 'y'");
  CHECK(error_of(std::string(x) + "y = relu(x) @/device:GPU:0") ==
        "node 'y' (line 2): device '/device:GPU:0' is not available; this graph runs on CPU:0 (place graphs on several "
        "devices with a device_set)");
  CHECK(error_of("x = placeholder() dtype=i8 shape=shape[2, 2]\ny = matmul(x, x)") ==
        "node 'y' (line 2): no kernel for op matmul on device CPU with dtype i8; it has kernels for: f16, f32, f64, i32, i64");
  CHECK(error_of("x = placeholder() dtype=f32") == "node 'x' (line 1): placeholder: attribute 'shape' is required");
  CHECK(error_of("x = placeholder() dtype=3 shape=shape[1]") ==
        "node 'x' (line 1): placeholder: attribute 'dtype' must be dtype, got int 3");
  CHECK(error_of("x = placeholder(y) dtype=f32 shape=shape[1]\ny = placeholder() dtype=f32 shape=shape[1]") ==
        "node 'x' (line 1): a placeholder takes no data inputs, got 1");
  CHECK(error_of("c = const() dtype=f32 shape=shape[2] value=[1, 2, 3]") ==
        "node 'c' (line 1): const: 3 values for shape [2] (2 elements)");
  CHECK(error_of("c = const() dtype=f32 shape=shape[?] value=1") ==
        "node 'c' (line 1): const: shape [?] has an unknown dimension");
  // A graph built in code: no line numbers.
  tf::graph_def def;
  def.nodes.push_back({"", "relu", {}, {}, "", 0});
  auto g = graph::make(def);
  REQUIRE(!g.ok());
  CHECK(g.status().message() == "node number 0 (line 0): empty name");
  def.nodes[0].name = "a b";
  CHECK(graph::make(def).status().message() == "node 'a b': a name may not contain spaces or any of : ^ , ( ) # @ = \" \\");
}

TEST_CASE("a static graph becomes a runtime graph with the same ops and attributes", "[runtime][static]") {
  constexpr auto x = tf::input<"x", float, tf::static_shape<tf::dyn, 4>>;
  constexpr auto w = tf::variable<"w", float, tf::static_shape<4, 2>>;
  using namespace tf::literals;
  constexpr auto y = tf::softmax(tf::apply<tf::ops::matmul{.transpose_b = false}>(x, w) * 0.5_c);
  auto def = tf::to_graph_def(tf::graph(y));
  REQUIRE(def.ok());
  const std::string text = tf::to_text(*def);
  CHECK_THAT(text, Catch::Contains("x = placeholder() dtype=f32 shape=shape[?, 4]"));
  CHECK_THAT(text, Catch::Contains("w = placeholder() dtype=f32 shape=shape[4, 2]"));
  CHECK_THAT(text, Catch::Contains("= matmul(x, w) transpose_a=false transpose_b=false"));
  CHECK_THAT(text, Catch::Contains("= const() dtype=f32 shape=shape[] value=0.5"));
  auto g = graph::make(*tf::parse_graph(text));
  REQUIRE(g.ok());
  CHECK(g->size() == def->nodes.size());
}

// ---------------------------------------------------------------------------------------------
// The runtime session




namespace {

using graph = tf::runtime_graph<tf::cpu>;
using session = tf::runtime_session<tf::cpu>;

std::shared_ptr<const graph> build(std::string_view text) {
  auto def = tf::parse_graph(text);
  REQUIRE(def.ok());
  auto g = graph::make(std::move(*def));
  if (!g.ok()) FAIL(g.status().to_string());
  return std::make_shared<const graph>(std::move(*g));
}

bool same_bits(const tf::tensor& a, const tf::tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace

TEST_CASE("a runtime graph computes what a plain loop computes, on both executors", "[runtime][session]") {
  auto g = build(R"(
x = placeholder() dtype=f32 shape=shape[?, 3]
w = const() dtype=f32 shape=shape[3, 2] value=[1, -1, 0.5, 2, -0.25, 0]
b = const() dtype=f32 shape=shape[2] value=[0.5, -3]
h = matmul(x, w)
hb = add(h, b)
y = relu(hb)
)");
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{5, 3}, 1);
  const float w[3][2] = {{1, -1}, {0.5f, 2}, {-0.25f, 0}};
  const float bias[2] = {0.5f, -3};
  tf::cpu device;
  for (int threads : {0, 2}) {
    session s(g, device, threads);
    auto out = s.run({{"x", x}}, {"y", "h:0"});
    REQUIRE(out.ok());
    REQUIRE(out->size() == 2);
    const auto xs = x.unchecked_values<float>();
    const auto ys = (*out)[0].unchecked_values<float>();
    REQUIRE((*out)[0].shape() == tf::shape{5, 2});
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 2; ++c) {
        float acc = 0;
        for (int k = 0; k < 3; ++k) acc += xs[r * 3 + k] * w[k][c];
        CHECK(ys[r * 2 + c] == Approx(std::max(acc + bias[c], 0.0f)).margin(1e-6));
      }
  }
}

TEST_CASE("1000 random DAGs: the parallel executor at 1, 2 and 4 threads agrees with the sequential one",
          "[runtime][differential]") {
  tf::cpu device;
  std::size_t nodes_run = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const tf::test::random_dag d = tf::test::make_random_dag(seed);
    INFO("seed " << seed << "\n" << d.text);
    auto g = build(d.text);
    const tf::tensor a = tf::test::random_tensor<float>(tf::shape{3, 4}, seed);
    const tf::tensor b = tf::test::random_tensor<float>(tf::shape{4}, seed + 7);
    session sequential(g, device, 0);
    auto expected = sequential.run({{"n0", a}, {"n1", b}}, d.fetches);
    REQUIRE(expected.ok());
    nodes_run += g->size();
    for (int threads : {1, 2, 4}) {
      session parallel(g, device, threads);
      for (int repeat = 0; repeat < 2; ++repeat) {
        auto got = parallel.run({{"n1", b}, {"n0", a}}, d.fetches);
        REQUIRE(got.ok());
        REQUIRE(got->size() == expected->size());
        for (std::size_t k = 0; k < got->size(); ++k) REQUIRE(same_bits((*got)[k], (*expected)[k]));
      }
    }
  }
  CHECK(nodes_run > 10000);
}

TEST_CASE("8 threads x 200 runs on one session, each result correct", "[runtime][threads]") {
  auto g = build(R"(
x = placeholder() dtype=f32 shape=shape[?, 8]
w = const() dtype=f32 shape=shape[8, 8] value=0.125
h1 = matmul(x, w)
a = tanh(h1)
b = sigmoid(h1)
c = mul(a, b)
s = reduce_sum(c) axes=[1]
)");
  tf::cpu device;
  for (int threads : {0, 2}) {
    session s(g, device, threads);
    std::atomic<int> wrong{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 8; ++t)
      workers.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) {
          const float v = static_cast<float>(t * 1000 + i) * 1e-4f;
          const tf::tensor x = *tf::tensor::filled<float>(tf::shape{2, 8}, v);
          auto out = s.run({{"x", x}}, {"s"});
          const float h = v;  // each h1 element: 8 * v * 0.125
          const float expect = 8 * std::tanh(h) * (1 / (1 + std::exp(-h)));
          if (!out.ok() || std::abs((*out)[0].unchecked_values<float>()[1] - expect) > 1e-5f) ++wrong;
        }
      });
    for (auto& w : workers) w.join();
    CHECK(wrong.load() == 0);
    CHECK(s.num_executors() == 1);
  }
}

TEST_CASE("nodes with several outputs: inputs and fetches name a port, on both executors", "[runtime][outputs]") {
  constexpr std::string_view text = R"(
x = placeholder() dtype=f32 shape=shape[?, 6]
s = split(x) axis=1 num_split=3
y = add(s:0, s:2)
t = top_k(x) k=2
i = cast(t:1) to=f32
z = mul(t, i)
)";
  auto g = build(text);
  // The text format keeps the ports as written.
  CHECK_THAT(tf::to_text(g->to_def()), Catch::Contains("y = add(s:0, s:2)"));
  CHECK(g->operator[](*g->find("s")).num_outputs() == 3);
  CHECK(g->operator[](*g->find("t")).spec(1) == tf::tensor_spec{tf::dtype::i64, tf::shape{tf::dyn, 2}});
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{4, 6}, 3);
  tf::cpu device;
  auto parts = tf::call<float>(device, tf::ops::split{.axis = 1, .num_split = 3}, x);
  auto top = tf::call<float>(device, tf::ops::top_k{.k = 2}, x);
  REQUIRE((parts.ok() && top.ok()));
  const auto y = tf::call<float>(device, tf::ops::add{}, (*parts)[0], (*parts)[2]);
  const auto i = tf::call<std::int64_t>(device, tf::ops::cast{.to = tf::dtype::f32}, (*top)[1]);
  REQUIRE((y.ok() && i.ok()));
  const auto z = tf::call<float>(device, tf::ops::mul{}, (*top)[0], *i);
  REQUIRE(z.ok());
  for (int threads : {0, 2}) {
    INFO(threads << " inter-op threads");
    session s(g, device, threads);
    for (int run = 0; run < 2; ++run) {  // the second run reuses the executor and its output slots
      auto out = s.run({{"x", x}}, {"s:1", "y", "t:1", "z", "t:0", "t"});
      INFO("status: " << out.status().to_string());
      REQUIRE(out.ok());
      REQUIRE(out->size() == 6);
      CHECK(tf::test::as_doubles<float>((*out)[0]) == tf::test::as_doubles<float>((*parts)[1]));
      CHECK(tf::test::as_doubles<float>((*out)[1]) == tf::test::as_doubles<float>(*y));
      CHECK(tf::test::as_doubles<std::int64_t>((*out)[2]) == tf::test::as_doubles<std::int64_t>((*top)[1]));
      CHECK(tf::test::as_doubles<float>((*out)[3]) == tf::test::as_doubles<float>(*z));
      CHECK(tf::test::as_doubles<float>((*out)[4]) == tf::test::as_doubles<float>((*top)[0]));
      CHECK(tf::test::as_doubles<float>((*out)[5]) == tf::test::as_doubles<float>((*top)[0]));  // "t" is "t:0"
    }
    auto message = [&](auto&& r) { return r.ok() ? std::string("ok") : std::string(r.status().message()); };
    CHECK(message(s.run({{"x", x}}, {"t:2"})) == "fetch 't:2': node 't' has 2 outputs (ports 0 to 1)");
    CHECK(message(s.run({{"s", x}}, {"y"})) ==
          "feed 's': node 's' has 3 outputs (ports 0 to 2); only a node with one output can be fed");
    CHECK(message(s.run({{"x", x}}, {"y"}, {"s:1"})) == "target 's:1': a target names a node, not one of its outputs");
    CHECK(message(s.run({{"x", x}}, {"t:x"})) == "fetch 't:x': the port is not a number");
    CHECK(message(s.run({{"x", x}}, {"u:1"})) == "fetch 'u:1' names no node in the graph");
  }
}

TEST_CASE("feeds replace any node; targets run; executors are cached by signature", "[runtime][session]") {
  auto g = build(R"(
x = placeholder() dtype=f32 shape=shape[2]
h = exp(x)
y = add(h, h)
t = neg(x)
)");
  tf::cpu device;
  session s(g, device);
  const tf::tensor h = *tf::tensor::from_values<float>({1.0f, 2.0f});
  // h is fed: x is not needed and need not be fed.
  auto out = s.run({{"h", h}}, {"y"});
  REQUIRE(out.ok());
  CHECK(tf::test::as_doubles<float>((*out)[0]) == std::vector<double>{2.0, 4.0});
  tf::run_metadata meta;
  tf::run_options traced;
  traced.trace = tf::trace_level::full;
  const tf::tensor x = *tf::tensor::from_values<float>({0.0f, 1.0f});
  auto with_target = s.run({{"x", x}}, {"y:0"}, {"t"}, traced, &meta);
  REQUIRE(with_target.ok());
  std::vector<std::string> ran;
  for (const auto& st : meta.steps) ran.push_back(st.node);
  std::sort(ran.begin(), ran.end());
  CHECK(ran == std::vector<std::string>{"h", "t", "x", "y"});
  for (const auto& st : meta.steps) {
    CHECK(st.end_ns >= st.start_ns);
    CHECK(st.device == "/job:localhost/replica:0/task:0/device:CPU:0");
  }
  const std::string trace = meta.to_chrome_trace();
  CHECK_THAT(trace, Catch::Contains("\"traceEvents\""));
  CHECK_THAT(trace, Catch::Contains("\"name\": \"y\", \"cat\": \"add\", \"ph\": \"X\""));
  CHECK_THAT(trace, Catch::Contains("\"output\": \"f32[2]\", \"bytes\": 8"));
  const std::size_t before = s.num_executors();
  REQUIRE(s.run({{"x", x}}, {"y:0"}, {"t"}).ok());
  CHECK(s.num_executors() == before);  // the same signature
}

TEST_CASE("the sequential executor plans a set of fed shapes the second time it sees it; planned runs agree",
          "[runtime][memory]") {
  // Intermediates live across several nodes, so the arena reuses places; c is fetched as well
  // as read, so it keeps a buffer of its own.
  auto g = build(R"(
x = placeholder() dtype=f32 shape=shape[?, 3]
a = exp(x)
b = neg(a)
c = mul(b, x)
d = add(c, a)
e = tanh(d)
y = add(e, b)
)");
  using executor = tf::runtime_executor<tf::cpu>;
  const std::vector<std::string> feeds{"x"}, fetches{"y", "c"}, targets;
  auto e = executor::make(g, feeds, fetches, targets);
  REQUIRE(e.ok());
  tf::cpu device;
  const auto run = [&](const tf::tensor& x) {
    tf::runtime_step step;
    step.feeds = std::span(&x, 1);
    std::vector<tf::tensor> out;
    const tf::status st = (*e)->run_sequential(device, step, out);
    REQUIRE(st.ok());
    return out;
  };
  const auto check = [](const tf::tensor& x, const std::vector<tf::tensor>& out) {
    const auto xs = x.unchecked_values<const float>();
    REQUIRE(out[0].shape() == x.shape());
    REQUIRE(out[1].shape() == x.shape());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double a = std::exp(double{xs[i]}), b = -a, c = b * xs[i];
      CHECK(out[1].unchecked_values<const float>()[i] == Approx(c).epsilon(1e-5));
      CHECK(out[0].unchecked_values<const float>()[i] == Approx(std::tanh(c + a) + b).epsilon(1e-5).margin(1e-6));
    }
  };
  const tf::tensor x5 = tf::test::random_tensor<float>(tf::shape{5, 3}, 1);
  const tf::tensor other5 = tf::test::random_tensor<float>(tf::shape{5, 3}, 2);
  const tf::tensor x2 = tf::test::random_tensor<float>(tf::shape{2, 3}, 3);
  check(x5, run(x5));  // [5, 3] seen once: remembered, not planned
  CHECK((*e)->plans_made() == 0);
  const auto recorded = run(x5);  // seen again: records the plan
  check(x5, recorded);
  CHECK((*e)->plans_made() == 1);
  const auto planned = run(other5);  // runs by it
  check(other5, planned);
  check(x5, recorded);  // fetched outputs own their buffers: the planned step wrote elsewhere
  CHECK((*e)->plans_made() == 1);
  check(x2, run(x2));
  check(x2, run(x2));
  check(x5, run(x5));
  CHECK((*e)->plans_made() == 2);
  // Shapes that change on every run are never planned: placing costs O(nodes^2).
  for (int round = 0; round < 2; ++round)
    for (std::int64_t n = 6; n < 26; ++n) {
      const tf::tensor x = tf::test::random_tensor<float>(tf::shape{n, 3}, static_cast<unsigned>(n));
      check(x, run(x));
    }
  CHECK((*e)->plans_made() == 2);
  // Bounded: the least recently used plan makes room.
  for (std::int64_t n = 30; n < 50; ++n) {
    const tf::tensor x = tf::test::random_tensor<float>(tf::shape{n, 3}, static_cast<unsigned>(n));
    for (int k = 0; k < 3; ++k) check(x, run(x));
  }
  CHECK((*e)->plans_made() == 22);
  CHECK((*e)->plans_held() == 16);
}

TEST_CASE("inter-op thread counts outside [0, 4096] leave a session that says so on every run", "[runtime][errors]") {
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[2]\ny = relu(x)\n");
  REQUIRE(def.ok());
  auto g = std::make_shared<const graph>(std::move(graph::make(std::move(*def))).value());
  tf::cpu device;
  auto x = tf::tensor::filled<float>(tf::shape{2}, 1.0f);
  for (int threads : {-1, 4097, 100000}) {
    INFO(threads);
    tf::runtime_session<tf::cpu> s(g, device, threads);
    CHECK(s.init_status().code() == tf::status_code::invalid_argument);
    tf::test::require_error(s.run({{"x", *x}}, {"y"}), tf::status_code::invalid_argument,
                            "inter_op_threads is " + std::to_string(threads));
  }
  tf::runtime_session<tf::cpu> fine(g, device, 2);
  CHECK(fine.init_status().ok());
  CHECK(fine.run({{"x", *x}}, {"y"}).ok());
}

TEST_CASE("run-time errors: each a status naming what was wrong", "[runtime][errors]") {
  auto g = build(R"(
x = placeholder() dtype=f32 shape=shape[?, 2]
z = placeholder() dtype=f32 shape=shape[?]
q = placeholder() dtype=f32 shape=shape[?]
y = relu(x)
s = add(z, q)
)");
  tf::cpu device;
  session s(g, device);
  const tf::tensor good = *tf::tensor::filled<float>(tf::shape{3, 2}, 1.0f);
  auto message = [&](auto&& r) { return r.ok() ? std::string("ok") : std::string(r.status().message()); };
  CHECK(message(s.run({{"x", good}}, {"nope"})) == "fetch 'nope' names no node in the graph");
  CHECK(message(s.run({{"x", good}}, {"y:1"})) == "fetch 'y:1': node 'y' has one output (port 0)");
  CHECK(message(s.run({{"x", good}}, {"y"}, {"nope"})) == "target 'nope' names no node in the graph");
  CHECK(message(s.run({}, {"y"})) == "placeholder 'x' is needed by the fetches but not fed");
  CHECK(message(s.run({{"x", good}}, {})) == "a run needs at least one fetch or target");
  CHECK(message(s.run({{"x", good}, {"x:0", good}}, {"y"})) == "feed 'x:0' is given twice");
  CHECK(message(s.run({{"x", *tf::tensor::filled<double>(tf::shape{3, 2}, 1.0)}}, {"y"})) ==
        "feed 'x': dtype f64 does not match the node's f32");
  CHECK(message(s.run({{"x", *tf::tensor::filled<float>(tf::shape{3, 5}, 1.0f)}}, {"y"})) ==
        "feed 'x': shape [3, 5] does not match the node's [?, 2]");
  CHECK(message(s.run({{"x", tf::tensor()}}, {"y"})) == "feed 'x': the tensor has no storage");
  auto bad_shapes = s.run({{"z", *tf::tensor::filled<float>(tf::shape{3}, 1.0f)},
                           {"q", *tf::tensor::filled<float>(tf::shape{4}, 1.0f)}}, {"s"});
  REQUIRE(!bad_shapes.ok());
  CHECK(bad_shapes.status().code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(bad_shapes.status().message()), Catch::StartsWith("node 's' (add): add: shapes [3] and [4]"));
  // The session still works.
  CHECK(s.run({{"x", good}}, {"y"}).ok());
}

TEST_CASE("timeouts, cancellation and close while running", "[runtime][cancel]") {
  std::string text = "x = placeholder() dtype=f32 shape=shape[64, 64]\n";
  for (int i = 1; i <= 200; ++i) text += "n" + std::to_string(i) + " = matmul(" + (i == 1 ? std::string("x") : "n" + std::to_string(i - 1)) + ", x)\n";
  auto g = build(text);
  tf::cpu device;
  const tf::tensor x = *tf::tensor::filled<float>(tf::shape{64, 64}, 0.01f);
  for (int threads : {0, 2}) {
    session s(g, device, threads);
    tf::run_options late;
    late.timeout = std::chrono::nanoseconds(1);
    auto r = s.run({{"x", x}}, {"n200"}, {}, late);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == tf::status_code::deadline_exceeded);
    CHECK(r.status().message() == "the step ran past its timeout");

    tf::cancellation token;
    token.cancel();
    tf::run_options cancelled;
    cancelled.cancel = &token;
    auto c = s.run({{"x", x}}, {"n200"}, {}, cancelled);
    REQUIRE(!c.ok());
    CHECK(c.status().code() == tf::status_code::cancelled);
    CHECK(s.run({{"x", x}}, {"n200"}).ok());

    // Close while four threads run steps: every run ends (ok or cancelled), close returns.
    std::atomic<int> finished{0}, bad{0};
    std::vector<std::thread> runners;
    for (int t = 0; t < 4; ++t)
      runners.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          auto out = s.run({{"x", x}}, {"n200"});
          if (!out.ok() && out.status().code() != tf::status_code::cancelled) ++bad;
        }
        ++finished;
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s.close();
    for (auto& t : runners) t.join();
    CHECK(finished.load() == 4);
    CHECK(bad.load() == 0);
    auto after = s.run({{"x", x}}, {"n200"});
    REQUIRE(!after.ok());
    CHECK(after.status().message() == "the session is closed");
  }
}
