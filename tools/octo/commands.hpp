// commands: the `octo` tool's subcommands, each in its own file, each taking the arguments after its
// name and returning the process exit code (errors are octo::error, reported by main).
#pragma once

#include <span>
#include <string_view>

namespace octo::tool {

int convert_main(std::span<const std::string_view> args);
int inspect_main(std::span<const std::string_view> args);
int decompose_main(std::span<const std::string_view> args);

// True when `args` asks for help (-h / --help anywhere).
inline bool wants_help(std::span<const std::string_view> args) {
  for (auto a : args)
    if (a == "-h" || a == "--help") return true;
  return false;
}

}  // namespace octo::tool
