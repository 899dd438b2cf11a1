// SPDX-License-Identifier: Apache-2.0
// The crash handler (runtime/crash_handler.hpp): a forked child installs it and crashes on purpose;
// the parent checks which signal ended the child and what the handler wrote on its stderr. The
// runtime cases use a registry of one test op, so this file compiles in seconds.
#include <catch2/catch.hpp>

#include <typeflow/runtime/crash_handler.hpp>
#include <typeflow/typeflow.hpp>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tf = typeflow;

TEST_CASE("crash_context_scope nests and restores the thread's context", "[crash]") {
  CHECK(tf::current_crash_context() == nullptr);
  {
    const tf::crash_context_scope session("session-a");
    REQUIRE(tf::current_crash_context() != nullptr);
    CHECK(std::string(tf::current_crash_context()->session) == "session-a");
    CHECK(tf::current_crash_context()->node == nullptr);
    {
      const tf::crash_context_scope node(nullptr, "dense1", "MatMul");  // keeps the session
      const tf::crash_context* c = tf::current_crash_context();
      REQUIRE(c != nullptr);
      CHECK(std::string(c->session) == "session-a");
      CHECK(std::string(c->node) == "dense1");
      CHECK(std::string(c->op) == "MatMul");
      REQUIRE(c->enclosing != nullptr);
      CHECK(c->enclosing->node == nullptr);
      const tf::crash_context* other_thread = c;
      std::thread([&] { other_thread = tf::current_crash_context(); }).join();
      CHECK(other_thread == nullptr);  // per thread
    }
    CHECK(tf::current_crash_context()->node == nullptr);
  }
  CHECK(tf::current_crash_context() == nullptr);
}

#if TYPEFLOW_HAS_CRASH_HANDLER

// Crashes on purpose, each its own way. External linkage and not inlined, so that the stack traces
// can name them (this test is linked with -rdynamic).
namespace crash_test {

volatile int after_call = 0;  // written after a call so that it is not a tail call (which has no frame)

[[gnu::noinline]] void null_write() {
  // Both volatile: the compiler cannot see the null (and emit a trap), nor drop the store
  // (GCC 12 -O2 dropped it through a plain int*).
  volatile int* volatile target = nullptr;
  *target = 1;
  after_call = 1;
}

[[gnu::noinline]] void raise_signal(int sig) {
  std::raise(sig);
  after_call = 1;
}

[[gnu::noinline]] void call_abort() { std::abort(); }  // its return address is past its end

volatile int recursion_limit = 1 << 30;  // never reached: the 8 MiB stack ends first
[[gnu::noinline]] int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == recursion_limit) return 0;
  return recurse(depth + 1) + frame[0];  // not a tail call
}

// An op whose kernel overflows its thread's stack, for the runtime cases.
struct overflow {
  static constexpr std::string_view name = "overflow";
  static constexpr int num_inputs = 1;
  constexpr tf::result<tf::dtype> infer_dtype(std::span<const tf::dtype> in) const { return in[0]; }
  constexpr tf::result<tf::shape> infer_shape(std::span<const tf::shape> in) const { return in[0]; }
  [[maybe_unused]] friend constexpr bool operator==(const overflow&, const overflow&) = default;
};

template <class Op, class Device, class T>
struct overflow_kernel {
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;  // runs on a pool thread of a session with inter-op threads
  static tf::status compute(const Op&, tf::kernel_context<Device>&) {
    return recurse(0) == 0 ? tf::ok_status() : tf::errors::internal("unreachable");
  }
};

using overflow_registry =
    tf::registry<tf::kernel_list<tf::kernel_family<overflow_kernel, overflow, tf::devices<tf::cpu>, tf::dtypes<float>>>>;

