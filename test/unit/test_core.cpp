// SPDX-License-Identifier: Apache-2.0
// Core types: status and result, dtypes, shapes and broadcasting, tensors and their checked access.
#include "support.hpp"

#include <cstring>
#include <limits>

namespace tf = typeflow;

TEST_CASE("status carries a code and a message", "[core][status]") {
  const tf::status ok;
  CHECK(ok.ok());
  CHECK(ok.to_string() == "ok");
  const auto bad = tf::errors::invalid_argument("input ", 3, " has shape ", tf::shape{2, tf::dyn});
  CHECK_FALSE(bad.ok());
  CHECK(bad.code() == tf::status_code::invalid_argument);
  CHECK(bad.message() == "input 3 has shape [2, ?]");
  CHECK(bad.to_string() == "invalid_argument: input 3 has shape [2, ?]");
  CHECK(bad.with_context("node 'x'").message() == "node 'x': input 3 has shape [2, ?]");

  tf::status first;
  first.update(tf::errors::cancelled("first"));
  first.update(tf::errors::internal("second"));
  CHECK(first.code() == tf::status_code::cancelled);  // the first error wins

  CHECK(tf::errors::resource_exhausted("x").code() == tf::status_code::resource_exhausted);
  CHECK(tf::errors::deadline_exceeded("x").code() == tf::status_code::deadline_exceeded);
  CHECK(tf::to_string(tf::status_code::unavailable) == "unavailable");
  // Numbers format exactly, including the extremes.
  CHECK(tf::errors::internal(std::numeric_limits<std::int64_t>::min()).message() == "-9223372036854775808");
  CHECK(tf::errors::internal(std::numeric_limits<std::uint64_t>::max() / 2).message() == "9223372036854775807");
  CHECK(tf::errors::internal(0.5).message() == "0.5");
}

TEST_CASE("result holds a value or the status explaining its absence", "[core][status]") {
  tf::result<int> good = 4;
  REQUIRE(good.ok());
  CHECK(*good == 4);
  tf::result<int> bad = tf::errors::not_found("no such node 'x'");
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().code() == tf::status_code::not_found);
  CHECK(bad.value_or(7) == 7);
  // A result cannot be made from an ok status: that would be a result with neither value nor error.
  tf::result<int> confused = tf::status();
  CHECK(confused.status().code() == tf::status_code::internal);
  STATIC_REQUIRE(tf::result<tf::shape>(tf::shape{2}).ok());
}

TEST_CASE("dtypes map to C++ element types and back", "[core][dtype]") {
  STATIC_REQUIRE(tf::dtype_of<float> == tf::dtype::f32);
  STATIC_REQUIRE(tf::dtype_of<Eigen::half> == tf::dtype::f16);
  STATIC_REQUIRE(tf::dtype_of<Eigen::bfloat16> == tf::dtype::bf16);
  STATIC_REQUIRE(tf::dtype_of<bool> == tf::dtype::boolean);
  STATIC_REQUIRE(std::is_same_v<tf::element_t<tf::dtype::i64>, std::int64_t>);
  STATIC_REQUIRE(std::is_same_v<tf::element_t<tf::dtype::u8>, std::uint8_t>);
  STATIC_REQUIRE(tf::element_type<double>);
  STATIC_REQUIRE(!tf::element_type<long double>);
  STATIC_REQUIRE(!tf::element_type<std::int16_t>);
  // Every dtype round-trips through visit, and its size is its element type's.
  for (std::size_t i = 0; i < tf::num_dtypes; ++i) {
    const auto d = static_cast<tf::dtype>(i);
    tf::visit(d, [&](auto t) {
      using T = typename decltype(t)::type;
      CHECK(tf::dtype_of<T> == d);
      CHECK(tf::size_of(d) == sizeof(T));
    });
    tf::dtype parsed{};
    CHECK(tf::parse_dtype(tf::name_of(d), parsed));
    CHECK(parsed == d);
  }
  tf::dtype parsed{};
  CHECK(tf::parse_dtype("float32", parsed));
  CHECK(parsed == tf::dtype::f32);
  CHECK_FALSE(tf::parse_dtype("float128", parsed));
  CHECK_FALSE(tf::is_valid(static_cast<tf::dtype>(200)));
}

