// SPDX-License-Identifier: Apache-2.0
// Static graphs across devices: tf::on<D> and the placement of what is made from placed nodes,
// transfers as compile-time nodes (one per value and device, never a copy of a copy), sessions on
// a device_group (sequential and parallel) giving bitwise the results of one device, copies to and
// from a device whose memory the host cannot read (remote_device), and the errors.
#include "placement_registry.hpp"
#include "remote_device.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tf::literals;
using tf::dyn;
using tf::static_shape;
using tf::test::random_tensor;
using tf::test::remote_device;
using tf::test::require_error;

namespace {

using registry = tf::test::placement_registry;

bool same_bits(const tf::tensor& a, const tf::tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

template <class Graph>
std::size_t count_kind(tf::node_kind k) {
  std::size_t n = 0;
  for (auto kind : Graph::kinds) n += kind == k;
  return n;
}

// An MLP with its first layer where it is not placed and its second on thread_pool.
constexpr auto x = tf::input<"x", float, static_shape<dyn, 16>>;
constexpr auto w1 = tf::variable<"w1", float, static_shape<16, 32>>;
constexpr auto w2 = tf::variable<"w2", float, static_shape<32, 8>>;
constexpr auto hidden = tf::relu(tf::matmul(x, w1));
constexpr auto split_logits = tf::on<tf::thread_pool>(tf::matmul(hidden, w2));
constexpr auto split_out = tf::softmax(split_logits * 0.5_c);  // follows its input to thread_pool
constexpr auto local_out = tf::softmax(tf::matmul(hidden, w2) * 0.5_c);

}  // namespace

TEST_CASE("static devices: a node made from placed inputs runs on the first placed input's device",
          "[static][devices]") {
  using tf::default_device;
  static_assert(std::is_same_v<decltype(hidden)::device, default_device>);
  static_assert(std::is_same_v<decltype(split_logits)::device, tf::thread_pool>);
  static_assert(std::is_same_v<decltype(split_out)::device, tf::thread_pool>);
  // The scalar 0.5 is made where its reader runs: no transfer for it.
  using g = decltype(tf::graph(split_out));
  CHECK(count_kind<g>(tf::node_kind::transfer) == 2);  // hidden and w2, to thread_pool
  const std::string text = g::describe();
  CHECK(text.find("transfer(") != std::string::npos);
  CHECK(text.find("matmul(") != std::string::npos);
  CHECK(text.find("on CPU") != std::string::npos);
  // An input read on two devices is sent to each once, however many read it there.
  constexpr auto a = tf::on<tf::thread_pool>(tf::relu(x));
  constexpr auto b = tf::on<tf::thread_pool>(tf::tanh(x));
  using two = decltype(tf::graph(a + b));
  CHECK(count_kind<two>(tf::node_kind::transfer) == 1);
}

TEST_CASE("static devices: moving a node again reads from the source, never a copy of a copy", "[static][devices]") {
  constexpr auto r = tf::on<remote_device>(tf::relu(x));
  using placed = decltype(tf::graph(r));
  CHECK(count_kind<placed>(tf::node_kind::transfer) == 1);
  // Moved to thread_pool: relu there reads x itself.
  constexpr auto back = tf::on<tf::thread_pool>(r);
  using moved = decltype(tf::graph(back));
  using plan = tf::static_plan<moved, true, moved::position<decltype(back)>()>;
  std::size_t transfers = 0;  // that a run needs: x to thread_pool, not x to remote to thread_pool
  for (std::size_t p : plan::steps) {
    transfers += moved::kinds[p] == tf::node_kind::transfer;
    if (moved::kinds[p] == tf::node_kind::transfer) CHECK(moved::kinds[moved::input(p, 0)] == tf::node_kind::input);
  }
  CHECK(transfers == 1);
  // A copy of a transfer's value elsewhere copies its source.
  constexpr auto t = tf::on<tf::thread_pool>(tf::on<remote_device>(tf::identity(x)));
  static_assert(std::is_same_v<decltype(t)::device, tf::thread_pool>);
  // A transfer's value asked for on its source's device is the source itself.
  constexpr auto on_host = tf::on<tf::cpu>(x);
  auto [values, indices] = tf::top_k<2>(on_host);
  constexpr auto away = tf::on<tf::thread_pool>(decltype(values){});
  static_assert(std::is_same_v<decltype(away)::device, tf::thread_pool>);
  static_assert(decltype(tf::on<tf::cpu>(away))::id == decltype(values)::id);
  (void)indices;
  // A constant read on another device is made there: no transfer of a number.
  constexpr auto scaled = tf::on<remote_device>(x * 2.0_c);
  using sg = decltype(tf::graph(scaled));
  using splan = tf::static_plan<sg, false, sg::position<decltype(scaled)>()>;
  std::size_t needed_transfers = 0;
  for (std::size_t p : splan::steps) needed_transfers += sg::kinds[p] == tf::node_kind::transfer;
  CHECK(needed_transfers == 1);  // x only
  // An input read on a device where the expression already reads it: one transfer, not two.
  constexpr auto i2 = tf::input<"i", float, static_shape<3>>;
  constexpr auto e = tf::on<tf::thread_pool>(tf::relu(i2)) + i2;  // add on thread_pool reads i there
  constexpr auto again = tf::on<tf::thread_pool>(e);
  using ag = decltype(tf::graph(again));
  static_assert(std::is_same_v<decltype(again)::device, tf::thread_pool>);
  CHECK(count_kind<ag>(tf::node_kind::transfer) == 1);
}

TEST_CASE("static devices: nodes left behind by on<D> are not run, so their devices are not needed",
          "[static][devices]") {
  tf::cpu host;
  tf::thread_pool pool(1);
  constexpr auto in = tf::input<"in", float, static_shape<3>>;
  // relu was made on remote_device first, then moved: the remote node and its transfer stay in the
  // graph, read by nothing, and a session without a remote device runs it.
  constexpr auto y = tf::on<tf::thread_pool>(tf::on<remote_device>(tf::relu(in)));
  tf::session s(tf::graph(y), tf::device_group(host, pool));
  auto t = tf::tensor::from_values<float>({-1, 0, 2}, tf::shape{3});
  auto r = s.run(tf::feed(in, *t), tf::fetch(y));
  REQUIRE(r.ok());
  CHECK(std::vector<float>(std::get<0>(*r).values().begin(), std::get<0>(*r).values().end()) ==
        std::vector<float>{0, 0, 2});
}

TEST_CASE("static devices: elementwise chains fuse on host devices, and not on a device without fused kernels",
          "[static][devices]") {
  tf::cpu host;
  tf::thread_pool pool(1);
  remote_device remote;
  constexpr auto in = tf::input<"in", float, static_shape<4>>;
  constexpr auto on_pool = tf::tanh(tf::on<tf::thread_pool>(tf::relu(in)) * 3.0_c);
  using pg = decltype(tf::graph(on_pool));
  const std::string plan = tf::session<pg, tf::device_group<tf::cpu, tf::thread_pool>>::describe_plan(tf::fetch(on_pool));
  CHECK(plan.find("fused: 3 ops") != std::string::npos);
  // On remote_device, whose kernels are single ops: the default (fusing) session still compiles.
  constexpr auto on_remote = tf::tanh(tf::on<remote_device>(tf::relu(in)) * tf::on<remote_device>(tf::tanh(in)));
  using rg = decltype(tf::graph(on_remote));
  tf::session<rg, tf::device_group<tf::cpu, remote_device>, registry> s(rg{}, tf::device_group(host, remote));
  auto t = tf::tensor::from_values<float>({-1, 0.5f, 2, 3}, tf::shape{4});
  auto r = s.run(tf::feed(in, *t), tf::fetch(on_remote));
  REQUIRE(r.ok());
  const auto got = std::get<0>(*r).values();
  const float xs[] = {-1, 0.5f, 2, 3};
  for (std::size_t i = 0; i < 4; ++i) CHECK(got[i] == Approx(std::tanh(std::max(xs[i], 0.0f) * std::tanh(xs[i]))));
  (void)pool;
}

TEMPLATE_TEST_CASE("static devices: an MLP split over two host devices gives bitwise the results of one",
                   "[static][devices]", (std::integral_constant<int, 0>), (std::integral_constant<int, 2>)) {
  constexpr int threads = TestType::value;
  tf::cpu host;
  tf::thread_pool pool(2);
  auto xt = random_tensor<float>(tf::shape{5, 16}, 1);
  auto w1t = random_tensor<float>(tf::shape{16, 32}, 2);
  auto w2t = random_tensor<float>(tf::shape{32, 8}, 3);

  tf::session local(tf::graph(local_out), pool);
  REQUIRE(local.initialize(w1, w1t).ok());
  REQUIRE(local.initialize(w2, w2t).ok());
  auto expected = local.run(tf::feed(x, xt), tf::fetch(local_out));
  REQUIRE(expected.ok());

  // Layer 1 on the first device (host, single-threaded: matmul's result does not depend on threads).
  auto check = [&](auto& s) {
    REQUIRE(s.init_status().ok());
    REQUIRE(s.initialize(w1, w1t).ok());
    REQUIRE(s.initialize(w2, w2t).ok());
    for (int run = 0; run < 3; ++run) {
      auto got = s.run(tf::feed(x, xt), tf::fetch(split_out), tf::fetch(hidden));
      REQUIRE(got.ok());
      CHECK(same_bits(std::get<0>(*got), std::get<0>(*expected)));
    }
  };
  if constexpr (threads == 0) {
    tf::session s(tf::graph(split_out, hidden), tf::device_group(host, pool));
    check(s);
  } else {
    tf::session s(tf::graph(split_out, hidden), tf::device_group(host, pool), tf::parallel{threads});
    check(s);
  }
}

TEST_CASE("static devices: a device whose host copies can be waited for on the calling thread gets feeds, "
          "variables, constants and fetches through them", "[static][devices]") {
  using tf::test::blocking_remote_device;
  tf::cpu host;
  blocking_remote_device remote;
  constexpr auto in = tf::on<blocking_remote_device>(tf::input<"in", float, static_shape<4, 3>>);
  constexpr auto v = tf::on<blocking_remote_device>(tf::variable<"v", float, static_shape<4, 3>>);
  constexpr auto y = tf::tanh(in * v) + 1.0_c;
  using g = decltype(tf::graph(y));
  auto it = random_tensor<float>(tf::shape{4, 3}, 14);
  auto vt = random_tensor<float>(tf::shape{4, 3}, 15);
  tf::session<g, tf::device_group<tf::cpu, blocking_remote_device>, registry, false> s(g{}, tf::device_group(host, remote));
  REQUIRE(s.initialize(v, vt).ok());
  CHECK(remote.blocking_in == 1);  // the variable's value
  auto got = s.run(tf::feed(in, it), tf::fetch(y));
  INFO(got.status().to_string());
  REQUIRE(got.ok());
  const tf::tensor yt = std::get<0>(*got);
  const auto iv = *it.values<float>(), vv = *vt.values<float>(), yv = *yt.values<float>();
  for (std::size_t i = 0; i < 12; ++i) CHECK(yv[i] == Approx(std::tanh(iv[i] * vv[i]) + 1.0f));
  CHECK(remote.blocking_in == 3);   // and the feed, and the constant
  CHECK(remote.blocking_out == 1);  // the fetch
  auto again = s.run(tf::feed(in, it), tf::fetch(y));
  REQUIRE(again.ok());
  CHECK(same_bits(std::get<0>(*again), yt));
  CHECK(remote.blocking_in == 4);  // only the feed: the constant stays on the device
  CHECK(remote.blocking_out == 2);
  CHECK(remote.copies_in == 0);    // nothing through the callbacks
  CHECK(remote.copies_out == 0);
  // tf::to_device and tf::to_host take the same way; a failed copy is the status.
  auto on = tf::to_device(it, remote);
  REQUIRE(on.ok());
  CHECK(on->space() == remote.space());
  auto back = tf::to_host(*on, remote);
  REQUIRE(back.ok());
  CHECK(same_bits(*back, it));
  // So does tf::copy, whose bad inputs are statuses naming the copy.
  auto copied = tf::copy(it, host, remote);
  REQUIRE(copied.ok());
  auto copied_back = tf::copy(*copied, remote, host);
  REQUIRE(copied_back.ok());
  CHECK(same_bits(*copied_back, it));
  CHECK(remote.copies_in + remote.copies_out == 0);
  require_error(tf::copy(tf::tensor(), host, remote), tf::status_code::invalid_argument, "the tensor has no storage");
  remote_device elsewhere;
  elsewhere.set_ordinal(1);  // another device of the same type (TEST:1)
  auto on_other = tf::copy(it, host, elsewhere);
  REQUIRE(on_other.ok());
  require_error(tf::copy(*on_other, remote, host), tf::status_code::invalid_argument, "not in the source device's");
  // A failed copy is the run's status, naming the node; the next run, with copies working, is whole.
  remote.fail_copies = true;
  auto failed = s.run(tf::feed(in, it), tf::fetch(y));
  require_error(failed, tf::status_code::unavailable, "fail_copies");
  CHECK_THAT(std::string(failed.status().message()), Catch::Contains("(in)"));
  remote.fail_copies = false;
  auto after = s.run(tf::feed(in, it), tf::fetch(y));
  REQUIRE(after.ok());
  CHECK(same_bits(std::get<0>(*after), yt));
}

TEST_CASE("static devices: inputs, variables, constants and fetches on a device the host cannot read",
          "[static][devices]") {
  tf::cpu host;
  remote_device remote;
  constexpr auto in = tf::input<"in", float, static_shape<4, 3>>;
  constexpr auto v = tf::on<remote_device>(tf::variable<"v", float, static_shape<4, 3>>);
  constexpr auto h = tf::on<remote_device>(in * v);    // in is copied to remote
  constexpr auto y = tf::tanh(h) + 1.0_c;              // on remote, the constant made there
  constexpr auto z = tf::relu(tf::on<tf::cpu>(tf::identity(y)));  // back on the host
  using g = decltype(tf::graph(y, z));
  CHECK(count_kind<g>(tf::node_kind::transfer) == 2);

  auto it = random_tensor<float>(tf::shape{4, 3}, 4);
  auto vt = random_tensor<float>(tf::shape{4, 3}, 5);
  // Unfused: remote_device has kernels for single ops only.
  tf::session<g, tf::device_group<tf::cpu, remote_device>, registry, false> s(g{}, tf::device_group(host, remote));
  REQUIRE(s.initialize(v, vt).ok());
  auto kept = s.value_of(v);
  REQUIRE(kept.ok());
  CHECK(kept->space() == remote.space());  // the variable lives on its device
  require_error(kept->values<float>(), tf::status_code::failed_precondition, "TEST");

  const int in_before = remote.copies_in.load();
  auto got = s.run(tf::feed(in, it), tf::fetch(y), tf::fetch(z));
  REQUIRE(got.ok());
  const tf::tensor yt = std::get<0>(*got), zt = std::get<1>(*got);
  CHECK(yt.space().host_accessible());  // fetched to the host
  const auto iv = *it.values<float>();
  const auto vv = *vt.values<float>();
  const auto yv = *yt.values<float>();
  const auto zv = *zt.values<float>();
  for (std::size_t i = 0; i < 12; ++i) {
    const float expect = std::tanh(iv[i] * vv[i]) + 1.0f;
    CHECK(yv[i] == Approx(expect));
    CHECK(zv[i] == yv[i]);  // relu of a positive number
  }
  CHECK(remote.copies_in.load() - in_before >= 2);  // the feed and the constant
  CHECK(remote.copies_out.load() >= 2);             // the transfer to the host and the fetch of y

  // Again: the device buffers are reused, the constant stays on the device.
  const int in_second = remote.copies_in.load();
  auto again = s.run(tf::feed(in, it), tf::fetch(y), tf::fetch(z));
  REQUIRE(again.ok());
  CHECK(same_bits(std::get<0>(*again), yt));
  CHECK(remote.copies_in.load() - in_second == 1);  // only the feed

  // Results dropped between runs: each run still computes on the device and copies y out anew.
  for (int run = 0; run < 3; ++run) {
    const int out_before = remote.copies_out.load();
    auto r = s.run(tf::feed(in, it), tf::fetch(y));
    REQUIRE(r.ok());
    CHECK(same_bits(std::get<0>(*r), yt));
    CHECK(remote.copies_out.load() - out_before == 1);  // the fetch of y (z is not fetched)
  }

  // Parallel: the copies finish through their callbacks on the device's copy thread.
  tf::session<g, tf::device_group<tf::cpu, remote_device>, registry, false, true, true> p(
      g{}, tf::device_group(host, remote), tf::parallel{2});
  REQUIRE(p.initialize(v, vt).ok());
  for (int run = 0; run < 20; ++run) {
    auto r = p.run(tf::feed(in, it), tf::fetch(y), tf::fetch(z));
    REQUIRE(r.ok());
    CHECK(same_bits(std::get<0>(*r), yt));
    CHECK(same_bits(std::get<1>(*r), zt));
  }
}

TEST_CASE("static devices: errors name the node and the devices", "[static][devices]") {
  tf::cpu host;
  remote_device remote;
  constexpr auto in = tf::input<"in", float, static_shape<2>>;
  constexpr auto y = tf::relu(in) + tf::on<remote_device>(tf::relu(in));
  using g = decltype(tf::graph(y));
  tf::session<g, tf::device_group<tf::cpu, remote_device>, registry, false> s(g{}, tf::device_group(host, remote));

  // A fed tensor already on a device the input's device cannot read.
  auto on_remote = remote.allocate(tf::dtype::f32, tf::shape{2});
  REQUIRE(on_remote.ok());
  require_error(s.run(tf::feed(in, *on_remote), tf::fetch(y)), tf::status_code::invalid_argument,
                "which /job:localhost/replica:0/task:0/device:CPU:0 cannot read; copy it to the host first");

  // A variable of the wrong shape, on a device.
  constexpr auto v = tf::on<remote_device>(tf::variable<"v", float, static_shape<2>>);
  using vg = decltype(tf::graph(tf::relu(v)));
  tf::session<vg, tf::device_group<tf::cpu, remote_device>, registry, false> vs(vg{}, tf::device_group(host, remote));
  auto bad = random_tensor<float>(tf::shape{3}, 6);
  require_error(vs.initialize(v, bad), tf::status_code::invalid_argument, "variable 'v': initial value is f32[3]");
  require_error(vs.run(tf::fetch(tf::relu(v))), tf::status_code::failed_precondition, "v");
}

TEST_CASE("static devices: a copy that fails is the run's error, and leaves nothing half-made behind",
          "[static][devices]") {
  tf::cpu host;
  remote_device remote;
  constexpr auto v = tf::on<remote_device>(tf::variable<"v", float, static_shape<2>>);
  constexpr auto y = v + 1.0_c;  // the constant is made on the host and copied to remote once
  using g = decltype(tf::graph(y));
  tf::session<g, tf::device_group<tf::cpu, remote_device>, registry, false> s(g{}, tf::device_group(host, remote));
  REQUIRE(s.initialize(v, *tf::tensor::from_values<float>({1, 2}, tf::shape{2})).ok());
  remote.fail_copies = true;
  require_error(s.run(tf::fetch(y)), tf::status_code::unavailable, "node 1 (constant)");
  remote.fail_copies = false;
  auto r = s.run(tf::fetch(y));  // the constant is copied again, not taken half-made
  REQUIRE(r.ok());
  CHECK(std::get<0>(*r)[0] == 2.0f);
  CHECK(std::get<0>(*r)[1] == 3.0f);
  // A fetch whose copy to the host fails; then one that does not.
  remote.fail_copies = true;
  require_error(s.run(tf::fetch(y)), tf::status_code::unavailable, "fetch of node 2 (add)");
  remote.fail_copies = false;
  REQUIRE(s.run(tf::fetch(y)).ok());

  // A feed whose copy to its device fails.
  constexpr auto in = tf::on<remote_device>(tf::input<"in", float, static_shape<2>>);
  constexpr auto z = in * in;
  using zg = decltype(tf::graph(z));
  tf::session<zg, tf::device_group<tf::cpu, remote_device>, registry, false> zs(zg{}, tf::device_group(host, remote));
  auto t = tf::tensor::from_values<float>({3, 4}, tf::shape{2});
  remote.fail_copies = true;
  require_error(zs.run(tf::feed(in, *t), tf::fetch(z)), tf::status_code::unavailable, "node 0 (in)");
  remote.fail_copies = false;
  auto ok = zs.run(tf::feed(in, *t), tf::fetch(z));
  REQUIRE(ok.ok());
  CHECK(std::get<0>(*ok)[1] == 16.0f);
}

TEST_CASE("static devices: a transfer whose copy fails is the run's error, naming the transfer", "[static][devices]") {
  tf::cpu host;
  remote_device remote;
  constexpr auto v = tf::on<remote_device>(tf::variable<"v", float, static_shape<2>>);
  constexpr auto y = tf::relu(tf::on<tf::cpu>(tf::identity(tf::relu(v))));  // relu on remote, copied to the host
  using g = decltype(tf::graph(y));
  auto check = [&](auto& s) {
    REQUIRE(s.initialize(v, *tf::tensor::from_values<float>({-1, 2}, tf::shape{2})).ok());
    remote.fail_copies = true;
    require_error(s.run(tf::fetch(y)), tf::status_code::unavailable, "(transfer)");
    remote.fail_copies = false;
    auto r = s.run(tf::fetch(y));
    REQUIRE(r.ok());
    CHECK(std::get<0>(*r)[0] == 0.0f);
    CHECK(std::get<0>(*r)[1] == 2.0f);
  };
  tf::session<g, tf::device_group<tf::cpu, remote_device>, registry, false> sequential(g{}, tf::device_group(host, remote));
  check(sequential);
  // Parallel: the copy fails in its callback, on the device's copy thread.
  tf::session<g, tf::device_group<tf::cpu, remote_device>, registry, false, true, true> parallel(
      g{}, tf::device_group(host, remote), tf::parallel{2});
  check(parallel);
}

TEST_CASE("static devices: to_graph_def asks for each placed node's device and leaves transfers to the partitioner",
          "[static][devices]") {
  using g = decltype(tf::graph(split_out));
  auto def = tf::to_graph_def(g{});
  REQUIRE(def.ok());
  std::size_t on_cpu = 0;
  for (const auto& n : def->nodes) {
    CHECK(n.op != "transfer");
    on_cpu += n.device == "/device:CPU";
  }
  CHECK(on_cpu >= 3);  // matmul, mul, softmax (and the constant)
}
