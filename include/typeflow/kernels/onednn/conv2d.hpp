// SPDX-License-Identifier: Apache-2.0
// onednn_conv2d_kernel: conv2d for float on oneDNN, the algorithm chosen by shape: NHWC images
// with a short patch (few input channels, as a network's first layers have) on oneDNN's direct
// convolution (its JIT kernels for the machine's vector width), the others on im2col + oneDNN's
// sgemm (kernels/cpu/conv2d.hpp; NCHW images multiplied as they lie). direct_max_depth says where
// the line is and why.
//
// The work is split over the policy's threads as the other host kernels split theirs, each block one
// call of a primitive on the calling thread alone (one OpenMP thread, kernels/onednn/gemm.hpp):
// ranges of whole images, or of output rows of each image where the images alone would leave
// threads without an equal share. An NHWC image's rows follow one another, so a range of rows is
// an image of its own, with the padding of its edges: no copy.
//
// A primitive is made once per shape and block and kept in a cache shared by the process (its
// descriptor and JIT code; oneDNN's own cache would still build the descriptor on every call).
// The filter is reordered on every call into the layout the primitive chose: the filter is a
// variable a program may assign, and the reorder reads it once (9 * c_in * c_out floats for a 3x3
// filter) where the convolution reads it once a pixel. Scratchpads come from the calling thread's
// scratch cache (scratchpad_mode::user), so two threads may run one primitive at once.
// Unlike the default kernels, a call takes oneDNN's memory objects from the heap.
#pragma once

#include <typeflow/fwd.hpp>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <typeflow/device/parallel_for.hpp>
#include <typeflow/device/scratch.hpp>
#include <typeflow/kernels/cpu/conv2d.hpp>
#include <typeflow/kernels/cpu/detail/im2col.hpp>
#include <typeflow/kernels/kernel.hpp>
#include <typeflow/kernels/onednn/gemm.hpp>
#include <typeflow/ops/conv.hpp>

#include <oneapi/dnnl/dnnl.hpp>

namespace typeflow::onednn {

namespace detail {

// The engine of every primitive here (the primitive cache's, so that it outlives them).
inline dnnl::engine& cpu_engine();

// One call of a convolution primitive: `n` NHWC images of in_rows x w x c_in (in_rows input rows
// from the block's first input row; pad_top and pad_bottom are the padding rows its windows reach
// above and below them), giving out_rows x ow x c_out each.
struct conv_call_shape {
  std::int64_t n, in_rows, w, c_in;
  std::int64_t kh, kw, c_out;
  std::int64_t out_rows, ow;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w;
  std::int64_t pad_top, pad_bottom, pad_left, pad_right;
  auto operator<=>(const conv_call_shape&) const = default;
};

// A primitive for one call shape: the convolution with its filter layout left to oneDNN, and the
// reorder of an HWIO filter into that layout.
struct conv_primitive {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  dnnl::memory::desc filter_hwio;
  dnnl::reorder::primitive_desc reorder_pd;
  dnnl::reorder reorder;

  explicit conv_primitive(const conv_call_shape& s)
      : pd(make_pd(s)), conv(pd), filter_hwio(filter_dims(s), dnnl::memory::data_type::f32, dnnl::memory::format_tag::hwio),
        reorder_pd(cpu_engine(), filter_hwio, cpu_engine(), pd.weights_desc(), user_scratchpad()),
        reorder(reorder_pd) {}

  static dnnl::memory::dims filter_dims(const conv_call_shape& s) { return {s.c_out, s.c_in, s.kh, s.kw}; }

  static dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }

  static dnnl::convolution_forward::primitive_desc make_pd(const conv_call_shape& s) {
    using dnnl::memory;
    const memory::desc src({s.n, s.c_in, s.in_rows, s.w}, memory::data_type::f32, memory::format_tag::nhwc);
    const memory::desc dst({s.n, s.c_out, s.out_rows, s.ow}, memory::data_type::f32, memory::format_tag::nhwc);
    const memory::desc filter(filter_dims(s), memory::data_type::f32, memory::format_tag::any);
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                            filter, dst, {s.stride_h, s.stride_w},
                                            {s.dilation_h - 1, s.dilation_w - 1},  // oneDNN counts the gaps
                                            {s.pad_top, s.pad_left}, {s.pad_bottom, s.pad_right});
    return {d, user_scratchpad(), cpu_engine()};
  }
};

