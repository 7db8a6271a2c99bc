// Process-level exports: how many native threads are stuck in a library call that may
// never return (core/stuck-threads.h), and an exit that skips atexit handlers and static
// destructors (so the CUDA runtime is not torn down under such a thread).
#pragma once
#include <napi.h>

namespace afd::binding {
// stuckNativeThreads() -> number
Napi::Value StuckNativeThreads(const Napi::CallbackInfo& info);
// exitNow(code): flushes stdio and calls _exit(code); never returns.
Napi::Value ExitNow(const Napi::CallbackInfo& info);
}  // namespace afd::binding
