#include "backends/backend.h"

#include "core/error_util.h"

namespace tg::backends {

const char* KernelContext::op_name() const { return ir::op_name(node.kind).data(); }

bool runs_in_runtime(ir::OpKind kind) {
  using K = ir::OpKind;
  return kind == K::placeholder || kind == K::variable || kind == K::read_variable || kind == K::assign_variable ||
         kind == K::if_else || kind == K::for_loop || kind == K::while_loop;
}

bool Backend::supports(const ir::Node& node) const {
  return runs_in_runtime(node.kind) || kernels().get(node.kind) != nullptr;
}

std::unique_ptr<RecordedRun> Backend::record(const std::function<void(void*)>&) const {
  fail(ErrorCode::unsupported, device().to_string(), "runs cannot be recorded on this device");
}

std::shared_ptr<DeviceErrorRecord> Backend::allocate_error_mailbox() const {
  return std::make_shared<DeviceErrorRecord>();
}

void Backend::post_error(const DeviceErrorRecord* record, DeviceErrorRecord* mailbox, void*) const {
  if (record && mailbox) *mailbox = *record;
}

void Backend::replay(const RecordedRun&, void*) const {
  fail(ErrorCode::unsupported, device().to_string(), "runs cannot be replayed on this device");
}

}  // namespace tg::backends
