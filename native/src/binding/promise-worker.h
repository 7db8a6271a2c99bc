// The engine binding's async pattern: a Napi::AsyncWorker that runs a function on a libuv
// worker thread and settles a Promise (engine-binding.cc, engine-transfer-binding.cc).
#pragma once
#include <napi.h>

#include <exception>
#include <functional>
#include <string>

namespace afd::binding {

// Runs `work` on a libuv worker thread; resolves with `done(env)` or rejects with the
// afd::Error message.
class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> done,
                std::function<void()> failed = nullptr)
      : Napi::AsyncWorker(env, "afd:engine"), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)),
        done_(std::move(done)), failed_(std::move(failed)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      work_();
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    try {
      deferred_.Resolve(done_(Env()));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    } catch (const std::exception& e) {
      deferred_.Reject(Napi::Error::New(Env(), e.what()).Value());
    }
  }
  void OnError(const Napi::Error& e) override {
    if (failed_) failed_();
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> done_;
  std::function<void()> failed_;
};

inline Napi::Value rejected(Napi::Env env, const std::string& message) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Reject(Napi::Error::New(env, message).Value());
  return d.Promise();
}

}  // namespace afd::binding
