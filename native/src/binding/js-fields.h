// Readers of one field of a JS object, each failure an afd::Error naming `where.name`
// (the conversions of the binding share them: js-convert.cc, step-convert.cc).
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

namespace afd::binding {

Napi::Value field(const Napi::Object& o, const char* where, const char* name);  // present
double num(const Napi::Object& o, const char* where, const char* name);          // a finite number
int64_t integer(const Napi::Object& o, const char* where, const char* name);     // a safe integer
bool boolean(const Napi::Object& o, const char* where, const char* name);
std::string str(const Napi::Object& o, const char* where, const char* name);
Napi::Array arr(const Napi::Object& o, const char* where, const char* name);
// Present and not undefined / null (optional fields).
bool given(const Napi::Object& o, const char* name);

}  // namespace afd::binding
