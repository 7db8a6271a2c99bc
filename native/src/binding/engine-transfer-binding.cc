// Engine.exportKvBlocks / importKvBlocks / exportStateSlot / importStateSlot: the KV and
// recurrent-state transfer of prefill / decode disaggregation (runtime/engine/kv-transfer.h
// has the byte layout). Each runs on a worker thread and returns a Promise; the inputs are
// copied first, so the caller may reuse its arrays at once.
#include <cstring>
#include <memory>
#include <vector>

#include "binding/engine-binding.h"
#include "binding/promise-worker.h"

namespace afd::binding {
namespace {

std::vector<int32_t> blockIdsArg(const Napi::CallbackInfo& info, const char* usage) {
  AFD_CHECK(info.Length() >= 1 && info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_int32_array,
            usage << ": blockIds must be an Int32Array");
  auto ids = info[0].As<Napi::Int32Array>();
  return std::vector<int32_t>(ids.Data(), ids.Data() + ids.ElementLength());
}

std::vector<uint8_t> bytesArg(const Napi::CallbackInfo& info, size_t index, const char* usage) {
  AFD_CHECK(info.Length() > index && info[index].IsTypedArray() &&
                info[index].As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array,
            usage << ": data must be a Uint8Array (or Buffer)");
  auto data = info[index].As<Napi::Uint8Array>();
  return std::vector<uint8_t>(data.Data(), data.Data() + data.ByteLength());
}

int slotArg(const Napi::CallbackInfo& info, const char* usage) {
  AFD_CHECK(info.Length() >= 1 && info[0].IsNumber(), usage << ": slot must be a number");
  const double slot = info[0].As<Napi::Number>().DoubleValue();
  AFD_CHECK(slot == static_cast<double>(static_cast<int>(slot)), usage << ": slot must be an integer (got " << slot << ")");
  return static_cast<int>(slot);
}

Napi::Value toUint8Array(Napi::Env env, const std::vector<uint8_t>& bytes) {
  auto out = Napi::Uint8Array::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(out.Data(), bytes.data(), bytes.size());
  return out;
}

// Queues `work` (which fills *out when it exports) and returns its promise.
Napi::Value queue(Napi::Env env, std::function<void()> work, std::shared_ptr<std::vector<uint8_t>> out) {
  auto* worker = new PromiseWorker(env, std::move(work), [out](Napi::Env e) -> Napi::Value {
    return out ? toUint8Array(e, *out) : e.Undefined();
  });
  worker->Queue();
  return worker->promise();
}

}  // namespace

Napi::Value EngineWrap::ExportKvBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  std::vector<int32_t> ids;
  try {
    engine = requireEngine("exportKvBlocks");
    ids = blockIdsArg(info, "Engine.exportKvBlocks(blockIds)");
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  auto out = std::make_shared<std::vector<uint8_t>>();
  return queue(env, [engine, ids = std::move(ids), out] { *out = engine->exportKvBlocks(ids); }, out);
}

Napi::Value EngineWrap::ImportKvBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  auto ids = std::make_shared<std::vector<int32_t>>();
  auto data = std::make_shared<std::vector<uint8_t>>();
  try {
    engine = requireEngine("importKvBlocks");
    *ids = blockIdsArg(info, "Engine.importKvBlocks(blockIds, data)");
    *data = bytesArg(info, 1, "Engine.importKvBlocks(blockIds, data)");
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  return queue(env, [engine, ids, data] { engine->importKvBlocks(*ids, data->data(), data->size()); }, nullptr);
}

Napi::Value EngineWrap::ExportStateSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  int slot = 0;
  try {
    engine = requireEngine("exportStateSlot");
    slot = slotArg(info, "Engine.exportStateSlot(slot)");
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  auto out = std::make_shared<std::vector<uint8_t>>();
  return queue(env, [engine, slot, out] { *out = engine->exportStateSlot(slot); }, out);
}

Napi::Value EngineWrap::ImportStateSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Engine> engine;
  int slot = 0;
  auto data = std::make_shared<std::vector<uint8_t>>();
  try {
    engine = requireEngine("importStateSlot");
    slot = slotArg(info, "Engine.importStateSlot(slot, data)");
    *data = bytesArg(info, 1, "Engine.importStateSlot(slot, data)");
  } catch (const std::exception& e) {
    return rejected(env, e.what());
  }
  return queue(env, [engine, slot, data] { engine->importStateSlot(slot, data->data(), data->size()); }, nullptr);
}

}  // namespace afd::binding
