// Minimal test harness for the native test programs (compiled and run by
// native/src/testing/nativeTestProgram.ts for the tests beside each module; not part of
// any addon). TEST registers a case; CHECK fails it with the expression and line. main()
// runs every case (or those named on the command line) and prints "ok <name>" /
// "FAIL <name>: <why>".
#pragma once
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace afdtest {

struct Case {
  const char* name;
  std::function<void()> fn;
};

inline std::vector<Case>& registry() {
  static std::vector<Case> cases;  // test registry: filled before main, read-only after
  return cases;
}

struct Register {
  Register(const char* name, std::function<void()> fn) { registry().push_back({name, std::move(fn)}); }
};

inline int runAll(int argc, char** argv) {
  int failed = 0;
  for (const Case& c : registry()) {
    bool selected = argc <= 1;
    for (int i = 1; i < argc; ++i) selected = selected || std::strcmp(argv[i], c.name) == 0;
    if (!selected) continue;
    try {
      c.fn();
      std::printf("ok %s\n", c.name);
    } catch (const std::exception& e) {
      ++failed;
      std::printf("FAIL %s: %s\n", c.name, e.what());
    }
    std::fflush(stdout);
  }
  std::printf("%s\n", failed ? "FAILED" : "PASSED");
  return failed ? 1 : 0;
}

}  // namespace afdtest

#define AFD_TEST_CAT2(a, b) a##b
#define AFD_TEST_CAT(a, b) AFD_TEST_CAT2(a, b)
#define TEST(name)                                                                                 \
  static void name();                                                                              \
  static afdtest::Register AFD_TEST_CAT(reg_, name)(#name, name);                                 \
  static void name()

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::ostringstream os_;                                                                      \
      os_ << __FILE__ << ":" << __LINE__ << ": CHECK(" #cond ") failed";                           \
      throw std::runtime_error(os_.str());                                                         \
    }                                                                                              \
  } while (0)

#define CHECK_MSG(cond, msg)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::ostringstream os_;                                                                      \
      os_ << __FILE__ << ":" << __LINE__ << ": " << msg;                                           \
      throw std::runtime_error(os_.str());                                                         \
    }                                                                                              \
  } while (0)

// Runs expr, expects a CommError of `kind` whose message contains `needle`.
#define CHECK_THROWS(expr, expectedKind, needle)                                                           \
  do {                                                                                             \
    bool threw_ = false;                                                                           \
    try {                                                                                          \
      expr;                                                                                        \
    } catch (const afd::comm::CommError& e_) {                                                     \
      threw_ = true;                                                                               \
      CHECK_MSG(e_.kind() == (expectedKind), "wrong error kind for: " << e_.what());                      \
      CHECK_MSG(std::string(e_.what()).find(needle) != std::string::npos,                         \
                "message lacks \"" << (needle) << "\": " << e_.what());                            \
    }                                                                                              \
    CHECK_MSG(threw_, #expr " did not throw");                                                     \
  } while (0)
