// SPDX-License-Identifier: Apache-2.0
// Devices: memory spaces and host accessors, tf::copy on every path, device names, device sets,
// the rendezvous, and runtime graphs placed across devices (placement, partitions, send/recv,
// the executor barrier), against the same graph on one device. One translation unit: each device
// type of a session instantiates its dispatch table.
#include "placement_registry.hpp"
#include "random_dag.hpp"
#include "remote_device.hpp"
#include "support.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <thread>

namespace tf = typeflow;
using tf::test::remote_device;

namespace {

using registry = tf::test::placement_registry;
using host_session = tf::runtime_session<tf::devices<tf::cpu, tf::thread_pool>, registry>;
using mixed_session = tf::runtime_session<tf::devices<tf::cpu, tf::thread_pool, remote_device>, registry>;
using probe_session = host_session;  // its registry has the probe op

bool same_bits(const tf::tensor& a, const tf::tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

tf::graph_def parse(std::string_view text) {
  auto def = tf::parse_graph(text);
  REQUIRE(def.ok());
  return std::move(*def);
}

// The graph with node k placed on devices[k % size] (placeholders too).
tf::graph_def placed_alternately(tf::graph_def def, const std::vector<std::string>& devices) {
  for (std::size_t k = 0; k < def.nodes.size(); ++k) def.nodes[k].device = devices[k % devices.size()];
  return def;
}


// CPU:0 a cpu and CPU:1 a thread_pool of `threads` intra-op threads, in one set.
struct two_hosts {
  explicit two_hosts(int threads) : c1(threads) {
    set.add(c0);
    set.add(c1);
  }
  tf::cpu c0;
  tf::thread_pool c1;
  tf::device_set<tf::cpu, tf::thread_pool> set;
};

}  // namespace

TEST_CASE("memory spaces: host accessors refuse device memory, naming the device", "[devices][memory]") {
  remote_device remote;
  auto t = remote.allocate(tf::dtype::f32, tf::shape{2, 3});
  REQUIRE(t.ok());
  CHECK(t->space() == tf::memory_space::device("TEST", 0));
  CHECK(!t->space().host_accessible());
  for (tf::status st : {t->values<float>().status(), t->at<float>(0).status(), t->eigen<float, 2>().status(), t->clone().status(),
                        tf::typed_tensor<float>::from(*t).status()}) {
    CHECK(st.code() == tf::status_code::failed_precondition);
    CHECK_THAT(std::string(st.message()), Catch::Contains("device memory of TEST:0") && Catch::Contains("f32[2, 3]"));
  }
  CHECK(t->view().space() == t->space());
  CHECK(tf::tensor::allocate(tf::dtype::f32, tf::shape{2}).value().space() == tf::memory_space::host());
  tf::cpu host;
  CHECK(host.allocate(tf::dtype::f32, tf::shape{2})->space().host_accessible());
}

TEST_CASE("tf::copy: host to host, to and from a device, within it, and between two devices", "[devices][copy]") {
  tf::cpu c0;
  tf::thread_pool c1(1);
  remote_device r0, r1;
  tf::device_set<tf::cpu, tf::thread_pool, remote_device> set;
  set.add(c0);
  set.add(c1);
  set.add(r0);
  set.add(r1);
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{3, 5}, 11);
  auto h = tf::copy(x, c0, c1);
  REQUIRE(h.ok());
  CHECK(h->data() != x.data());
  CHECK(same_bits(*h, x));
  auto on_r0 = tf::copy(x, c0, r0);
  REQUIRE(on_r0.ok());
  CHECK(on_r0->space() == tf::memory_space::device("TEST", 0));
  CHECK(r0.copies_in == 1);
  auto within = tf::copy(*on_r0, r0, r0);
  REQUIRE(within.ok());
  CHECK(r0.copies_within == 1);
  auto on_r1 = tf::copy(*within, r0, r1);  // through the host
  REQUIRE(on_r1.ok());
  CHECK(on_r1->space() == tf::memory_space::device("TEST", 1));
  CHECK(r0.copies_out == 1);
  CHECK(r1.copies_in == 1);
  auto back = tf::copy(*on_r1, r1, c0);
  REQUIRE(back.ok());
  CHECK(back->space().host_accessible());
  CHECK(same_bits(*back, x));
  // A device tensor named as coming from a device it is not in.
  auto wrong = tf::copy(*on_r1, r0, c0);
  REQUIRE(!wrong.ok());
  CHECK(wrong.status().code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(wrong.status().message()), Catch::Contains("device memory of TEST:1") && Catch::Contains("TEST:0"));
  CHECK(tf::copy(tf::tensor(), c0, r0).status().code() == tf::status_code::invalid_argument);
}

