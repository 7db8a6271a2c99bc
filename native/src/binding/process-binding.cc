#include "binding/process-binding.h"

#include <unistd.h>

#include <cstdio>

#include "core/stuck-threads.h"

namespace afd::binding {

Napi::Value StuckNativeThreads(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), stuckNativeThreads().load());
}

Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(info.Env(), "exitNow(code): code must be a number (the process exit status)")
        .ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  const int code = info[0].As<Napi::Number>().Int32Value();
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace afd::binding
