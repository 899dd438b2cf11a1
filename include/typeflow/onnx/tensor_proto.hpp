// SPDX-License-Identifier: Apache-2.0
// ONNX tensors to typeflow tensors: an ONNX TensorProto (an initializer, a Constant's value, a test's
// input_0.pb) becomes a host tensor, checked: its dtype must be one typeflow has, its dims a shape,
// its data exactly dims' element count (raw little-endian bytes or the typed fields). Anything else is
// a status naming the tensor and what was wrong; external data is unimplemented.
//   tf::onnx_dtype(elem_type)            ONNX TensorProto::DataType -> dtype
//   tf::from_onnx_tensor(proto, what)    TensorProto -> tensor
//   tf::load_onnx_tensor(path)           a serialized TensorProto file -> tensor
// Part of typeflow-onnx: needs Debian's libonnx-dev and libprotobuf-dev (pkg-config typeflow-onnx).
#pragma once

#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#ifndef ONNX_ML
#define ONNX_ML 1
#endif

#include <typeflow/fwd.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/status.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/detail/read_file.hpp>

namespace typeflow {

// The dtype of an ONNX element type (TensorProto::DataType); unimplemented for those typeflow lacks
// (string, the 16-, 32- and 64-bit unsigned and 16-bit signed integers, complex numbers).
inline result<dtype> onnx_dtype(int elem_type) {
  using P = ::onnx::TensorProto;
  switch (elem_type) {
    case P::FLOAT: return dtype::f32;
    case P::DOUBLE: return dtype::f64;
    case P::FLOAT16: return dtype::f16;
    case P::BFLOAT16: return dtype::bf16;
    case P::INT8: return dtype::i8;
    case P::UINT8: return dtype::u8;
    case P::INT32: return dtype::i32;
    case P::INT64: return dtype::i64;
    case P::BOOL: return dtype::boolean;
    default: break;
  }
  const std::string name = P::DataType_IsValid(elem_type) ? P::DataType_Name(static_cast<P::DataType>(elem_type))
                                                          : detail::cat("code ", elem_type).str();
  if (elem_type == P::UNDEFINED || !P::DataType_IsValid(elem_type))
    return errors::invalid_argument("element type ", name, " is not an ONNX data type");
  return errors::unimplemented("element type ", name, " has no typeflow dtype (typeflow has f16, bf16, f32, f64, i8, u8, "
                               "i32, i64 and bool)");
}

// The ONNX element type of a dtype (the inverse of onnx_dtype).
constexpr int onnx_elem_type(dtype d) {
  using P = ::onnx::TensorProto;
  switch (d) {
    case dtype::f32: return P::FLOAT;
    case dtype::f64: return P::DOUBLE;
    case dtype::f16: return P::FLOAT16;
    case dtype::bf16: return P::BFLOAT16;
    case dtype::i8: return P::INT8;
    case dtype::u8: return P::UINT8;
    case dtype::i32: return P::INT32;
    case dtype::i64: return P::INT64;
    case dtype::boolean: return P::BOOL;
  }
  return P::UNDEFINED;
}

namespace detail {

// Copies `count` elements of a typed repeated field into t, converting each to T (f16 and bf16
// travel as their bits in int32_data).
template <class T, class Field>
void copy_field(const Field& field, tensor& t) {
  T* out = static_cast<T*>(t.data());
  for (int i = 0; i < field.size(); ++i) {
    if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
      out[i] = Eigen::numext::bit_cast<T>(static_cast<std::uint16_t>(field.Get(i)));
    } else {
      out[i] = static_cast<T>(field.Get(i));
    }
  }
}

}  // namespace detail