TEST_CASE("device names: full, partial and legacy forms, matching, and errors", "[devices][names]") {
  auto full = tf::device_name::parse("/job:localhost/replica:0/task:0/device:CPU:1");
  REQUIRE(full.ok());
  CHECK(full->is_full());
  for (const char* partial : {"", "CPU", "cpu", "/device:CPU", "/cpu:1", "CPU:1", "/device:CPU:1", "/job:localhost", "/device:CPU:*"}) {
    INFO(partial);
    auto p = tf::device_name::parse(partial);
    REQUIRE(p.ok());
    CHECK(p->matches(*full));
  }
  for (const char* other : {"GPU", "CPU:0", "/job:worker", "/task:1/device:CPU:1"}) {
    INFO(other);
    CHECK(!tf::device_name::parse(other)->matches(*full));
  }
  for (const char* bad : {"/device:CPU:x", "/devices", "9PU:0", "/device:CPU:-1", "/replica:a"}) {
    INFO(bad);
    auto p = tf::device_name::parse(bad);
    REQUIRE(!p.ok());
    CHECK(p.status().code() == tf::status_code::invalid_argument);
    CHECK_THAT(std::string(p.status().message()), Catch::Contains(bad));
  }
  CHECK(tf::device_name::full("GPU", 2) == "/job:localhost/replica:0/task:0/device:GPU:2");
}

