// SPDX-License-Identifier: Apache-2.0
// Crash reports, as TensorFlow's StackTraceHandler. install_crash_handler() makes SIGSEGV, SIGBUS,
// SIGILL, SIGFPE and SIGABRT print on stderr the signal, the fault address, the session and node
// the crashing thread was running and a stack trace; then the signal is raised again with its
// default action, so the exit status and core dump are what they would have been without it.
//
//   int main() {
//     if (auto st = tf::install_crash_handler(); !st.ok()) std::fprintf(stderr, "%s\n", st.to_string().c_str());
//     ...
//   }
//
// The runtime says what is running with crash_context_scope (runtime_executor does it for every
// node, with runtime_step::session as the session's label); other code can do the same:
//
//   tf::crash_context_scope scope("training", "dense1", "MatMul");  // the pointers are kept, not copied
//
// Opt-in: including this header installs nothing. Linux with glibc only (execinfo.h); elsewhere
// install_crash_handler() returns unimplemented and the scopes still work (and cost the same).
// The handler is async-signal-safe: write(2) on fd 2 from fixed buffers, no stdio, no malloc.
// backtrace() is called once when installing, so libgcc's unwinder is loaded then and not in the
// handler (the documented way to make backtrace() usable there).
// Symbol names: backtrace_symbols_fd reads the dynamic symbol table, so an executable's own
// functions are named only when it is linked with -rdynamic (Meson: `export_dynamic : true` on the
// executable); otherwise a frame reads `exe(+0x1234)`, which `addr2line -Cfe exe 0x1234` resolves.
// Names are printed mangled (demangling allocates): pipe the report through c++filt.
#pragma once

#include <typeflow/fwd.hpp>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <typeflow/core/status.hpp>

#if defined(__linux__) && __has_include(<execinfo.h>)
#define TYPEFLOW_HAS_CRASH_HANDLER 1
#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#else
#define TYPEFLOW_HAS_CRASH_HANDLER 0
#endif

namespace typeflow {

// What a thread is running, for crash reports: pointers to strings that outlive the scope that set
// them (a graph's node names, a session's label). The innermost scope is current and links to the
// one it hides.
struct crash_context {
  const char* session = nullptr;  // a label, null when not known
  const char* node = nullptr;     // null for a session-wide scope
  const char* op = nullptr;
  const crash_context* enclosing = nullptr;
};

namespace detail {
inline thread_local const crash_context* crash_context_top = nullptr;
// Counts installations of the handler (0 or 1): threads compare it with what they saw last.
inline std::atomic<unsigned> crash_handler_generation{0};
}  // namespace detail

// The calling thread's innermost crash context; null outside any scope.
inline const crash_context* current_crash_context() noexcept { return detail::crash_context_top; }

// Makes (session, node, op) the calling thread's crash context until the scope ends. A null session
// keeps the enclosing scope's, so a node run inside a session-wide scope is reported with its
// session. Cost: a thread_local load and store and four stores to the stack; no allocation.
class crash_context_scope {
 public:
  explicit crash_context_scope(const char* session, const char* node = nullptr, const char* op = nullptr) noexcept {
    const crash_context* enclosing = detail::crash_context_top;
    context_.session = session == nullptr && enclosing != nullptr ? enclosing->session : session;
    context_.node = node;
    context_.op = op;
    context_.enclosing = enclosing;
    // The handler runs on this thread, so the record must be whole before it becomes current, and
    // stay current only while it lives. Compiler barriers: no instruction is emitted.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    detail::crash_context_top = &context_;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~crash_context_scope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    detail::crash_context_top = context_.enclosing;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  crash_context_scope(const crash_context_scope&) = delete;
  crash_context_scope& operator=(const crash_context_scope&) = delete;

 private:
  crash_context context_;
};

#if TYPEFLOW_HAS_CRASH_HANDLER

namespace detail {

inline constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

// One line built in a fixed buffer and written with write(2) (async-signal-safe); flushed when full
// and when it ends.
class crash_line {
 public:
  crash_line() noexcept = default;
  crash_line(const crash_line&) = delete;
  crash_line& operator=(const crash_line&) = delete;
  ~crash_line() { flush(); }

