// ONNX TensorProto <-> TensorData, ONNX element types, external data.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "frontends/onnx/proto.h"
#include "tg/tensor_data.h"

namespace tg::onnx {

/// The TensorGraph dtype of ONNX element type `t` (TensorProto.DataType), or nullopt when
/// TensorGraph has none (uint16, int16, uint32, uint64, string, complex, float8/4, int4, ...).
std::optional<DType> dtype_from_onnx(int32_t t);
/// ONNX element type of `dtype`.
int32_t onnx_type_of(DType dtype);
/// "float", "uint16", "float8e4m3fn", ... (ONNX's names, lower case); "type <n>" when unknown.
std::string onnx_type_name(int32_t t);
/// dtype_from_onnx or tg::Error(unsupported) "data type uint16 is not supported".
DType require_dtype(int32_t t);

/// The value of `proto` (raw_data, the typed *_data fields, or external data read from
/// `external_dir`). Raises tg::Error without a prefix (callers add which tensor it is):
/// unsupported for a data type TensorGraph lacks or segmented tensors, invalid_argument for data
/// whose size does not match the dims or negative dims, not_found / io_error for external data
/// files that are missing or too short, invalid_argument for external paths outside
/// `external_dir`.
TensorData tensor_from_proto(const pb::TensorProto& proto, const std::filesystem::path& external_dir);
/// A TensorProto holding `value` in raw_data.
pb::TensorProto tensor_to_proto(const TensorData& value, const std::string& name = "");

}  // namespace tg::onnx