TEST_CASE("device_set: ordinals per type, names, lookup, counts, client and priorities", "[devices][set]") {
  tf::cpu c0, c2;
  tf::thread_pool c1(1);
  remote_device r0;
  tf::device_set<tf::cpu, tf::thread_pool, remote_device> set;
  set.add(r0);
  set.add(c0);
  set.add(c1);
  set.add(c2);
  CHECK(set.size() == 4);
  CHECK(set[1].name == "/job:localhost/replica:0/task:0/device:CPU:0");
  CHECK(c1.name() == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(c2.name() == "/job:localhost/replica:0/task:0/device:CPU:2");
  CHECK(r0.name() == "/job:localhost/replica:0/task:0/device:TEST:0");
  CHECK(set.count("CPU") == 3);
  CHECK(set.count("TEST") == 1);
  CHECK(set.count("GPU") == 0);
  CHECK(*set.find("CPU:1") == 2);
  CHECK(*set.find("/device:TEST:0") == 0);
  CHECK(*set.find("/job:localhost/replica:0/task:0/device:CPU:2") == 3);
  CHECK(set.find("GPU:0").status().code() == tf::status_code::not_found);
  CHECK_THAT(std::string(set.find("GPU:0").status().message()), Catch::Contains("CPU:0, CPU:1, CPU:2"));
  CHECK(set.find("CPU").status().code() == tf::status_code::invalid_argument);
  CHECK(set.client() == 1);
  CHECK(set.prioritized() == std::vector<std::size_t>{2, 1, 3, 0});  // thread_pool 60, cpu 50, TEST 10
  CHECK(set.matching(*tf::device_name::parse("/device:CPU")).size() == 3);
  CHECK(set[0].incarnation != set[1].incarnation);
}

TEST_CASE("rendezvous: send first or receive first, by slot or key; abort ends every wait", "[devices][rendezvous]") {
  auto keys = std::make_shared<tf::rendezvous_keys>();
  const std::string k0 = tf::rendezvous_key("/job:localhost/replica:0/task:0/device:CPU:0", 0xabc,
                                            "/job:localhost/replica:0/task:0/device:CPU:1", "h:0");
  CHECK(k0 == "/job:localhost/replica:0/task:0/device:CPU:0;0000000000000abc;/job:localhost/replica:0/task:0/device:CPU:1;h:0;0:0");
  const auto s0 = keys->add(k0);
  const auto s1 = keys->add("b");
  CHECK(keys->add(k0) == s0);
  const tf::tensor x = *tf::tensor::scalar<float>(2.5f);
  {
    tf::rendezvous r(keys);
    REQUIRE(r.send(s0, x).ok());
    CHECK(r.pending() == 1);
    tf::tensor got;
    r.recv_async(s0, [&](tf::status st, tf::tensor t) {
      REQUIRE(st.ok());
      got = t;
    });
    CHECK(*got.at<float>(0) == 2.5f);
    CHECK(r.pending() == 0);
    CHECK(r.send(s0, x).code() == tf::status_code::internal);  // twice
    bool called = false;
    r.recv_async("b", [&](tf::status st, tf::tensor t) { called = st.ok() && t.valid(); });
    CHECK(!called);
    REQUIRE(r.send("b", x).ok());
    CHECK(called);
    // A key that is not among the slots gets one.
    REQUIRE(r.send("unknown", x).ok());
    r.recv_async("unknown", [&](tf::status st, tf::tensor) { CHECK(st.ok()); });
  }
  {
    tf::rendezvous r(keys);
    tf::status seen;
    int calls = 0;
    r.recv_async(s1, [&](tf::status st, tf::tensor) {
      seen = st;
      ++calls;
    });
    CHECK(r.pending() == 1);
    r.abort(tf::errors::invalid_argument("partition 2 failed"));
    CHECK(calls == 1);
    CHECK(seen.message() == "partition 2 failed");
    CHECK(r.pending() == 0);
    CHECK(r.send(s0, x).message() == "partition 2 failed");
    r.recv_async(s0, [&](tf::status st, tf::tensor) { seen = st; });
    CHECK(seen.code() == tf::status_code::invalid_argument);
  }
}

namespace {

constexpr std::string_view mlp_text = R"(
x  = placeholder() dtype=f32 shape=shape[?, 4]
w1 = const() dtype=f32 shape=shape[4, 3] value=[0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2]
b1 = const() dtype=f32 shape=shape[3] value=0.5
h  = matmul(x, w1)
hb = add(h, b1)
a  = relu(hb)
w2 = const() dtype=f32 shape=shape[3, 2] value=[1, -1, 0.5, 2, -0.25, 0]
z  = matmul(a, w2)
t  = tanh(z)
y  = softmax(t) axis=-1
c  = reduce_sum(a) axes=[1] keep_dims=false
done = identity(c, ^y)
)";

}  // namespace

