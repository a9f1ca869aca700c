// The CUDA backend's upload of a file's bytes while the file is read (backends/file_upload.h,
// docs/design/0008 "Loading copies the weights once"). No CUDA types here.
#pragma once
#include <cstddef>
#include <memory>
#include <span>

#include "backends/file_upload.h"
#include "tg/tensor_data.h"

namespace tg::cuda {

/// backends::start_file_upload for cuda:`device`: a device block of `bytes` bytes (the mirror of
/// the range) filled by the reading threads on a stream of its own, each piece straight from the
/// reader's pageable memory (the driver stages it). TG_UPLOAD_STREAMS=N spreads the pieces over N
/// streams (by reading thread); TG_STREAM_UPLOAD=register registers each piece's whole pages as
/// pinned and copies from them in place (unregistered once the upload is done): both measured
/// slower (docs/design/0011 "Session 23"). TG_STAGING_EARLY=1: a thread of the upload makes the
/// device's staging buffers during the read (session 22's default; since session 23 they are made
/// at the first copy that needs them). TG_PRELOAD_MODULES (module_preload.h): a thread of the
/// upload loads the precompiled kernels' CUDA modules after (1) or from the start of (`early`)
/// the read.
/// TG_STREAM_UPLOAD=pinned copies the pieces through 6 pinned slots of 2 MiB instead (made once
/// per process by that thread; pieces read before a slot is free wait in a backlog that the
/// thread uploads): it measured no faster on the H200 (docs/design/0011). finish() copies each
/// constant device-to-device from the mirror into one packed block (256-byte aligned each), makes
/// the device's stream wait for those copies, hands the copies to upload_cached and frees the
/// mirror once they are done. TG_STREAM_UPLOAD=0 switches it off (null; constants are then
/// uploaded at first use or by prefetch_constants, as before). Null for ranges under 1 MiB or
/// when the mirror cannot be allocated.
std::unique_ptr<backends::FileUpload> start_file_upload(int device, size_t bytes);

/// Hands device copies made elsewhere (file_upload.cpp) to upload_cached: `copies[i]` becomes the
/// cached copy of the host tensor `hosts[i]` on cuda:`device`. The caller has ordered the device's
/// own stream after the copies' writes. (runtime.cpp)
void adopt_uploads(std::span<const TensorData> hosts, std::span<const TensorData> copies, int device);

/// Creates cuda:`device`'s pinned staging buffers of large host<->device copies now if they do not
/// exist yet (else at the first such copy). (runtime.cpp)
void warm_staging(int device);

}  // namespace tg::cuda