// The process's primitives, by call shape, and their engine. Past `capacity` shapes, one is
// dropped for each new one (a primitive in use is kept alive by its caller's reference).
class conv_primitive_cache {
 public:
  static constexpr std::size_t capacity = 256;

  static std::shared_ptr<const conv_primitive> get(const conv_call_shape& s) {
    auto& c = instance();
    {
      std::lock_guard lock(c.mutex_);
      if (auto it = c.entries_.find(s); it != c.entries_.end()) return it->second;
    }
    // Made outside the lock (JIT compilation takes milliseconds; other shapes need not wait), and
    // with one OpenMP thread: oneDNN fixes a primitive's thread count when it is made, and starts
    // that many threads on every run whatever the caller's count then.
    std::shared_ptr<const conv_primitive> made;
    {
      const one_openmp_thread single;
      made = std::make_shared<const conv_primitive>(s);
    }
    std::lock_guard lock(c.mutex_);
    if (c.entries_.size() >= capacity && !c.entries_.contains(s)) c.entries_.erase(c.entries_.begin());
    return c.entries_.emplace(s, std::move(made)).first->second;  // the first one made, where two threads raced
  }

  static dnnl::engine& engine() { return instance().engine_; }

 private:
  static conv_primitive_cache& instance() {
    static conv_primitive_cache cache;
    return cache;
  }
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};  // destroyed after the primitives
  std::mutex mutex_;
  std::map<conv_call_shape, std::shared_ptr<const conv_primitive>> entries_;
};

inline dnnl::engine& cpu_engine() { return conv_primitive_cache::engine(); }

// One block of the work: images [image, image + count) when whole images, else output rows
// [row0, row1) of image `image`; `primitive` is null when every output of the block reads only
// padding (its outputs are zero).
struct conv_block {
  std::int64_t image, count, row0, row1;
  std::int64_t first_input_row;
  std::shared_ptr<const conv_primitive> primitive;
  std::size_t filter;  // index of its reordered filter
};

}  // namespace detail

template <class Op, class Device, class T>
struct onednn_conv2d_kernel {
  static_assert(std::is_same_v<T, float>, "onednn_conv2d_kernel: float only");
  using op_type = Op;
  using device_type = Device;
  using value_type = T;
  static constexpr bool expensive = true;

  // The longest patch (kh * kw * c_in: the depth of im2col's GEMM) that takes the direct
  // convolution; a pointwise convolution, which is one GEMM without im2col, never does. Measured
  // with this kernel made direct for every shape, on 3x3 filters, 28x28 images, 64 output
  // channels, one thread, 1 and 16 images (bench_kernels' oneDNN convolution case, AVX2 AMD EPYC),
  // direct / im2col + sgemm: c_in 1 0.57-0.64, 3 0.78-0.85, 8 0.91-0.95, 16 0.91-1.05, 24
  // 0.98-1.06, 32 0.96-1.18, 64 1.18-1.24. A short patch makes a GEMM too thin for its blocking; a
  // long one is where GEMM is at its best.
  static constexpr std::int64_t direct_max_depth = 128;

  // Multiply-adds a cycle of the direct convolution, for the policy's cost model (whose unit is a
  // cycle): 3x3, 1 -> 32 channels on one 28x28 image, 225,792 multiply-adds, took 13 us on one
  // thread (about 6 a cycle at 3 GHz), and 23 us split over two.
  static constexpr double direct_macs_per_cycle = 6;

