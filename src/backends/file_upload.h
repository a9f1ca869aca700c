// A loaded file's bytes uploaded to a device while the file is read (Executable::load of a .tgx,
// docs/design/0008 "Loading copies the weights once"): the part of the backend contract the
// runtime's file reader (src/runtime/tgx_file.cpp) and loader (saved_executable.cpp) use. The
// reading threads hand each piece of the graph section (where the constants are) to the device
// as soon as it is read, so that the upload overlaps the read instead of following it; once the
// file has passed every check, the constants' device copies are cut out of the uploaded bytes on
// the device. start_file_upload() finds a device's (registry.cpp; CUDA only).
#pragma once
#include <cstddef>
#include <memory>
#include <span>

#include "tg/device.h"
#include "tg/tensor_data.h"

namespace tg::backends {

/// The upload of one byte range of a file (a section's payload) of `bytes` bytes.
class FileUpload {
 public:
  virtual ~FileUpload() = default;
  /// Queues the upload of bytes [offset, offset + n) of the range (offsets from its start), which
  /// the caller has read into `host`; `host` may be reused when this returns. Called by several
  /// reading threads at once, each byte once. Never throws: a failure marks the upload failed
  /// (finish then returns null and the constants are uploaded as without this).
  virtual void piece(size_t offset, const void* host, size_t n) noexcept = 0;
  /// Every byte went through piece() (the read is over).
  virtual void pieces_done() noexcept = 0;
  /// After every byte went through piece() and the file passed its checks: gives each host
  /// tensor `constants[i]`, whose bytes are those at `offsets[i]` of the range, a device copy
  /// made from the uploaded bytes, where the backend's constant uploads find it (CUDA:
  /// upload_cached), ordered before any work queued later on the device's own stream. Returns a
  /// handle that the loaded executable holds (its release waits for the upload's background
  /// work), or null when the upload failed or was not used (the constants then upload as before).
  virtual std::shared_ptr<void> finish(std::span<const TensorData> constants, std::span<const size_t> offsets) = 0;
};

/// The upload of a `bytes`-byte range to `device`, or null: not a device that takes one (the CPU),
/// a range under 1 MiB, switched off (TG_STREAM_UPLOAD=0), or no device memory for it. Never
/// throws.
std::unique_ptr<FileUpload> start_file_upload(Device device, size_t bytes);

}  // namespace tg::backends