TEST_CASE("shapes: construction, checks and broadcasting", "[core][shape]") {
  constexpr tf::shape s{2, tf::dyn, 4};
  STATIC_REQUIRE(s.rank() == 3);
  STATIC_REQUIRE(!s.is_fully_defined());
  STATIC_REQUIRE(s.num_elements() == tf::dyn);
  STATIC_REQUIRE(tf::shape{2, 3, 4}.num_elements() == 24);
  STATIC_REQUIRE(tf::shape{}.num_elements() == 1);
  STATIC_REQUIRE(tf::shape{3, 0}.num_elements() == 0);
  STATIC_REQUIRE(tf::static_shape<tf::dyn, 784>::value == tf::shape{tf::dyn, 784});
  STATIC_REQUIRE(tf::matches(s, tf::shape{2, 9, 4}));
  STATIC_REQUIRE(!tf::matches(s, tf::shape{2, 9, 5}));
  STATIC_REQUIRE(!tf::matches(s, tf::shape{2, 9}));
  CHECK(s.to_string() == "[2, ?, 4]");
  CHECK(tf::shape{}.to_string() == "[]");

  STATIC_REQUIRE(*tf::broadcast(tf::shape{2, 1, 3}, tf::shape{4, 1}) == tf::shape{2, 4, 3});
  STATIC_REQUIRE(*tf::broadcast(tf::shape{}, tf::shape{5}) == tf::shape{5});
  STATIC_REQUIRE(*tf::broadcast(tf::shape{tf::dyn, 3}, tf::shape{1, 3}) == tf::shape{tf::dyn, 3});
  STATIC_REQUIRE(*tf::broadcast(tf::shape{tf::dyn}, tf::shape{4}) == tf::shape{4});
  STATIC_REQUIRE(*tf::broadcast(tf::shape{0}, tf::shape{1}) == tf::shape{0});
  const auto bad = tf::broadcast(tf::shape{2, 3}, tf::shape{4, 3});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "shapes [2, 3] and [4, 3] do not broadcast: dimension 0 is 2 in one and 4 in the other");

  STATIC_REQUIRE(*tf::normalize_axis(-1, 3) == 2);
  CHECK(tf::normalize_axis(3, 3).status().message() == "axis 3 is out of range for rank 3");

  const std::int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(tf::shape::from_span(nine).status().message() == "a shape has at most 8 dimensions, got 9");
  const std::int64_t negative[] = {2, -5};
  CHECK(tf::shape::from_span(negative).status().message() == "dimension -5 is negative");
  const std::int64_t fine[] = {2, tf::dyn};
  CHECK(*tf::shape::from_span(fine) == tf::shape{2, tf::dyn});
}

TEST_CASE("int_list is a structural list of integers", "[core][int_list]") {
  constexpr tf::int_list axes{0, -1};
  STATIC_REQUIRE(axes.size() == 2);
  STATIC_REQUIRE(axes[1] == -1);
  CHECK(axes.to_string() == "(0, -1)");
  STATIC_REQUIRE(tf::int_list{} == tf::int_list{});
}