  // Whether the direct convolution takes this one: an NHWC image with a short patch, not pointwise,
  // with something to compute (im2col's kernel handles empty images, filters and sums), and padded
  // extents within an int, where oneDNN 2.6 checks a shape (pads of up to 2^31 - 1 each, which the
  // op allows, overflow it: it refuses the descriptor where im2col computes the output).
  static bool direct(const Op& op, const cpu_kernels::detail::conv_geometry& g) {
    const auto padded = [](std::int64_t in, std::int64_t before, std::int64_t out, std::int64_t stride, std::int64_t k,
                           std::int64_t dilation) {
      return std::max(in + before, (out - 1) * stride + (k - 1) * dilation + 1);
    };
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    return op.format == ops::data_format::nhwc && g.patch_size() <= direct_max_depth && !g.is_pointwise() &&
           g.output_rows() > 0 && g.c_out > 0 && g.c_in > 0 &&
           padded(g.h, g.pad_top, g.oh, g.stride_h, g.kh, g.dilation_h) <= int_max &&
           padded(g.w, g.pad_left, g.ow, g.stride_w, g.kw, g.dilation_w) <= int_max;
  }

  static double row_cycles(const cpu_kernels::detail::conv_geometry& g) {
    return static_cast<double>(g.patch_size()) * static_cast<double>(g.c_out) / direct_macs_per_cycle;
  }

  static status compute(const Op& op, kernel_context<Device>& ctx) {
    const tensor& x = ctx.inputs[0];
    const tensor& f = ctx.inputs[1];
    tensor& y = ctx.outputs[0];
    const auto g = cpu_kernels::detail::conv_geometry::of(op, x, f, y);
    if (!direct(op, g)) return cpu_kernels::basic_im2col_conv2d_kernel<Op, Device, T, onednn_gemm>::compute(op, ctx);
    try {
      run(g, x.unchecked_data<const float>(), f.unchecked_data<const float>(), y.unchecked_data<float>(), ctx.device);
    } catch (const dnnl::error& e) {
      if (e.status == dnnl_out_of_memory)
        return errors::resource_exhausted("conv2d: oneDNN's convolution on image ", x.shape().to_string(), " and filter ",
                                          f.shape().to_string(), ": out of memory");
      return errors::internal("conv2d: oneDNN's convolution failed on image ", x.shape().to_string(), " and filter ",
                              f.shape().to_string(), ": ", e.what());
    }
    return ok_status();
  }

 private:
  using shape_t = detail::conv_call_shape;