TEST_CASE("runtime graphs on two host devices, placed alternately, give bitwise the one-device results",
          "[devices][session]") {
  tf::cpu alone;
  two_hosts hosts(2);
  auto& set = hosts.set;
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{5, 4}, 3);
  auto one = tf::runtime_graph<tf::cpu>::make(parse(mlp_text));
  REQUIRE(one.ok());
  tf::runtime_session<tf::cpu> reference(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*one)), alone);
  auto expected = reference.run({{"x", x}}, {"y", "c", "h"});
  REQUIRE(expected.ok());
  for (int threads : {0, 1, 2}) {
    auto s = host_session::make(placed_alternately(parse(mlp_text), {"CPU:0", "/device:CPU:1"}), set,
                                {.inter_op_threads = threads});
    REQUIRE(s.ok());
    for (int repeat = 0; repeat < 3; ++repeat) {
      tf::run_metadata meta;
      tf::run_options trace;
      trace.trace = tf::trace_level::full;
      auto got = (*s)->run({{"x", x}}, {"y", "c", "h"}, {"done"}, trace, &meta);
      REQUIRE(got.ok());
      for (std::size_t k = 0; k < 3; ++k) CHECK(same_bits((*got)[k], (*expected)[k]));
      // Placement in the metadata, and the step stats name each node's device.
      bool saw_cpu1 = false;
      for (const auto& [node, device] : meta.placement)
        if (node == "hb") CHECK(device == "/job:localhost/replica:0/task:0/device:CPU:0");
        else if (node == "h") saw_cpu1 = device == "/job:localhost/replica:0/task:0/device:CPU:1";
      CHECK(saw_cpu1);
      for (const auto& st : meta.steps)
        if (st.node == "a") CHECK(st.device == "/job:localhost/replica:0/task:0/device:CPU:1");
      CHECK_THAT(meta.to_chrome_trace(), Catch::Contains("\"process_name\"") && Catch::Contains("device:CPU:1"));
    }
    CHECK((*s)->num_executors() == 2);
    auto dot = (*s)->to_dot({"x"}, {"y"});
    REQUIRE(dot.ok());
    CHECK_THAT(*dot, Catch::Contains("subgraph cluster_1") && Catch::Contains("_send/") && Catch::Contains("_recv/"));
  }
}

TEST_CASE("outputs of a node with several cross devices one by one, each with its own key", "[devices][outputs]") {
  constexpr std::string_view text = R"(
x = placeholder() dtype=f32 shape=shape[?, 6] @CPU:0
s = split(x) axis=1 num_split=3 @CPU:0
a = relu(s:1) @CPU:1
b = add(s:2, s:0) @CPU:1
c = mul(a, s:1) @CPU:1
t = top_k(x) k=3 @CPU:1
v = neg(t:0) @CPU:0
s/1 = neg(s:1) @CPU:0
q = add(s/1, s:1) @CPU:1
)";
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{5, 6}, 11);
  const std::vector<std::string> fetches = {"b", "c", "v", "t:1", "s:1", "q"};
  tf::cpu alone;
  auto unplaced = parse(text);
  for (auto& n : unplaced.nodes) n.device.clear();
  auto one = tf::runtime_graph<tf::cpu>::make(unplaced);
  REQUIRE(one.ok());
  tf::runtime_session<tf::cpu> reference(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*one)), alone);
  auto expected = reference.run({{"x", x}}, fetches);
  REQUIRE(expected.ok());
  two_hosts hosts(2);
  for (int threads : {0, 2}) {
    auto s = host_session::make(parse(text), hosts.set, {.inter_op_threads = threads});
    REQUIRE(s.ok());
    auto got = (*s)->run({{"x", x}}, fetches);
    INFO("status: " << got.status().to_string());
    REQUIRE(got.ok());
    for (std::size_t k = 0; k < fetches.size(); ++k) CHECK(same_bits((*got)[k], (*expected)[k]));
    // x, s:0, s:1, s:2 and s/1 cross to CPU:1 (s:1 once for its three readers), t:0 back to
    // CPU:0; s:1 and the node s/1 both make "_send/s/1/CPU_1", and one of them takes another name.
    auto dot = (*s)->to_dot({"x"}, {"b", "c", "v", "q"});
    REQUIRE(dot.ok());
    CHECK_THAT(*dot, Catch::Contains("_send/s/CPU_1") && Catch::Contains("_send/s/1/CPU_1") &&
                         Catch::Contains("_send/s/2/CPU_1") && Catch::Contains("_send/t/CPU_0"));
    std::size_t sends = 0;
    for (std::size_t at = dot->find("label=\"_send/"); at != std::string::npos; at = dot->find("label=\"_send/", at + 1)) ++sends;
    CHECK(sends == 6);
    auto message = [&](auto&& r) { return r.ok() ? std::string("ok") : std::string(r.status().message()); };
    CHECK(message((*s)->run({{"x", x}}, {"s:3"})) == "fetch 's:3': node 's' has 3 outputs (ports 0 to 2)");
    CHECK(message((*s)->run({{"t", x}}, {"v"})) ==
          "feed 't': node 't' has 2 outputs (ports 0 to 1); only a node with one output can be fed");
  }
  auto bad = parse(text);
  bad.nodes[2].inputs = {"s:5"};
  auto refused = host_session::make(bad, hosts.set);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "node 'a' (line 4): input 's:5': node 's' has 3 outputs (ports 0 to 2)");
}

