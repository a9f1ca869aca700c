// .npy files (NumPy format 1.0-3.0, https://numpy.org/devdocs/reference/generated/numpy.lib.format.html)
// for `tg run`: little-endian, C order; dtypes bool, int8, uint8, int32, int64, float16, float32,
// float64 (bfloat16 is written as float32, NumPy having none).
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "tg/tensor_data.h"

namespace tg::cli {

/// Reads the .npy file `path` as a host tensor. Raises tg::Error(not_found) when it cannot be
/// opened, otherwise as parse_npy.
TensorData read_npy(const std::filesystem::path& path);
/// Parses the bytes of a .npy file (`file` names it in messages). Raises tg::Error "[tg run]
/// <file>: ..." with io_error for a file that is not .npy, a truncated or malformed header, a
/// shape that is not a list of sizes, or data bytes that do not match the shape (checked before
/// anything is allocated), and unsupported for other dtypes or Fortran order.
TensorData parse_npy(std::span<const uint8_t> bytes, const std::string& file);
/// Writes `t` (any device; copied to the host) as a version 1.0 .npy file. tg::Error(io_error)
/// when `path` cannot be written.
void write_npy(const std::filesystem::path& path, TensorData t);

}  // namespace tg::cli
