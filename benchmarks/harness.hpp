// SPDX-License-Identifier: Apache-2.0
// The benchmark harness (BENCHMARKS.md): each case runs typeflow and its baseline in the same
// process, alternating, after a warm-up; it reports medians and the ratio typeflow / baseline
// (lower is better for times), prints a table and, with --json FILE, writes one record per case.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace typeflow::bench {

// Makes v's address escape: the compiler must assume it is read and written here, so work whose
// result is kept is not optimised away.
template <class T>
void keep(const T& v) {
  asm volatile("" : : "g"(&v) : "memory");
}

struct record {
  std::string benchmark, case_name, metric, unit, baseline_name;
  double typeflow = 0, baseline = 0, ratio = 0, spread = 0;
};

class harness {
 public:
  harness(std::string benchmark, int argc, char** argv) : benchmark_(std::move(benchmark)) {
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path_ = argv[++i];
      else if (std::strcmp(argv[i], "--quick") == 0) quick_ = true;
    }
    std::printf("%-34s %-34s %12s %12s %8s  %s\n", "benchmark", "case", "typeflow", "baseline", "ratio", "baseline");
  }
  ~harness() { write_json(); }

  bool quick() const { return quick_; }

  // Times `ours` and `theirs` alternately: `warmup` untimed rounds, then rounds until both have
  // `min_reps` samples and at least `min_seconds` have passed. Records medians in `unit`
  // ("ms", "us" or "ns/node" with `per` = nodes per call).
  template <class Ours, class Theirs>
  record compare(const std::string& case_name, const std::string& baseline_name, Ours&& ours, Theirs&& theirs,
                 int min_reps = 11, double min_seconds = 0.5, const std::string& unit = "ms", double per = 1) {
    return compare_apart(case_name, baseline_name, ours, theirs, std::chrono::milliseconds(0), min_reps, min_seconds,
                         unit, per);
  }

  // compare, with the process idle for `gap` (untimed) after each timed call: for a baseline whose
  // threads go on spinning after it returns (OpenMP's, libgomp's default wait) and would take the
  // cores from the next call, and typeflow's helpers, which spin too.
  template <class Ours, class Theirs>
  record compare_apart(const std::string& case_name, const std::string& baseline_name, Ours&& ours, Theirs&& theirs,
                       std::chrono::milliseconds gap, int min_reps = 11, double min_seconds = 0.5,
                       const std::string& unit = "ms", double per = 1) {
    if (quick_) { min_reps = 3; min_seconds = 0.0; }
    const auto pause = [gap] {
      if (gap.count() > 0) std::this_thread::sleep_for(gap);
    };
    for (int i = 0; i < 2; ++i) { ours(); pause(); theirs(); pause(); }
    std::vector<double> a, b;
    const auto start = clock::now();
    while (static_cast<int>(a.size()) < min_reps || seconds_since(start) < min_seconds) {
      a.push_back(time_once(ours));
      pause();
      b.push_back(time_once(theirs));
      pause();
      if (a.size() > 100000) break;
    }
    const double scale = (unit == "ms" ? 1e3 : unit == "us" ? 1e6 : 1e9) / per;
    record r{benchmark_, case_name, "time", unit, baseline_name, median(a) * scale, median(b) * scale};
    r.ratio = r.typeflow / r.baseline;
    r.spread = relative_spread(a);
    add(r);
    return r;
  }

  // A record measured elsewhere (compile times, byte counts).
  void add(record r) {
    std::printf("%-34s %-34s %10.3f%-2s %10.3f%-2s %8.3f  %s\n", r.benchmark.c_str(), r.case_name.c_str(), r.typeflow,
                short_unit(r.unit), r.baseline, short_unit(r.unit), r.ratio, r.baseline_name.c_str());
    std::fflush(stdout);
    records_.push_back(std::move(r));
  }

 private:
  using clock = std::chrono::steady_clock;
  template <class F>
  static double time_once(F& f) {
    const auto t0 = clock::now();
    f();
    return std::chrono::duration<double>(clock::now() - t0).count();
  }
  static double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  // (p75 - p25) / median: how noisy the typeflow samples were.
  static double relative_spread(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const double m = median(v);
    return m > 0 ? (v[v.size() * 3 / 4] - v[v.size() / 4]) / m : 0;
  }
  static const char* short_unit(const std::string& u) { return u == "ns/node" ? "ns" : u.c_str(); }
  static std::string escape(const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      o += c;
    }
    return o;
  }
  void write_json() const {
    if (json_path_.empty()) return;
    std::ofstream out(json_path_);
    out << "[\n";
    for (std::size_t i = 0; i < records_.size(); ++i) {
      const auto& r = records_[i];
      out << "  {\"benchmark\": \"" << escape(r.benchmark) << "\", \"case\": \"" << escape(r.case_name)
          << "\", \"metric\": \"" << escape(r.metric) << "\", \"unit\": \"" << escape(r.unit)
          << "\", \"typeflow\": " << r.typeflow << ", \"baseline\": " << r.baseline << ", \"baseline_name\": \""
          << escape(r.baseline_name) << "\", \"ratio\": " << r.ratio << ", \"spread\": " << r.spread << "}"
          << (i + 1 < records_.size() ? "," : "") << "\n";
    }
    out << "]\n";
  }

  std::string benchmark_;
  std::string json_path_;
  bool quick_ = false;
  std::vector<record> records_;
};

}  // namespace typeflow::bench
