// Reading the optional fields of a JS options object in the addon's bench and check
// entry points, and turning a C++ exception into a JS one. Each reader returns the
// fallback when the field is absent or undefined and throws, naming the caller and the
// field, when it has the wrong type.
#pragma once
#include <napi.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace afd::binding {

// Runs fn; a std::exception becomes a JS Error with its message.
template <typename Fn>
Napi::Value guarded(const Napi::CallbackInfo& info, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    Napi::Error::New(info.Env(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

// Argument i when it is an object, else an empty object (all options take their defaults).
inline Napi::Object optionsArg(const Napi::CallbackInfo& info, size_t i) {
  return info.Length() > i && info[i].IsObject() ? info[i].As<Napi::Object>() : Napi::Object::New(info.Env());
}

class JsOptions {
 public:
  JsOptions(Napi::Object o, std::string caller) : o_(std::move(o)), caller_(std::move(caller)) {}

  double number(const char* name, double fallback) const {
    if (absent(name)) return fallback;
    const Napi::Value v = o_.Get(name);
    if (!v.IsNumber()) fail(name, "a number");
    return v.As<Napi::Number>().DoubleValue();
  }
  int integer(const char* name, int fallback) const { return static_cast<int>(number(name, fallback)); }
  std::vector<int> integers(const char* name, std::vector<int> fallback) const {
    if (absent(name)) return fallback;
    if (!o_.Get(name).IsArray()) fail(name, "an array of numbers");
    const Napi::Array a = o_.Get(name).As<Napi::Array>();
    std::vector<int> out;
    for (uint32_t i = 0; i < a.Length(); ++i) {
      if (!a.Get(i).IsNumber()) fail(name, "an array of numbers");
      out.push_back(a.Get(i).As<Napi::Number>().Int32Value());
    }
    return out;
  }
  std::vector<std::string> strings(const char* name, std::vector<std::string> fallback) const {
    if (absent(name)) return fallback;
    if (!o_.Get(name).IsArray()) fail(name, "an array of strings");
    const Napi::Array a = o_.Get(name).As<Napi::Array>();
    std::vector<std::string> out;
    for (uint32_t i = 0; i < a.Length(); ++i) {
      if (!a.Get(i).IsString()) fail(name, "an array of strings");
      out.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    }
    return out;
  }
  std::string string(const char* name, const std::string& fallback) const {
    if (absent(name)) return fallback;
    if (!o_.Get(name).IsString()) fail(name, "a string");
    return o_.Get(name).As<Napi::String>().Utf8Value();
  }
  bool boolean(const char* name, bool fallback) const {
    if (absent(name)) return fallback;
    if (!o_.Get(name).IsBoolean()) fail(name, "a boolean");
    return o_.Get(name).As<Napi::Boolean>().Value();
  }

 private:
  bool absent(const char* name) const { return !o_.Has(name) || o_.Get(name).IsUndefined(); }
  [[noreturn]] void fail(const char* name, const char* what) const {
    throw std::invalid_argument(caller_ + ": option " + name + " must be " + what);
  }
  Napi::Object o_;
  std::string caller_;
};

}  // namespace afd::binding