  static void run(const cpu_kernels::detail::conv_geometry& g, const float* in, const float* filter, float* out,
                  Device& device) {
    std::vector<detail::conv_block> blocks = plan(g, device.num_threads());
    // The filter, once in each layout the blocks' primitives chose.
    std::deque<scratch_buffer<char>> filters;
    std::vector<const detail::conv_primitive*> layouts;
    for (auto& b : blocks) {
      if (!b.primitive) continue;
      const auto& p = *b.primitive;
      std::size_t i = 0;
      while (i < layouts.size() && layouts[i]->pd.weights_desc() != p.pd.weights_desc()) ++i;
      b.filter = i;
      if (i < layouts.size()) continue;
      layouts.push_back(&p);
      filters.emplace_back(p.pd.weights_desc().get_size());
      const one_openmp_thread single;
      dnnl::stream stream(detail::cpu_engine());
      dnnl::memory from(p.filter_hwio, detail::cpu_engine(), const_cast<float*>(filter));
      dnnl::memory to(p.pd.weights_desc(), detail::cpu_engine(), filters.back().data());
      execute(stream, p.reorder, p.reorder_pd.scratchpad_desc(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
    }

    const double cost = row_cycles(g) * static_cast<double>(g.output_rows()) / static_cast<double>(blocks.size());
    device.parallel_for(static_cast<std::int64_t>(blocks.size()), cost, [&](std::int64_t first, std::int64_t last) {
      const one_openmp_thread single;
      dnnl::stream stream(detail::cpu_engine());
      for (std::int64_t i = first; i < last; ++i) {
        const detail::conv_block& b = blocks[static_cast<std::size_t>(i)];
        float* y = out + (b.image * g.oh + b.row0) * g.ow * g.c_out;
        if (!b.primitive) {
          std::fill_n(y, b.count * (b.row1 - b.row0) * g.ow * g.c_out, 0.0f);
          continue;
        }
        const auto& p = *b.primitive;
        const float* x = in + (b.image * g.h + b.first_input_row) * g.w * g.c_in;
        dnnl::memory src(p.pd.src_desc(), detail::cpu_engine(), const_cast<float*>(x));
        dnnl::memory dst(p.pd.dst_desc(), detail::cpu_engine(), y);
        dnnl::memory weights(p.pd.weights_desc(), detail::cpu_engine(), filters[b.filter].data());
        execute(stream, p.conv, p.pd.scratchpad_desc(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
      }
    });
  }

  // Runs `primitive` to completion with its scratchpad (described by `scratchpad`) from the
  // calling thread's scratch cache.
  static void execute(dnnl::stream& stream, const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                      std::unordered_map<int, dnnl::memory> args) {
    const std::size_t bytes = scratchpad.get_size();
    std::optional<scratch_buffer<char>> pad;
    if (bytes > 0) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, detail::cpu_engine(), pad.emplace(bytes).data()));
    primitive.execute(stream, args);
    stream.wait();
  }

  // The blocks, so that the threads the work is worth (the policy's cost model,
  // parallel_threads) get equal shares: as many ranges of whole images as threads where they divide
  // the images; one image a block where there are many (the policy's parallel_for balances them);
  // else each image's output rows in as many ranges as make the blocks a multiple of the threads.
  static std::vector<detail::conv_block> plan(const cpu_kernels::detail::conv_geometry& g, int num_threads) {
    // The padding after the last window, at least 0: less than 0 only where the last rows or
    // columns are read by no window (a stride that steps past them, or explicit padding no window
    // reaches), which oneDNN's output size rounds off the same.
    const auto after = [](std::int64_t out, std::int64_t stride, std::int64_t k, std::int64_t dilation, std::int64_t in,
                          std::int64_t before) {
      return std::max<std::int64_t>(0, (out - 1) * stride + (k - 1) * dilation + 1 - in - before);
    };
    shape_t s{.n = 1, .in_rows = g.h, .w = g.w, .c_in = g.c_in, .kh = g.kh, .kw = g.kw, .c_out = g.c_out,
              .out_rows = g.oh, .ow = g.ow, .stride_h = g.stride_h, .stride_w = g.stride_w,
              .dilation_h = g.dilation_h, .dilation_w = g.dilation_w, .pad_top = g.pad_top,
              .pad_bottom = after(g.oh, g.stride_h, g.kh, g.dilation_h, g.h, g.pad_top), .pad_left = g.pad_left,
              .pad_right = after(g.ow, g.stride_w, g.kw, g.dilation_w, g.w, g.pad_left)};
    const std::int64_t threads = ::typeflow::detail::parallel_threads(g.output_rows(), row_cycles(g), std::max(1, num_threads));
    std::vector<detail::conv_block> blocks;
    if (g.n % threads == 0 || g.n >= 4 * threads) {
      const std::int64_t count = g.n % threads == 0 ? threads : g.n;
      for (std::int64_t t = 0; t < count; ++t) {
        const std::int64_t first = g.n * t / count, last = g.n * (t + 1) / count;
        s.n = last - first;
        blocks.push_back({first, s.n, 0, g.oh, 0, detail::conv_primitive_cache::get(s), 0});
      }
      return blocks;
    }
    const std::int64_t ranges = std::min<std::int64_t>(g.oh, threads / std::gcd(g.n, threads));
    s.n = 1;
    for (std::int64_t image = 0; image < g.n; ++image)
      for (std::int64_t r = 0; r < ranges; ++r) {
        const std::int64_t row0 = g.oh * r / ranges, row1 = g.oh * (r + 1) / ranges;
        if (row0 == row1) continue;
        // Input rows [begin, end) of the padded image, then clipped to the image.
        const std::int64_t begin = row0 * g.stride_h - g.pad_top;
        const std::int64_t end = (row1 - 1) * g.stride_h - g.pad_top + (g.kh - 1) * g.dilation_h + 1;
        const std::int64_t first = std::max<std::int64_t>(0, begin), last = std::min(g.h, end);
        if (last <= first) {
          blocks.push_back({image, 1, row0, row1, 0, nullptr, 0});
          continue;
        }
        s.in_rows = last - first;
        s.out_rows = row1 - row0;
        s.pad_top = first - begin;
        s.pad_bottom = end - last;
        blocks.push_back({image, 1, row0, row1, first, detail::conv_primitive_cache::get(s), 0});
      }
    return blocks;
  }
};

}  // namespace typeflow::onednn