  // At most `limit` characters: a string the crash overwrote may have no terminator.
  crash_line& text(const char* s, std::size_t limit = 256) noexcept {
    if (s == nullptr) s = "(null)";
    for (std::size_t i = 0; i < limit && s[i] != '\0'; ++i) put(s[i]);
    return *this;
  }
  crash_line& dec(std::int64_t v) noexcept {
    std::uint64_t u = static_cast<std::uint64_t>(v);
    if (v < 0) {
      put('-');
      u = ~u + 1;  // two's complement magnitude; right for the minimum too
    }
    return digits(u, 10);
  }
  crash_line& hex(std::uintptr_t v) noexcept {
    put('0');
    put('x');
    return digits(v, 16);
  }
  void flush() noexcept {
    const char* p = buffer_;
    std::size_t left = size_;
    while (left > 0) {
      const ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // stderr is gone: nothing better to do in a signal handler
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    size_ = 0;
  }

 private:
  void put(char c) noexcept {
    if (size_ == sizeof(buffer_)) flush();
    buffer_[size_++] = c;
  }
  crash_line& digits(std::uint64_t v, unsigned base) noexcept {
    char reversed[20];  // 2^64 has 20 decimal digits
    int n = 0;
    do {
      reversed[n++] = "0123456789abcdef"[v % base];
      v /= base;
    } while (v != 0);
    while (n > 0) put(reversed[--n]);
    return *this;
  }

  char buffer_[256];
  std::size_t size_ = 0;
};

inline const char* crash_signal_name(int sig) noexcept {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

// What the kernel's si_code says about a fault; null when it says nothing more.
inline const char* crash_cause(int sig, int code) noexcept {
  switch (sig) {
    case SIGSEGV:
      if (code == SEGV_MAPERR) return "segmentation fault: address not mapped";
      if (code == SEGV_ACCERR) return "segmentation fault: access not permitted";
      return "segmentation fault";
    case SIGBUS:
      if (code == BUS_ADRALN) return "bus error: misaligned address";
      if (code == BUS_ADRERR) return "bus error: nonexistent physical address (a truncated mapped file?)";
      if (code == BUS_OBJERR) return "bus error: object-specific hardware error";
      return "bus error";
    case SIGILL:
      if (code == ILL_ILLOPC || code == ILL_ILLOPN) return "illegal instruction (code built for another CPU?)";
      if (code == ILL_PRVOPC || code == ILL_PRVREG) return "illegal instruction: privileged";
      return "illegal instruction";
    case SIGFPE:
      if (code == FPE_INTDIV) return "arithmetic exception: integer division by zero";
      if (code == FPE_INTOVF) return "arithmetic exception: integer overflow";
      if (code == FPE_FLTDIV) return "arithmetic exception: floating-point division by zero";
      if (code == FPE_FLTINV) return "arithmetic exception: invalid floating-point operation";
      return "arithmetic exception";
    case SIGABRT: return "aborted";
    default: return nullptr;
  }
}

// The interrupted program counter and stack pointer from the handler's ucontext; 0 where this
// architecture is not handled (then the whole trace is printed, handler frames included).
inline std::uintptr_t crash_pc(const void* uc) noexcept {
  if (uc == nullptr) return 0;
  [[maybe_unused]] const auto& m = static_cast<const ucontext_t*>(uc)->uc_mcontext;
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(m.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(m.pc);
#else
  return 0;
#endif
}
inline std::uintptr_t crash_sp(const void* uc) noexcept {
  if (uc == nullptr) return 0;
  [[maybe_unused]] const auto& m = static_cast<const ucontext_t*>(uc)->uc_mcontext;
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(m.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(m.sp);
#else
  return 0;
#endif
}

inline void print_crash_report(int sig, const siginfo_t* info, const void* uc, long tid) noexcept {
  const bool from_kernel = info != nullptr && info->si_code > 0;  // a fault, not kill() or raise()
  const std::uintptr_t address = info != nullptr ? reinterpret_cast<std::uintptr_t>(info->si_addr) : 0;
  {
    crash_line line;
    line.text("\ntypeflow: *** ").text(crash_signal_name(sig)).text(" (signal ").dec(sig);
    if (const char* cause = crash_cause(sig, from_kernel ? info->si_code : 0)) line.text(", ").text(cause);
    line.text(")");
    if (from_kernel && (sig == SIGSEGV || sig == SIGBUS)) line.text(" at address ").hex(address);
    if (info != nullptr && !from_kernel) line.text(", sent by pid ").dec(info->si_pid);
    line.text(", in pid ").dec(::getpid()).text(" thread ").dec(tid).text(" ***\n");
  }
  // A fault within 64 KiB of the stack pointer is most likely the stack running into its guard.
  if (const std::uintptr_t sp = crash_sp(uc); from_kernel && sig == SIGSEGV && sp != 0) {
    const std::uintptr_t distance = address > sp ? address - sp : sp - address;
    if (distance < 64 * 1024) crash_line().text("typeflow: the fault is next to the stack pointer: probably a stack overflow\n");
  }
  if (const crash_context* c = crash_context_top) {
    {
      crash_line line;
      line.text("typeflow: crash");
      if (c->session != nullptr) line.text(" in session '").text(c->session).text("'");
      if (c->node != nullptr) {
        line.text(" while running node '").text(c->node).text("'");
        if (c->op != nullptr) line.text(" (op ").text(c->op).text(")");
      }
      line.text("\n");
    }
    int depth = 0;  // bounded: the chain lives on a stack that may be corrupt
    for (const crash_context* e = c->enclosing; e != nullptr && depth < 8; e = e->enclosing, ++depth)
      if (e->node != nullptr) {
        crash_line line;
        line.text("typeflow:   inside node '").text(e->node).text("'");
        if (e->op != nullptr) line.text(" (op ").text(e->op).text(")");
        line.text("\n");
      }
  }
  // The trace starts at the interrupted instruction: the frames before it are this handler's and
  // the signal trampoline's (glibc's __restore_rt).
  void* frames[64];
  const int count = ::backtrace(frames, 64);
  int first = -1;
  if (const std::uintptr_t pc = crash_pc(uc); pc != 0)
    for (int i = 0; i < count && first < 0; ++i)
      if (reinterpret_cast<std::uintptr_t>(frames[i]) == pc) first = i;
  const int start = first < 0 ? 0 : first;
  crash_line().text("typeflow: stack trace (innermost ").dec(count - start).text(" frames; names need -rdynamic, c++filt demangles them):\n");
  for (int i = start; i < count;) {
    // The other frames hold return addresses, which after a call to a noreturn function (abort)
    // lie past the caller's end: they are looked up, and printed, one byte back, in the call.
    void* at = i == first ? frames[i] : static_cast<void*>(static_cast<char*>(frames[i]) - 1);
    crash_line().text("typeflow:   #").dec(i - start).text(" ");
    ::backtrace_symbols_fd(&at, 1, STDERR_FILENO);  // writes "object(symbol+offset)[address]\n"
    int same = 1;  // a recursion (a stack overflow's usual cause) is one line
    while (i + same < count && frames[i + same] == frames[i] && i != first) ++same;
    if (same > 1) crash_line().text("typeflow:   ... the same frame ").dec(same - 1).text(" more times\n");
    i += same;
  }
  crash_line().text("typeflow: raising ").text(crash_signal_name(sig)).text(" again with its default action\n");
}

// The thread that is printing a report (0: none): a second thread crashing meanwhile (with another
// signal: the first one's handler is already reset) waits for the process to end rather than mix
// its lines in; a crash inside the handler goes straight to the default action.
inline std::atomic<long> crash_reporter{0};
static_assert(std::atomic<long>::is_always_lock_free,
              "crash_handler: the crash handler's std::atomic<long> must be lock-free to be async-signal-safe");

inline void crash_signal_handler(int sig, siginfo_t* info, void* uc) noexcept {
  const int saved_errno = errno;
  const long tid = ::syscall(SYS_gettid);
  long reporter = 0;
  bool report = true;
  if (!crash_reporter.compare_exchange_strong(reporter, tid)) {
    report = reporter != tid;
    for (int i = 0; report && i < 500 && crash_reporter.load() != 0; ++i) {  // 5 s at most
      const timespec pause{0, 10'000'000};
      ::nanosleep(&pause, nullptr);
    }
  }
  if (report) print_crash_report(sig, info, uc, tid);
  // SA_RESETHAND has restored the default action already; said again in case that flag was lost.
  // The raised signal is blocked until this handler returns, then ends the process as it would have.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(sig, &default_action, nullptr);
  ::raise(sig);
  errno = saved_errno;
}

// The calling thread's alternate signal stack, mapped with a guard page below it and released when
// the thread ends.
class crash_signal_stack {
 public:
  crash_signal_stack() = default;
  crash_signal_stack(const crash_signal_stack&) = delete;
  crash_signal_stack& operator=(const crash_signal_stack&) = delete;
  ~crash_signal_stack() {
    if (map_ == nullptr) return;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == usable()) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      ::sigaltstack(&off, nullptr);
    }
    ::munmap(map_, map_bytes_);
  }

  status install() {
    if (map_ != nullptr) return ok_status();
    // 64 KiB for backtrace() and the report, plus what the kernel's signal frame needs here
    // (SIGSTKSZ is sysconf(_SC_SIGSTKSZ) on glibc 2.34 and later: AVX-512 and SVE frames are large).
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t want = 64 * 1024 + static_cast<std::size_t>(SIGSTKSZ);
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0 && current.ss_size >= want)
      return ok_status();  // the thread has a large enough one already
    const std::size_t bytes = (want + page - 1) / page * page + page;
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
      return errors::resource_exhausted("install_crash_signal_stack: mapping ", bytes, " bytes failed: ", std::strerror(errno));
    // The guard page: a handler that overflows this stack faults instead of writing over memory.
    if (::mprotect(map, page, PROT_NONE) != 0) {
      const int error = errno;
      ::munmap(map, bytes);
      return errors::internal("install_crash_signal_stack: mprotect of the guard page failed: ", std::strerror(error));
    }
    stack_t stack{};
    stack.ss_sp = static_cast<char*>(map) + page;
    stack.ss_size = bytes - page;
    if (::sigaltstack(&stack, nullptr) != 0) {
      const int error = errno;
      ::munmap(map, bytes);
      return errors::internal("install_crash_signal_stack: sigaltstack failed: ", std::strerror(error));
    }
    map_ = map;
    map_bytes_ = bytes;
    page_ = page;
    return ok_status();
  }

 private:
  void* usable() const noexcept { return static_cast<char*>(map_) + page_; }

  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t page_ = 0;
};

inline status install_crash_signal_handlers() {
  // Loads libgcc (backtrace's unwinder) now: the first backtrace() calls dlopen, which allocates.
  void* warm[2];
  (void)::backtrace(warm, 2);
  struct sigaction action {};
  action.sa_sigaction = &crash_signal_handler;
  action.sa_flags = static_cast<int>(SA_SIGINFO | SA_ONSTACK | SA_RESETHAND);  // glibc's SA_RESETHAND is 0x80000000u
  sigemptyset(&action.sa_mask);  // blocking SEGV and the like while handling one would kill at once
  for (int sig : crash_signals)
    if (::sigaction(sig, &action, nullptr) != 0)
      return errors::internal("install_crash_handler: sigaction(", crash_signal_name(sig), ") failed: ", std::strerror(errno));
  return ok_status();
}

}  // namespace detail

// Gives the calling thread an alternate signal stack (64 KiB and SIGSTKSZ, with a guard page), so
// that a stack overflow on it can be reported: the handler cannot run on the stack that overflowed.
// install_crash_handler() does it for its caller; threads started later (a pool's) have none until
// they call this. Once per thread; the stack is released when the thread ends.
inline status install_crash_signal_stack() {
  thread_local detail::crash_signal_stack stack;
  return stack.install();
}

// Installs the crash handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (replacing what was
// there, e.g. a sanitizer's) and the calling thread's signal stack. Idempotent and thread-safe: the
// handlers are installed once per process; each calling thread gets its own signal stack.
inline status install_crash_handler() {
  static const status installed = [] {
    status st = detail::install_crash_signal_handlers();
    if (st.ok()) detail::crash_handler_generation.fetch_add(1, std::memory_order_release);
    return st;
  }();
  if (!installed.ok()) return installed;
  return install_crash_signal_stack();
}

// Gives the calling thread a signal stack when a crash handler was installed since the thread last
// asked: the runtime executors call it before every node, so that their pool's threads get one on
// their first node. (Other threads, such as a static parallel session's or the intra-op threads of
// a thread_pool policy, have none unless they call this.) When nothing changed, a relaxed atomic
// load and a compare. A stack that cannot be made leaves the thread as it was (a report then needs
// the thread's own stack, as without the handler).
inline void ensure_crash_signal_stack() noexcept {
  thread_local unsigned seen = 0;
  const unsigned now = detail::crash_handler_generation.load(std::memory_order_relaxed);
  if (now == seen) return;
  seen = now;
  try {
    (void)install_crash_signal_stack();
  } catch (...) {  // the status of a failure is built with strings, which may not fit in memory
  }
}

// Whether every crash signal's action is this handler (false after one fired: it resets itself).
inline bool crash_handler_installed() noexcept {
  for (int sig : detail::crash_signals) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) == 0 ||
        current.sa_sigaction != &detail::crash_signal_handler)
      return false;
  }
  return true;
}

#else  // no execinfo.h: reports are not available, scopes still are

inline status install_crash_signal_stack() {
  return errors::unimplemented("install_crash_signal_stack: crash reports need Linux with glibc");
}
inline void ensure_crash_signal_stack() noexcept {}
inline status install_crash_handler() {
  return errors::unimplemented("install_crash_handler: crash reports need Linux with glibc (execinfo.h)");
}
inline bool crash_handler_installed() noexcept { return false; }

#endif

}  // namespace typeflow
