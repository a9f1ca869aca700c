// The safetensors file format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets"}},
// then the raw little-endian tensor bytes. Dtype names: BOOL, I8, U8, I32, I64, F16, BF16, F32, F64.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tg/tensor_data.h"

namespace tg::safetensors {

/// Writes `tensors` (host tensors) to `path`. Raises tg::Error(io_error) when writing fails.
void write(const std::string& path, const std::vector<std::pair<std::string, TensorData>>& tensors);
/// The bytes write() writes (saved executables embed them).
std::string serialize(const std::vector<std::pair<std::string, TensorData>>& tensors);
/// Reads every tensor of `path`, in file order. Raises tg::Error(io_error) naming the file for an
/// unreadable, truncated or malformed file (bad header, unknown dtype, offsets outside the data
/// or not matching the shape).
std::vector<std::pair<std::string, TensorData>> read(const std::string& path);
/// Parses the bytes of a safetensors file (`path` names it in messages), as read. A shape whose
/// size differs from its data_offsets is refused before its tensor is allocated.
std::vector<std::pair<std::string, TensorData>> parse(std::span<const uint8_t> bytes, const std::string& path);
/// "F32" for DType::f32, ...
std::string dtype_code(DType t);

}  // namespace tg::safetensors
