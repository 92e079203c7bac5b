// octo::error: the one exception type octo's compiled parts throw for bad input, bad files and device
// failures. Its what() is one line naming the problem, fit to print as is before a nonzero exit.
#pragma once

#include <stdexcept>
#include <string>

namespace octo {

class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace octo