// Runs "y = overflow(x)" in a runtime session with `threads` inter-op threads; returns only if it
// does not crash.
int run_overflowing_graph(int threads) {
  auto def = tf::parse_graph("x = placeholder() dtype=f32 shape=shape[1]\ny = overflow(x)\n");
  if (!def.ok()) return 10;
  auto g = tf::runtime_graph<tf::cpu, overflow_registry>::make(std::move(*def));
  if (!g.ok()) return 11;
  tf::cpu device;
  tf::runtime_session<tf::cpu, overflow_registry> s(
      std::make_shared<const tf::runtime_graph<tf::cpu, overflow_registry>>(std::move(*g)), device, threads);
  auto x = tf::tensor::filled<float>(tf::shape{1}, 1.0f);
  return s.run({{"x", *x}}, {"y"}).ok() ? 12 : 13;
}

}  // namespace crash_test

namespace {

struct child_end {
  bool signaled = false;
  int signal = 0;     // when signaled
  int exit_code = -1; // when it exited
  std::string err;    // all it wrote on stderr
};

// Runs body in a forked child whose stderr is a pipe; the child exits with body's result unless
// it crashes. Waits for it and returns how it ended.
template <class Body>
child_end run_child(Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // no core dumps from crashes made on purpose
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::alarm(60);  // a handler that hangs ends as SIGALRM, which the checks reject
    ::_exit(body());
  }
  ::close(fds[1]);
  child_end end;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    end.err.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) REQUIRE(errno == EINTR);
  end.signaled = WIFSIGNALED(wstatus);
  end.signal = end.signaled ? WTERMSIG(wstatus) : 0;
  end.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  return end;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The frame line numbered n ("typeflow:   #n ...").
std::string frame_line(const std::string& err, int n) {
  const std::string tag = "typeflow:   #" + std::to_string(n) + " ";
  const std::size_t at = err.find(tag);
  if (at == std::string::npos) return {};
  return err.substr(at, err.find('\n', at) - at);
}

constexpr bool pc_known =
#if defined(__x86_64__) || defined(__aarch64__)
    true;  // the trace starts at the crashing function
#else
    false;
#endif

}  // namespace

TEST_CASE("install_crash_handler is idempotent and installs every signal and a signal stack", "[crash]") {
  const child_end end = run_child([] {
    if (tf::crash_handler_installed()) return 10;  // not before installing
    if (!tf::install_crash_handler().ok()) return 11;
    if (!tf::install_crash_handler().ok()) return 12;
    if (!tf::crash_handler_installed()) return 13;
    stack_t stack{};
    if (::sigaltstack(nullptr, &stack) != 0 || (stack.ss_flags & SS_DISABLE) != 0 || stack.ss_size < 64 * 1024) return 14;
    int other = 0;  // another thread gets its own signal stack
    std::thread([&] {
      stack_t mine{};
      if (!tf::install_crash_handler().ok()) other = 15;
      else if (::sigaltstack(nullptr, &mine) != 0 || (mine.ss_flags & SS_DISABLE) != 0 || mine.ss_sp == stack.ss_sp) other = 16;
    }).join();
    return other;
  });
  INFO(end.err);
  CHECK_FALSE(end.signaled);
  CHECK(end.exit_code == 0);
}

TEST_CASE("a null write is reported as SIGSEGV with its address, session, node and stack", "[crash]") {
  const child_end end = run_child([] {
    if (!tf::install_crash_handler().ok()) return 1;
    const tf::crash_context_scope scope("test-session", "dense1", "MatMul");
    crash_test::null_write();
    return 2;
  });
  INFO(end.err);
  CHECK(end.signaled);
  CHECK(end.signal == SIGSEGV);
  CHECK(contains(end.err, "typeflow: *** SIGSEGV (signal 11, segmentation fault: address not mapped) at address 0x0, in pid "));
  CHECK(contains(end.err, "typeflow: crash in session 'test-session' while running node 'dense1' (op MatMul)\n"));
  CHECK_FALSE(contains(end.err, "stack overflow"));
  CHECK(contains(end.err, "typeflow: stack trace ("));
  CHECK(contains(end.err, "null_write"));  // named: -rdynamic
  if (pc_known) CHECK(contains(frame_line(end.err, 0), "null_write"));
  CHECK(contains(end.err, "typeflow: raising SIGSEGV again with its default action\n"));
}