TEST_CASE("1000 random DAGs with random placement over three host devices agree with one device",
          "[devices][differential]") {
  tf::cpu c0, c2, alone;
  tf::thread_pool c1(2);
  tf::device_set<tf::cpu, tf::thread_pool> set;
  set.add(c0);
  set.add(c1);
  set.add(c2);
  const std::vector<std::string> names = {"CPU:0", "CPU:1", "CPU:2", ""};
  std::size_t transfers_seen = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const tf::test::random_dag d = tf::test::make_random_dag(seed);
    INFO("seed " << seed << "\n" << d.text);
    auto one = tf::runtime_graph<tf::cpu>::make(parse(d.text));
    REQUIRE(one.ok());
    tf::runtime_session<tf::cpu> reference(std::make_shared<const tf::runtime_graph<tf::cpu>>(std::move(*one)), alone);
    const tf::tensor a = tf::test::random_tensor<float>(tf::shape{3, 4}, seed);
    const tf::tensor b = tf::test::random_tensor<float>(tf::shape{4}, seed + 7);
    auto expected = reference.run({{"n0", a}, {"n1", b}}, d.fetches);
    REQUIRE(expected.ok());
    tf::graph_def def = parse(d.text);
    std::mt19937_64 rng(seed);
    for (auto& n : def.nodes) n.device = names[rng() % names.size()];
    const int threads = std::array{0, 1, 2, 4}[seed % 4];
    auto s = host_session::make(def, set, {.inter_op_threads = threads});
    REQUIRE(s.ok());
    tf::run_metadata meta;
    auto got = (*s)->run({{"n1", b}, {"n0", a}}, d.fetches, {}, {}, &meta);
    REQUIRE(got.ok());
    REQUIRE(got->size() == expected->size());
    for (std::size_t k = 0; k < got->size(); ++k) REQUIRE(same_bits((*got)[k], (*expected)[k]));
    std::set<std::string> used;
    for (const auto& p : meta.placement) used.insert(p.second);
    transfers_seen += used.size() > 1;
  }
  CHECK(transfers_seen > 900);
}

TEST_CASE("a device whose memory is not the host's: feeds copied in, fetches copied out, or kept there",
          "[devices][remote]") {
  tf::cpu c0;
  tf::thread_pool c1(2);
  remote_device r0;
  tf::device_set<tf::cpu, tf::thread_pool, remote_device> set;
  set.add(c0);
  set.add(c1);
  set.add(r0);
  auto def = parse(R"(
x = placeholder() dtype=f32 shape=shape[?, 4] @TEST:0
k = const() dtype=f32 shape=shape[4] value=[1, 2, 3, 4] @TEST:0
s = add(x, k) @TEST:0
m = mul(s, s) @CPU:0
r = relu(m) @TEST:0
t = tanh(r) @TEST
u = neg(t)
)");
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{3, 4}, 5);
  for (int threads : {0, 2}) {
    auto s = mixed_session::make(def, set, {.inter_op_threads = threads});
    REQUIRE(s.ok());
    auto out = (*s)->run({{"x", x}}, {"u", "r", "s"});
    REQUIRE(out.ok());
    const auto xs = x.unchecked_values<float>();
    for (std::size_t i = 0; i < 12; ++i) {
      const float sv = xs[i] + static_cast<float>(i % 4 + 1);
      CHECK((*out)[2].unchecked_values<float>()[i] == sv);
      CHECK((*out)[1].unchecked_values<float>()[i] == std::max(sv * sv, 0.0f));
      CHECK((*out)[0].unchecked_values<float>()[i] == Approx(-std::tanh(std::max(sv * sv, 0.0f))).margin(1e-6));
    }
    for (const auto& t : *out) CHECK(t.space().host_accessible());
    tf::run_options on_device;
    on_device.fetch_on_device = true;
    auto kept = (*s)->run({{"x", x}}, {"r"}, {}, on_device);
    REQUIRE(kept.ok());
    CHECK((*kept)[0].space() == r0.space());
    CHECK((*kept)[0].values<float>().status().code() == tf::status_code::failed_precondition);
  }
  CHECK(r0.copies_in > 0);   // the feed, the constant, and m coming back from CPU:0
  CHECK(r0.copies_out > 0);  // s going to CPU:0, fetches
}

