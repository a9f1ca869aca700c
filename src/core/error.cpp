#include "tg/error.h"

namespace tg {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::shape_mismatch: return "shape_mismatch";
    case ErrorCode::dtype_mismatch: return "dtype_mismatch";
    case ErrorCode::out_of_range: return "out_of_range";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::io_error: return "io_error";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::internal: return "internal";
  }
  return "?";
}

}  // namespace tg