// The tensor a TensorProto holds; `what` names it in messages ("initializer 'w'").
inline result<tensor> from_onnx_tensor(const ::onnx::TensorProto& p, std::string_view what) {
  const auto fail = [&](status st) { return st.with_context(what); };
  auto type = onnx_dtype(p.data_type());
  if (!type.ok()) return fail(type.status());
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL || p.external_data_size() > 0)
    return fail(errors::unimplemented("its data is in an external file; typeflow reads only tensors stored in the model"));
  if (p.has_segment()) return fail(errors::unimplemented("segmented tensors are not supported"));
  if (p.dims_size() > static_cast<int>(max_rank))
    return fail(errors::invalid_argument("rank ", p.dims_size(), " is more than typeflow's ", max_rank));
  std::vector<std::int64_t> dims(p.dims().begin(), p.dims().end());
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0) return fail(errors::invalid_argument("dimension ", i, " is negative (", dims[i], ")"));
  auto s = shape::from_span(dims);
  if (!s.ok()) return fail(s.status());
  // The data must be there before anything is allocated: dims alone may ask for any size.
  const auto count = static_cast<std::size_t>(s->num_elements());
  using P = ::onnx::TensorProto;
  if (p.has_raw_data()) {
    if (p.raw_data().size() / size_of(*type) != count || p.raw_data().size() % size_of(*type) != 0)
      return fail(errors::invalid_argument("raw_data holds ", p.raw_data().size(), " bytes; shape ", *s, " of ", *type,
                                           " needs ", count * size_of(*type)));
  } else {
    int given = 0;
    const char* field = "";
    switch (p.data_type()) {
      case P::FLOAT: given = p.float_data_size(); field = "float_data"; break;
      case P::DOUBLE: given = p.double_data_size(); field = "double_data"; break;
      case P::INT64: given = p.int64_data_size(); field = "int64_data"; break;
      default: given = p.int32_data_size(); field = "int32_data"; break;
    }
    if (static_cast<std::size_t>(given) != count)
      return fail(errors::invalid_argument(field, " holds ", given, " values; shape ", *s, " has ", count, " elements"));
  }
  auto t = tensor::allocate(*type, *s);
  if (!t.ok()) return fail(t.status());
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    if (!raw.empty()) std::memcpy(t->data(), raw.data(), raw.size());  // ONNX and this machine are little-endian
    if (*type == dtype::boolean)
      for (std::size_t i = 0; i < count; ++i) static_cast<unsigned char*>(t->data())[i] = raw[i] != 0;
    return std::move(*t);
  }
  switch (*type) {
    case dtype::f32: detail::copy_field<float>(p.float_data(), *t); break;
    case dtype::f64: detail::copy_field<double>(p.double_data(), *t); break;
    case dtype::i64: detail::copy_field<std::int64_t>(p.int64_data(), *t); break;
    case dtype::f16: detail::copy_field<Eigen::half>(p.int32_data(), *t); break;
    case dtype::bf16: detail::copy_field<Eigen::bfloat16>(p.int32_data(), *t); break;
    case dtype::i8: detail::copy_field<std::int8_t>(p.int32_data(), *t); break;
    case dtype::u8: detail::copy_field<std::uint8_t>(p.int32_data(), *t); break;
    case dtype::i32: detail::copy_field<std::int32_t>(p.int32_data(), *t); break;
    case dtype::boolean: {
      auto* out = static_cast<bool*>(t->data());
      for (std::size_t i = 0; i < count; ++i) out[i] = p.int32_data(static_cast<int>(i)) != 0;
      break;
    }
  }
  return std::move(*t);
}

// The tensor of a file holding one serialized TensorProto (ONNX's test data: input_0.pb).
inline result<tensor> load_onnx_tensor(const std::string& path, std::size_t max_bytes = std::size_t{2} << 30) {
  auto bytes = detail::read_regular_file(path, "ONNX tensor file", max_bytes, "max_bytes", "give the path of a TensorProto file");
  if (!bytes.ok()) return bytes.status();
  ::onnx::TensorProto p;
  if (!p.ParseFromString(*bytes))
    return errors::invalid_argument("ONNX tensor file '", path, "' is not a serialized TensorProto");
  return from_onnx_tensor(p, detail::cat("ONNX tensor file '", path, "'").view());
}

}  // namespace typeflow
