// SPDX-License-Identifier: Apache-2.0
// Eigen's Tensor module as typeflow includes it (core/detail/eigen.hpp), precompiled once with the
// header check's flags and pre-included in the units of the public headers that include it
// (test/headers/list_headers.py says which): 2.2-2.4 s of a header's 2.8-4.1 s was parsing Eigen.
// Their own include of it is then free (Eigen's include guards); what is checked is that each header
// includes what it uses of typeflow and of everything else, as before, where Eigen would not have
// brought it in anyway. The units of headers that do not include Eigen get nothing pre-included.
// (No #pragma once: it is the main file when precompiled, and pre-included once.)

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>
