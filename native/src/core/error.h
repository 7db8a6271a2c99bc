// Errors are exceptions carrying an actionable message (what failed, why, what to do);
// the binding turns them into JS errors. AFD_CHECK builds the message with <<.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace afd {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace afd

#define AFD_CHECK(cond, msg)                 \
  do {                                       \
    if (!(cond)) {                           \
      std::ostringstream afd_check_os_;      \
      afd_check_os_ << msg;                  \
      throw ::afd::Error(afd_check_os_.str()); \
    }                                        \
  } while (0)

#define AFD_FAIL(msg) AFD_CHECK(false, msg)
