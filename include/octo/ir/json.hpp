// The IR's on-disk JSON format (docs/ir.md §6): name-encoded enums, a stable round trip, forward-compatible
// loading, and bad input reported as an error value. The JSON library stays inside octo::core.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "octo/ir/program.hpp"

namespace octo::ir {

/// A program read from JSON, or one line saying why not. Loading never throws for bad input.
/// @code
///   auto r = octo::ir::from_json(text);
///   if (!r) { std::cerr << r.error << "\n"; return 1; }
///   const octo::ir::program& p = *r.value;
/// @endcode
struct json_result {
  std::optional<program> value;
  std::string error;  // empty when value is set; otherwise e.g. `tasks[3].op: unknown opcode "GEMV"`

  explicit operator bool() const { return value.has_value(); }
};

/// The program as JSON text (docs/ir.md §6), `indent` spaces per level (negative: one line). Real numbers
/// are written in their shortest exact form with a fractional part ("1.0", "1e-06"), so doubles and the
/// int/real distinction of params survive the round trip; from_json(to_json(p)) == p.
/// Throws octo::error when the program holds something JSON cannot carry: a non-finite real, text that
/// is not UTF-8, a meta entry whose raw_json is not JSON, or a key twice in one object (meta, a task's
/// params, buffer_to_page, an explicit sm map, one archetype's tiling).
/// Two normalisations, so equality after a round trip needs: config.tiling lists each archetype's keys
/// together (JSON groups them), and raw_json meta values are compact (they come back as nlohmann dumps
/// them). The text round trip to_json(from_json(to_json(p))) == to_json(p) holds for every program.
std::string to_json(const program& p, int indent = 2);

/// Parses a program. Enums by name; unknown fields of "target" and "config" are dropped (forward
/// compatibility); a different major ir_version is rejected; a missing or ill-typed field gives an error
/// naming its path. Only the document's shape is checked here: ids, arity and the DAG are validate()'s job.
json_result from_json(std::string_view text);

/// Reads and parses a file; an unreadable file is an error value, like malformed JSON.
json_result load_program(const std::filesystem::path& path);

/// Writes to_json(p) (indent 2) and a newline to `path`. Throws octo::error on an I/O failure.
void save_program(const program& p, const std::filesystem::path& path);

}  // namespace octo::ir