TEST_CASE("SIGFPE from raise names the sender and the session of the enclosing scope", "[crash]") {
  const child_end end = run_child([] {
    if (!tf::install_crash_handler().ok()) return 1;
    const tf::crash_context_scope session("test-session");
    const tf::crash_context_scope node(nullptr, "div", "FloorDiv");
    crash_test::raise_signal(SIGFPE);
    return 2;
  });
  INFO(end.err);
  CHECK(end.signaled);
  CHECK(end.signal == SIGFPE);
  CHECK(contains(end.err, "typeflow: *** SIGFPE (signal 8, arithmetic exception), sent by pid "));
  CHECK(contains(end.err, "typeflow: crash in session 'test-session' while running node 'div' (op FloorDiv)\n"));
  CHECK(contains(end.err, "raise_signal"));
}

TEST_CASE("abort is reported as SIGABRT; without a context no session or node is named", "[crash]") {
  const child_end end = run_child([] {
    if (!tf::install_crash_handler().ok()) return 1;
    crash_test::call_abort();
    return 2;
  });
  INFO(end.err);
  CHECK(end.signaled);
  CHECK(end.signal == SIGABRT);
  CHECK(contains(end.err, "typeflow: *** SIGABRT (signal 6, aborted), sent by pid "));
  CHECK_FALSE(contains(end.err, "typeflow: crash"));
  CHECK(contains(end.err, "abort"));
  CHECK(contains(end.err, "call_abort"));
}

TEST_CASE("SIGILL and SIGBUS are reported by name and end the process with the same signal", "[crash]") {
  const int sig = GENERATE(SIGILL, SIGBUS);
  const child_end end = run_child([sig] {
    if (!tf::install_crash_handler().ok()) return 1;
    const tf::crash_context_scope scope("test-session", "relu", "Relu");
    crash_test::raise_signal(sig);
    return 2;
  });
  INFO(end.err);
  CHECK(end.signaled);
  CHECK(end.signal == sig);
  CHECK(contains(end.err, std::string("typeflow: *** ") + (sig == SIGILL ? "SIGILL (signal " : "SIGBUS (signal ") + std::to_string(sig)));
  CHECK(contains(end.err, "while running node 'relu' (op Relu)"));
}

TEST_CASE("a stack overflow is reported from the alternate signal stack", "[crash]") {
  const child_end end = run_child([] {
    if (!tf::install_crash_handler().ok()) return 1;
    const tf::crash_context_scope scope("test-session", "deep", "While");
    return crash_test::recurse(0) == 0 ? 2 : 3;
  });
  INFO(end.err);
  CHECK(end.signaled);
  CHECK(end.signal == SIGSEGV);
  CHECK(contains(end.err, "typeflow: *** SIGSEGV (signal 11, segmentation fault"));
  if (pc_known) CHECK(contains(end.err, "probably a stack overflow"));
  CHECK(contains(end.err, "while running node 'deep' (op While)"));
  CHECK(contains(end.err, "recurse"));
}

TEST_CASE("a stack overflow on a session's pool thread names the session and the node", "[crash]") {
  // A new thread does not inherit its creator's signal stack, so the pool's threads start without
  // one: the executor gives each one a signal stack on its first node after the handler's install.
  for (int threads : {0, 2}) {
    const child_end end = run_child([threads] {
      if (!tf::install_crash_handler().ok()) return 1;
      return crash_test::run_overflowing_graph(threads);
    });
    INFO("inter-op threads: " << threads << "\n" << end.err);
    CHECK(end.signaled);
    CHECK(end.signal == SIGSEGV);
    CHECK(contains(end.err, "typeflow: crash in session 'runtime_session on /job:localhost/replica:0/task:0/device:CPU:0' "
                            "while running node 'y' (op overflow)"));
    if (pc_known) CHECK(contains(end.err, "probably a stack overflow"));
    CHECK(contains(end.err, "recurse"));
  }
}

#endif
