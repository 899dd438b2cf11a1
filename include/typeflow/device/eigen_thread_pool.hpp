// SPDX-License-Identifier: Apache-2.0
// make_eigen_thread_pool(threads, what): the Eigen::ThreadPool of a session's or executor's
// option, or a status naming the option. Eigen's pool has a hard limit (2^14 waiters) past which
// it corrupts memory, and a std::thread that cannot start throws std::system_error from inside its
// constructor, where it would leave the threads already started waiting forever; this is the one
// place typeflow starts pools from user input, and it turns both into statuses.
//   auto pool = tf::make_eigen_thread_pool(options.inter_op_threads, "session_options::inter_op_threads");
#pragma once

#include <typeflow/fwd.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <typeflow/core/detail/eigen.hpp>
#include <typeflow/core/status.hpp>

namespace typeflow {

// The most threads one pool may have.
inline constexpr int max_pool_threads = 4096;

namespace detail {

// Starts `count` threads that wait, then lets them go and joins them: ok when the system can
// start that many threads now (so that Eigen's constructor will not throw halfway).
inline status probe_threads(int count, std::string_view what) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::thread> started;
  status st;
  try {
    started.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
      started.emplace_back([&] {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return release; });
      });
  } catch (const std::system_error& e) {
    st = errors::resource_exhausted(what, ": cannot start ", count, " threads (", started.size(),
                                    " started, then: ", e.what(), ")");
  } catch (const std::bad_alloc&) {
    st = errors::resource_exhausted(what, ": out of memory starting ", count, " threads");
  }
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  for (auto& t : started) t.join();
  return st;
}

}  // namespace detail

inline result<std::unique_ptr<Eigen::ThreadPool>> make_eigen_thread_pool(int threads, std::string_view what) {
  if (threads < 1 || threads > max_pool_threads)
    return errors::invalid_argument(what, " is ", threads, "; a thread pool has 1 to ", max_pool_threads, " threads");
  if (auto st = detail::probe_threads(threads, what); !st.ok()) return st;
  try {
    return std::make_unique<Eigen::ThreadPool>(threads);
  } catch (const std::system_error& e) {
    return errors::resource_exhausted(what, ": cannot start ", threads, " threads: ", e.what());
  } catch (const std::bad_alloc&) {
    return errors::resource_exhausted(what, ": out of memory starting ", threads, " threads");
  }
}

}  // namespace typeflow
