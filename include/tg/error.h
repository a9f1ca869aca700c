// tg::Error: the one exception type TensorGraph raises for anything a user can get wrong.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

#include "tg/export.h"

namespace tg {

/// What kind of mistake an Error reports.
enum class ErrorCode {
  invalid_argument,  ///< a bad attribute or argument value
  shape_mismatch,    ///< shapes that do not fit together
  dtype_mismatch,    ///< element types that do not fit together or are not supported by an op
  out_of_range,      ///< an index outside its dimension (gather, scatter, ...)
  not_found,         ///< a missing feed, file or name
  unsupported,       ///< valid but not implemented (op on a backend, dtype on a kernel)
  io_error,          ///< reading or writing a file failed
  out_of_memory,     ///< an allocation failed
  internal,          ///< a broken invariant inside TensorGraph (a bug: please report it)
};

/// Exception raised by TensorGraph. Messages name the op and the shapes, e.g.
/// "[conv2d] input channels 3 do not match weights' 4 (input [8,32,32,3], weights [3,3,4,16], hwio)".
class TG_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// Name of an error code ("shape_mismatch", ...).
TG_API std::string_view error_code_name(ErrorCode code);

}  // namespace tg
