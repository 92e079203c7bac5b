// commands: the `octo` tool's subcommands, each in its own file. Each adds itself to the tool's CLI11
// app: its options, its help text and the callback that runs it (errors are octo::error, reported by
// main).
#pragma once

#include <CLI/CLI.hpp>

namespace octo::tool {

void add_convert(CLI::App& app);
void add_inspect(CLI::App& app);
void add_decompose(CLI::App& app);

}  // namespace octo::tool
