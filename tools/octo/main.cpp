// octo: the command-line tool installed with the library. `octo COMMAND ...`; each command lives in its
// own file and adds itself to the CLI11 app below (options, help, the callback that runs it).
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "octo/error.hpp"

int main(int argc, char** argv) {
  CLI::App app("octo: convert, inspect and decompose models for octo (docs/convert.md, docs/streaming.md).", "octo");
  app.set_help_flag("-h,--help", "this text; `octo COMMAND --help` describes each command");
  app.require_subcommand(1);
  app.get_formatter()->column_width(26);
  // Add new subcommands here (devices, ...).
  octo::tool::add_convert(app);
  octo::tool::add_inspect(app);
  octo::tool::add_decompose(app);
  const auto command = [&]() -> std::string {
    for (const auto* c : app.get_subcommands()) return c->get_name();
    return "";
  };
  const auto known = [&](const std::string& name) {
    for (const auto* c : app.get_subcommands({})) if (c->check_name(name)) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1])) {
    std::fprintf(stderr, "octo: unknown command '%s'\n%s", argv[1], app.help().c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // help on stdout, exit 0
  } catch (const CLI::ExtrasError&) {
    const std::string who = command().empty() ? "octo" : "octo " + command();
    std::fprintf(stderr, "%s: %s (see %s --help)\n", who.c_str(),
                 octo::leftover_arguments_text(app.remaining(true)).c_str(), who.c_str());  // true: the command's too
    return 2;
  } catch (const CLI::ParseError& e) {
    const std::string who = command().empty() ? "octo" : "octo " + command();
    std::fprintf(stderr, "%s: %s (see %s --help)\n", who.c_str(), e.what(), who.c_str());
    return 2;
  } catch (const octo::error& e) {
    std::fprintf(stderr, "octo %s: %s\n", command().c_str(), e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "octo %s: out of memory\n", command().c_str());
    return 1;
  } catch (const std::exception& e) {  // another library's text: one printable line all the same
    std::fprintf(stderr, "octo %s: unexpected error: %s\n", command().c_str(), octo::library_text(e.what()).c_str());
    return 1;
  }
  return 0;
}
