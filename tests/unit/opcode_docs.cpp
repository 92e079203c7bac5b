// docs/opcodes.md documents every opcode of the table (include/octo/ir/opcode_table.hpp): each has a row
// "| NAME |" in its semantics table, and the table names no opcode the IR lacks.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <octo/ir/enums.hpp>

TEST_CASE("docs/opcodes.md has one semantics row per opcode of the table, and no other") {
  std::ifstream f(std::string(OCTO_SOURCE_DIR) + "/docs/opcodes.md");
  REQUIRE(f.good());
  std::set<std::string> documented;
  for (std::string line; std::getline(f, line);) {
    // A row starts "| NAME |" or "| NAME partial=1 |"; the name is the upper-case word after "| ".
    if (line.size() < 3 || line.compare(0, 2, "| ") != 0 || line[2] < 'A' || line[2] > 'Z') continue;
    const auto end = line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", 2);
    documented.insert(line.substr(2, end - 2));
  }
  for (int i = 0; i < octo::ir::opcode_count; ++i) {
    const std::string name(octo::ir::name(octo::ir::opcode(i)));
    CHECK_MESSAGE(documented.erase(name) == 1, "docs/opcodes.md has no row for " << name);
  }
  CHECK_MESSAGE(documented.empty(), "docs/opcodes.md documents opcodes the IR lacks: " << (documented.empty() ? std::string() : *documented.begin()));
}