TEST_CASE("an eager call on a device with memory of its own copies host inputs in; its output stays there",
          "[devices][call]") {
  tf::cpu host;
  remote_device r0;
  const tf::tensor a = tf::test::random_tensor<float>(tf::shape{3, 4}, 21), b = tf::test::random_tensor<float>(tf::shape{4}, 22);
  auto on_r0 = tf::copy(b, host, r0);
  REQUIRE(on_r0.ok());
  const int copies_before = r0.copies_in;
  // a from the host, b already on the device.
  auto y = tf::call<float, tf::test::placement_registry>(r0, tf::ops::add{}, a, *on_r0);
  INFO(y.status().to_string());
  REQUIRE(y.ok());
  CHECK(r0.copies_in == copies_before + 1);
  CHECK(y->space() == r0.space());
  auto back = tf::copy(*y, r0, host);
  REQUIRE(back.ok());
  auto want = tf::call<float>(host, tf::ops::add{}, a, b);
  REQUIRE(want.ok());
  CHECK(same_bits(*back, *want));
  // A tensor of another device is not copied: it is an error naming it.
  remote_device r1;
  tf::device_set<tf::cpu, remote_device> set;
  set.add(host);
  set.add(r0);
  set.add(r1);
  auto on_r1 = tf::copy(b, host, r1);
  REQUIRE(on_r1.ok());
  auto wrong = tf::call<float, tf::test::placement_registry>(r0, tf::ops::relu{}, *on_r1);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(std::string(wrong.status().message()), Catch::Contains("TEST:1"));
}

TEST_CASE("a runtime session on a device with memory of its own copies its constants there once", "[devices][runtime]") {
  remote_device r0;
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[2, 3]\n"
                             "k = const() dtype=f32 shape=shape[2, 3] value=1.5\n"
                             "y = add(x, k)\n");
  REQUIRE(def.ok());
  auto g = tf::runtime_graph<remote_device, tf::test::placement_registry>::make(std::move(*def));
  INFO(g.status().to_string());
  REQUIRE(g.ok());
  tf::runtime_session<remote_device, tf::test::placement_registry> s(
      std::make_shared<const tf::runtime_graph<remote_device, tf::test::placement_registry>>(std::move(*g)), r0);
  tf::cpu host;
  const tf::tensor x = tf::test::random_tensor<float>(tf::shape{2, 3}, 31);
  auto x_on = tf::copy(x, host, r0);
  REQUIRE(x_on.ok());
  const int before = r0.copies_in;
  for (int run = 0; run < 2; ++run) {
    auto y = s.run({{"x", *x_on}}, {"y"});
    INFO(y.status().to_string());
    REQUIRE(y.ok());
    CHECK((*y)[0].space() == r0.space());
    CHECK(r0.copies_in == before + 1);  // the constant, on the first run only
    auto back = tf::copy((*y)[0], r0, host);
    REQUIRE(back.ok());
    const auto xv = *x.values<float>(), yv = *back->values<float>();
    for (std::size_t i = 0; i < 6; ++i) CHECK(yv[i] == xv[i] + 1.5f);
  }
}

