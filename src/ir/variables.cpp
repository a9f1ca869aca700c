#include "ir/variables.h"

#include "core/device_runtime.h"
#include "core/error_util.h"

namespace tg::ir {

namespace {
void copy_into(TensorData& dst, const TensorData& src) {
  core::copy_bytes(dst.storage_ptr(), dst.device(), src.storage_ptr(), src.device(), src.nbytes());
}
}  // namespace

int VariableStore::add(std::string name, TensorData value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name.empty()) fail(ErrorCode::invalid_argument, "variable", "a variable needs a name");
  for (const Slot& s : slots_) {
    if (s.name == name) fail(ErrorCode::invalid_argument, "variable", "a variable named '{}' already exists", name);
  }
  Slot s;
  s.name = std::move(name);
  s.type = value.type();
  TensorData host = value.device().is_cpu() ? std::move(value) : value.to(Device::cpu());
  s.buffers.push_back(Buffer{Device::cpu(), std::move(host), s.version});
  slots_.push_back(std::move(s));
  return static_cast<int>(slots_.size()) - 1;
}

TensorData VariableStore::value(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot& s = slots_.at(static_cast<size_t>(slot));
  return s.buffers[s.latest].data.clone();
}

TensorType VariableStore::type(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.at(static_cast<size_t>(slot)).type;
}

std::string VariableStore::name(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.at(static_cast<size_t>(slot)).name;
}

int VariableStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(slots_.size());
}

int VariableStore::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

VariableStore::Buffer* VariableStore::find_buffer(Slot& s, Device device) {
  for (Buffer& b : s.buffers) {
    if (b.device == device) return &b;
  }
  return nullptr;
}

// Every buffer of `s` but buffers[except] is now out of date: their devices' epochs grow.
void VariableStore::mark_stale(Slot& s, size_t except) {
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    if (i == except) continue;
    size_t key = device_key(s.buffers[i].device);
    if (key >= stale_epochs_.size()) stale_epochs_.resize(key + 1, 0);
    stale_epochs_[key]++;
  }
}

void VariableStore::commit(const std::vector<int>& slots, const std::vector<TensorData>& values) {
  TG_CHECK_INTERNAL(slots.size() == values.size(), "commit: one value per slot");
  std::unique_lock<std::shared_mutex> run_lock(run_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& s = slots_.at(static_cast<size_t>(slots[i]));
    const TensorData& v = values[i];
    if (v.type() != s.type) {
      fail(ErrorCode::shape_mismatch, "variable", "'{}' is {}, given {}", s.name, s.type.to_string(),
           v.type().to_string());
    }
    // Into the buffer on the value's device when there is one, else into the host buffer.
    Buffer* b = find_buffer(s, v.device());
    if (b == nullptr) b = &s.buffers[0];
    copy_into(b->data, v);
    b->version = ++s.version;
    s.latest = static_cast<size_t>(b - s.buffers.data());
    mark_stale(s, s.latest);
  }
}

TensorData VariableStore::buffer(int slot, Device device) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_.at(static_cast<size_t>(slot));
  Buffer* b = find_buffer(s, device);
  if (b == nullptr) {
    s.buffers.push_back(Buffer{device, TensorData(s.type.shape, s.type.dtype, device), 0});
    b = &s.buffers.back();
  }
  if (b->version != s.version) {
    copy_into(b->data, s.buffers[s.latest].data);
    b->version = s.version;
  }
  return b->data;
}

void VariableStore::written(std::span<const int> slots, Device device) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int slot : slots) {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    Buffer* b = find_buffer(s, device);
    TG_CHECK_INTERNAL(b != nullptr, "written: the variable has no buffer on that device");
    b->version = ++s.version;
    s.latest = static_cast<size_t>(b - s.buffers.data());
    if (s.buffers.size() > 1) mark_stale(s, s.latest);
  }
}

uint64_t VariableStore::stale_epoch(Device device) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t key = device_key(device);
  return key < stale_epochs_.size() ? stale_epochs_[key] : 0;
}

}  // namespace tg::ir