TEST_CASE("tensors allocate, share and check their access", "[core][tensor]") {
  auto t = tf::tensor::from_values<float>({1, 2, 3, 4, 5, 6}, tf::shape{2, 3});
  REQUIRE(t.ok());
  CHECK(t->to_string() == "f32[2, 3]");
  CHECK(t->bytes() == 24);
  CHECK(reinterpret_cast<std::uintptr_t>(t->data()) % tf::default_alignment == 0);
  CHECK(t->use_count() == 1);

  // Copies share the buffer; reshaping shares it too.
  const tf::tensor copy = *t;
  CHECK(t->use_count() == 2);
  auto r = copy.reshaped(tf::shape{3, 2});
  REQUIRE(r.ok());
  CHECK(r->data() == t->data());
  CHECK(t->use_count() == 3);
  tf::test::require_error(copy.reshaped(tf::shape{4, 2}), tf::status_code::invalid_argument,
                          "cannot reshape a tensor of shape [2, 3] (6 elements) to [4, 2]");

  // Typed access checks the dtype, the rank and the index.
  auto m = t->eigen<float, 2>();
  REQUIRE(m.ok());
  CHECK((*m)(1, 2) == 6.0f);
  tf::test::require_error(t->eigen<float, 3>(), tf::status_code::invalid_argument,
                          "tensor of shape [2, 3] has rank 2, accessed with rank 3");
  tf::test::require_error(t->values<std::int32_t>(), tf::status_code::invalid_argument,
                          "tensor holds f32, accessed as i32");
  tf::test::require_error(t->at<float>(6), tf::status_code::out_of_range, "element 6 of a tensor of shape [2, 3]");
  CHECK(*t->at<float>(5) == 6.0f);

  // A clone owns new storage.
  auto c = t->clone();
  REQUIRE(c.ok());
  CHECK(c->data() != t->data());
  CHECK(std::memcmp(c->data(), t->data(), t->bytes()) == 0);

  // Borrowed memory is not owned.
  alignas(16) float raw[5] = {1, 2, 3, 4, 5};
  const auto b = tf::tensor::borrow(raw, tf::dtype::f32, tf::shape{2, 2});
  REQUIRE(b.ok());
  CHECK_FALSE(b->owns_buffer());
  CHECK(b->use_count() == 0);
  CHECK(*b->at<float>(3) == 4.0f);
  // Misaligned or missing memory is refused, not mapped.
  tf::test::require_error(tf::tensor::borrow(raw + 1, tf::dtype::f32, tf::shape{2, 2}), tf::status_code::invalid_argument,
                          "tensor::borrow: data is not 16-byte aligned");
  tf::test::require_error(tf::tensor::borrow(nullptr, tf::dtype::f32, tf::shape{2}), tf::status_code::invalid_argument,
                          "null data for shape [2]");
  CHECK(tf::tensor::borrow(nullptr, tf::dtype::f32, tf::shape{0, 3}).ok());

  // A part of a tensor's memory shares its buffer; a part of a view or of borrowed memory borrows.
  auto whole = tf::tensor::allocate(tf::dtype::u8, tf::shape{256});
  REQUIRE(whole.ok());
  auto part = whole->part(64, tf::dtype::f32, tf::shape{4, 4});
  REQUIRE(part.ok());
  CHECK(part->data() == static_cast<std::byte*>(whole->data()) + 64);
  CHECK(part->use_count() == 2);
  CHECK_FALSE(whole->view().part(0, tf::dtype::f32, tf::shape{2})->owns_buffer());
  tf::test::require_error(whole->part(200, tf::dtype::f32, tf::shape{16}), tf::status_code::invalid_argument,
                          "tensor::part: 64 bytes at offset 200 do not fit in a tensor of 256 bytes (u8[256])");
  tf::test::require_error(whole->part(300, tf::dtype::u8, tf::shape{0}), tf::status_code::invalid_argument,
                          "0 bytes at offset 300 do not fit");
  tf::test::require_error(whole->part(4, tf::dtype::f32, tf::shape{2}), tf::status_code::invalid_argument,
                          "tensor::part: offset 4 is not a multiple of 16");
  tf::test::require_error(whole->part(0, tf::dtype::f32, tf::shape{tf::dyn}), tf::status_code::invalid_argument,
                          "a dimension is unknown");

  // Bad allocations are statuses.
  tf::test::require_error(tf::tensor::allocate(tf::dtype::f32, tf::shape{tf::dyn, 3}), tf::status_code::invalid_argument,
                          "a dimension is unknown");
  tf::test::require_error(tf::tensor::allocate(tf::dtype::f32, tf::shape{1 << 30, 1 << 30, 1 << 30}),
                          tf::status_code::invalid_argument,
                          "cannot allocate a tensor: shape [1073741824, 1073741824, 1073741824] is too large: its "
                          "dimensions multiply past 1152921504606846975 elements");
  // Sizes are checked before anything multiplies them: these wrap around in 64 bits.
  tf::test::require_error(tf::tensor::allocate(tf::dtype::f32, tf::shape{4294967296, 4294967296}),
                          tf::status_code::invalid_argument, "is too large");
  tf::test::require_error(tf::tensor::allocate(tf::dtype::f32, tf::shape{0, 4294967296, 4294967296}),
                          tf::status_code::invalid_argument, "is too large");
  {
    const std::int64_t huge[] = {9223372036854775807};
    tf::test::require_error(tf::shape::from_span(huge), tf::status_code::invalid_argument,
                            "shape [9223372036854775807] is too large");
  }
  tf::test::require_error(tf::tensor::allocate(static_cast<tf::dtype>(77), tf::shape{1}),
                          tf::status_code::invalid_argument, "invalid dtype code 77");
  tf::test::require_error(tf::tensor::from_values<float>({1, 2, 3}, tf::shape{2, 2}), tf::status_code::invalid_argument,
                          "3 values do not fill shape [2, 2]");

  // Size-0 tensors are valid and hold nothing.
  auto empty = tf::tensor::allocate(tf::dtype::f64, tf::shape{0, 5});
  REQUIRE(empty.ok());
  CHECK(empty->num_elements() == 0);
  CHECK(empty->valid());
  CHECK_FALSE(tf::tensor{}.valid());

  auto s = tf::tensor::scalar<std::int64_t>(42);
  REQUIRE(s.ok());
  CHECK(s->rank() == 0);
  CHECK(*s->at<std::int64_t>(0) == 42);
  auto f = tf::tensor::filled<std::int32_t>(tf::shape{2, 2}, 7);
  REQUIRE(f.ok());
  CHECK(*f->at<std::int32_t>(3) == 7);
}

namespace {

// A counting allocator: tensors give their memory back to the allocator that made it.
struct counting_allocator {
  int live = 0;
  tf::result<void*> allocate(std::size_t bytes, std::size_t alignment) {
    ++live;
    return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{alignment});
  }
  void deallocate(void* p, std::size_t) {
    --live;
    ::operator delete(p, std::align_val_t{tf::default_alignment});
  }
};

struct exhausted_allocator {
  tf::result<void*> allocate(std::size_t bytes, std::size_t) {
    return tf::errors::resource_exhausted("exhausted_allocator: cannot allocate ", bytes, " bytes");
  }
  void deallocate(void*, std::size_t) {}
};

}  // namespace

TEST_CASE("tensors return their memory to the allocator that owns it", "[core][tensor]") {
  counting_allocator a;
  {
    auto t = tf::tensor::allocate(a, tf::dtype::i32, tf::shape{8});
    REQUIRE(t.ok());
    CHECK(a.live == 1);
    const tf::tensor copy = *t;
    CHECK(a.live == 1);
  }
  CHECK(a.live == 0);
  exhausted_allocator e;
  tf::test::require_error(tf::tensor::allocate(e, tf::dtype::f32, tf::shape{4}), tf::status_code::resource_exhausted,
                          "cannot allocate 16 bytes");
}