TEST_CASE("placement errors: each names the node and why; soft placement falls back", "[devices][errors]") {
  tf::cpu c0;
  tf::thread_pool c1(1);
  remote_device r0;
  tf::device_set<tf::cpu, tf::thread_pool, remote_device> set;
  set.add(c0);
  set.add(c1);
  set.add(r0);
  auto run_error = [&](std::string_view text, tf::session_options options = {}) -> tf::status {
    auto s = mixed_session::make(parse(text), set, options);
    if (!s.ok()) return s.status();
    auto out = (*s)->run({}, {"y"});
    return out.ok() ? tf::ok_status() : out.status();
  };
  const std::string base = "x = const() dtype=f32 shape=shape[2, 2] value=1\n";
  auto unknown = run_error(base + "y = relu(x) @GPU:0\n");
  CHECK(unknown.code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(unknown.message()),
             Catch::Contains("node 'y'") && Catch::Contains("'GPU:0' matches no device") && Catch::Contains("CPU:0, CPU:1, TEST:0"));
  auto missing = run_error(base + "y = matmul(x, x) @TEST:0\n");
  CHECK(missing.code() == tf::status_code::invalid_argument);
  CHECK_THAT(std::string(missing.message()), Catch::Contains("node 'y'") && Catch::Contains("no kernel for op matmul") &&
                                                 Catch::Contains("soft placement"));
  auto dtype = run_error("x = const() dtype=f64 shape=shape[2] value=1\ny = relu(x) @TEST:0\n");
  CHECK_THAT(std::string(dtype.message()), Catch::Contains("with dtype f64") && Catch::Contains("it has kernels for: f32"));
  CHECK(run_error(base + "y = matmul(x, x) @TEST:0\n", {.soft_placement = true}).ok());
  auto bad_name = run_error(base + "y = relu(x) @/device:CPU:zero\n");
  CHECK_THAT(std::string(bad_name.message()), Catch::Contains("node 'y'") && Catch::Contains("/device:CPU:zero"));
  auto no_op = mixed_session::make(parse(base + "y = frobnicate(x)\n"), set);
  REQUIRE(!no_op.ok());
  CHECK_THAT(std::string(no_op.status().message()), Catch::Contains("unknown op 'frobnicate'"));
  CHECK(mixed_session::make(parse(base), set, {.inter_op_threads = -1}).status().code() == tf::status_code::invalid_argument);
  // A placeholder that is needed but not fed, and a feed of the wrong shape.
  auto s = mixed_session::make(parse("x = placeholder() dtype=f32 shape=shape[2] @CPU:1\ny = relu(x) @TEST:0\n"), set);
  REQUIRE(s.ok());
  CHECK_THAT(std::string((*s)->run({}, {"y"}).status().message()), Catch::Contains("placeholder 'x'"));
  CHECK_THAT(std::string((*s)->run({{"x", *tf::tensor::filled<float>(tf::shape{3}, 1.f)}}, {"y"}).status().message()),
             Catch::Contains("feed 'x'") && Catch::Contains("shape [3]"));
}

