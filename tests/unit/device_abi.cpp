// The device ABI the kernels read (src/vulkan/device_abi.hpp -> octo_device_abi.glsl, generated at build
// time): every dtype code and globals field in the generated GLSL, and no shader declaring either by
// hand (a second copy is what drifts).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "../../src/vulkan/device_abi.hpp"

namespace fs = std::filesystem;
using namespace octo;

namespace {
std::string glsl() {
  std::ostringstream s;
  vm::vulkan::write_device_abi_glsl(s);
  return s.str();
}
}  // namespace

TEST_CASE("the generated GLSL carries every dtype code and the globals record in the C++ order") {
  const auto g = glsl();
  for (int i = 0; i < ir::dtype_count; ++i) {
    const auto line = "const uint DT_" + std::string(ir::dtype_names[std::size_t(i)]) + " = " + std::to_string(i) + "u;";
    CHECK_MESSAGE(g.find(line) != std::string::npos, line);
  }
  CHECK(g.find("const uint DT_Q6_K = 19u;") != std::string::npos);
  const auto pos = g.find("  uint pos;"), n = g.find("  uint n_tokens;"), r0 = g.find("  uint reserved0;"),
             r1 = g.find("  uint reserved1;");
  REQUIRE(pos != std::string::npos);
  CHECK(pos < n);
  CHECK(n < r0);
  CHECK(r0 < r1);
  CHECK(r1 != std::string::npos);
  vm::vulkan::globals_record r;
  CHECK(r.pos == 0);
  CHECK(r.n_tokens == 1);
  static_assert(sizeof(vm::vulkan::globals_record) == 4 * 4);
}

TEST_CASE("shaders get dtype codes and the globals record only from the generated header") {
  const fs::path shaders = fs::path(OCTO_SOURCE_DIR) / "shaders";
  int files = 0, users = 0;
  for (const auto& e : fs::recursive_directory_iterator(shaders)) {
    const auto ext = e.path().extension();
    if (ext != ".comp" && ext != ".glsl") continue;
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++files;
    CAPTURE(e.path().string());
    CHECK(text.find("const uint DT_") == std::string::npos);
    CHECK(text.find("buffer globals_buf") == std::string::npos);
    CHECK(text.find("uint n_tokens;") == std::string::npos);  // no second declaration of the record
    if (text.find("#include \"octo_device_abi.glsl\"") != std::string::npos) ++users;
  }
  CHECK(files > 10);
  CHECK(users == 1);  // shaders/common/octo.glsl, which every kernel includes
}
