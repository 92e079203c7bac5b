// The README's section "Write a transformer as a typed graph" has a code block that is compiled as
// tests/static/readme_graph.cpp: this test fails when the two drift apart, so the README's code is
// always code that compiles.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <fstream>
#include <sstream>
#include <string>

using octo::test::slurp;

TEST_CASE("README's typed-graph code equals tests/static/readme_graph.cpp's marked region") {
  const std::string root = OCTO_SOURCE_DIR;
  const std::string doc = slurp(root + "/README.md");
  const std::string src = slurp(root + "/tests/static/readme_graph.cpp");
  const auto section = doc.find("## Write a transformer as a typed graph");
  REQUIRE(section != std::string::npos);
  const auto b = doc.find("```cpp\n", section);
  REQUIRE(b != std::string::npos);
  const auto e = doc.find("```", b + 7);
  REQUIRE(e != std::string::npos);
  const std::string doc_code = doc.substr(b + 7, e - (b + 7));
  const std::string begin = "// --- begin readme ---\n", end = "// --- end readme ---";
  const auto sb = src.find(begin), se = src.find(end);
  REQUIRE(sb != std::string::npos);
  REQUIRE(se != std::string::npos);
  const std::string src_code = src.substr(sb + begin.size(), se - (sb + begin.size()));
  CHECK(doc_code == src_code);
  CHECK(doc_code.find("octo::freeze") != std::string::npos);
}