TEST_CASE("a graph that already holds _send or _recv nodes: refused with the node named, never a wait",
          "[devices][errors]") {
  two_hosts hosts(1);
  auto& set = hosts.set;
  // A transfer without its attributes is refused (when its signature is first planned), naming the node.
  const tf::tensor two = *tf::tensor::filled<float>(tf::shape{2}, 1.f);
  for (auto [text, attribute] : {std::pair{"x = placeholder() dtype=f32 shape=shape[2]\ny = _send(x)\n", "'key'"},
                                 std::pair{"x = placeholder() dtype=f32 shape=shape[2]\ny = _recv() dtype=f32 key=\"a\"\n", "'shape'"}}) {
    INFO(text);
    auto s = host_session::make(parse(text), set);
    const tf::status st = s.ok() ? (*s)->run({{"x", two}}, {"y"}).status() : s.status();
    REQUIRE(!st.ok());
    CHECK(st.code() == tf::status_code::invalid_argument);
    CHECK_THAT(std::string(st.message()), Catch::Contains("node 'y'") && Catch::Contains(std::string("attribute ") + attribute + " is required"));
  }
  // A complete transfer whose key is not one this step's partitions exchange: no partner will
  // ever come, so the run refuses it rather than wait, on one device or across two, with or
  // without inter-op threads.
  const std::string x = "x = placeholder() dtype=f32 shape=shape[2] @CPU:0\n";
  for (const std::string& text : {x + "y = _send(x) key=\"a\" @CPU:1\nz = identity(x)\n",
                                  x + "y = _recv() dtype=f32 shape=shape[2] key=\"a\" @CPU:1\nz = add(x, y)\n"}) {
    for (int threads : {0, 2}) {
      INFO(text << "threads " << threads);
      auto s = host_session::make(parse(text), set, {.inter_op_threads = threads});
      REQUIRE(s.ok());
      auto out = (*s)->run({{"x", two}}, {"z", "y"});
      REQUIRE(!out.ok());
      CHECK(out.status().code() == tf::status_code::failed_precondition);
      CHECK_THAT(std::string(out.status().message()), Catch::Contains("node 'y'") && Catch::Contains("key 'a'"));
    }
  }
}

TEST_CASE("a partition that fails mid-step, timeouts, cancellation and close with receives pending",
          "[devices][cancel]") {
  two_hosts hosts(2);
  auto& set = hosts.set;
  // CPU:1 waits in _recv for p, which CPU:0 computes slowly.
  auto text = [](std::string_view probe_attrs) {
    return "x = const() dtype=f32 shape=shape[4] value=1 @CPU:0\n"
           "p = probe(x) " + std::string(probe_attrs) + " @CPU:0\n"
           "q = relu(x) @CPU:1\n"
           "y = add(p, q) @CPU:1\n";
  };
  for (int threads : {0, 2}) {
    INFO("threads " << threads);
    auto failing = probe_session::make(parse(text("sleep_ms=20 fail=true")), set, {.inter_op_threads = threads});
    REQUIRE(failing.ok());
    auto f = (*failing)->run({}, {"y"});
    REQUIRE(!f.ok());
    CHECK(f.status().code() == tf::status_code::unavailable);
    CHECK_THAT(std::string(f.status().message()), Catch::Contains("node 'p'") && Catch::Contains("probe failed on purpose"));

    auto slow = probe_session::make(parse(text("sleep_ms=300")), set, {.inter_op_threads = threads});
    REQUIRE(slow.ok());
    tf::run_options late;
    late.timeout = std::chrono::milliseconds(30);
    auto t = (*slow)->run({}, {"y"}, {}, late);
    REQUIRE(!t.ok());
    CHECK(t.status().code() == tf::status_code::deadline_exceeded);

    tf::cancellation token;
    tf::run_options cancellable;
    cancellable.cancel = &token;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      token.cancel();
    });
    auto c = (*slow)->run({}, {"y"}, {}, cancellable);
    canceller.join();
    REQUIRE(!c.ok());
    CHECK(c.status().code() == tf::status_code::cancelled);

    auto ok = (*slow)->run({}, {"y"});
    REQUIRE(ok.ok());
    CHECK(*(*ok)[0].at<float>(0) == 2.0f);

    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      (*slow)->close();
    });
    auto closed = (*slow)->run({}, {"y"});
    closer.join();
    REQUIRE(!closed.ok());
    CHECK(closed.status().code() == tf::status_code::cancelled);
    CHECK((*slow)->run({}, {"y"}).status().message() == "the session is closed");
  }
}
