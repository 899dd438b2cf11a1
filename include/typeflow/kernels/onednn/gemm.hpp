// SPDX-License-Identifier: Apache-2.0
// onednn_gemm: oneDNN's sgemm (Debian's libdnnl-dev, the library behind TensorFlow's CPU kernels)
// as a GEMM backend of the matmul and conv2d kernels (kernels/cpu/gemm.hpp says what a backend
// is), for float. The kernels give it blocks of their work on the policy's threads, so each call
// runs on the calling thread alone: oneDNN is built on OpenMP, and the calling thread's OpenMP
// thread count is set to 1 for the call and put back after it, so oneDNN starts no threads beside
// the policy's and a program's own OpenMP settings are kept. Link with -ldnnl -lgomp
// (pkg-config typeflow-onednn).
#pragma once

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <string_view>

#if !__has_include(<oneapi/dnnl/dnnl.h>)
#error "typeflow/kernels/onednn needs oneDNN's headers (Debian: apt-get install libdnnl-dev); the default kernels (tf::cpu_kernel_list) do not"
#endif
#include <oneapi/dnnl/dnnl.h>

// OpenMP's runtime entry points (GNU libgomp, which Debian's oneDNN links): from <omp.h> where the
// compiler has one (GCC always does; -fopenmp is not needed to call them), else declared here (Clang
// ships <omp.h> only with libomp).
#if __has_include(<omp.h>)
#include <omp.h>
#else
extern "C" {
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}
#endif

namespace typeflow::onednn {

// The calling thread's OpenMP thread count set to 1 for this object's life, so that oneDNN starts
// no threads beside the policy's; put back after.
class one_openmp_thread {
 public:
  one_openmp_thread() : threads_(omp_get_max_threads()) {
    if (threads_ != 1) omp_set_num_threads(1);
  }
  ~one_openmp_thread() {
    if (threads_ != 1) omp_set_num_threads(threads_);
  }
  one_openmp_thread(const one_openmp_thread&) = delete;
  one_openmp_thread& operator=(const one_openmp_thread&) = delete;

 private:
  int threads_;
};

struct onednn_gemm {
  static constexpr std::string_view name = "oneDNN";

  static bool run(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                  std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc) {
    const one_openmp_thread single;
    return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) ==
           dnnl_success;
  }
};

}  // namespace typeflow::onednn
