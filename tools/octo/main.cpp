// octo: the command-line tool installed with the library. `octo COMMAND ...`; each command lives in its
// own file and is listed in the table below.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "octo/error.hpp"

namespace {

struct command {
  const char* name;
  const char* summary;
  int (*run)(std::span<const std::string_view>);
};

// Add new subcommands here (decompose, devices, ...).
constexpr command commands[] = {
    {"convert", "convert a Hugging Face checkpoint folder (safetensors) to GGUF", octo::tool::convert_main},
    {"inspect", "print a GGUF file's metadata and tensor table", octo::tool::inspect_main},
    {"decompose", "split a GGUF into per-layer files + manifest for layer streaming", octo::tool::decompose_main},
};

void usage(std::FILE* to) {
  std::fprintf(to, "usage: octo COMMAND [ARGS...]\n\ncommands:\n");
  for (const auto& c : commands) std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(to, "\n`octo COMMAND --help` describes each.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    usage(stderr);
    return 2;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    usage(stdout);
    return 0;
  }
  for (const auto& c : commands) {
    if (args[0] != c.name) continue;
    try {
      return c.run(std::span(args).subspan(1));
    } catch (const octo::error& e) {
      std::fprintf(stderr, "octo %s: %s\n", c.name, e.what());
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "octo %s: out of memory\n", c.name);
      return 1;
    } catch (const std::exception& e) {  // another library's text: one printable line all the same
      std::fprintf(stderr, "octo %s: unexpected error: %s\n", c.name, octo::library_text(e.what()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "octo: unknown command '%s'\n", std::string(args[0]).c_str());
  usage(stderr);
  return 2;
}
