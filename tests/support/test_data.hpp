// Helpers shared by tests that read ../shared/data and compare float vectors: one copy of the golden-id
// reader, of the file and id-list readers, and of the relative-L2 measure, so every test judges against
// the same oracle the same way.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace octo::test {

/// Whether this run is a sampled one (OCTO_TEST_SAMPLE=1): it checks how octo runs rather than what it
/// computes, so it takes a representative sample of a test's inputs. tests/gpu/CMakeLists.txt sets it on
/// the GPU tests' validation twins (the Khronos layers check octo's Vulkan usage, which does not depend on
/// the weight format or most shapes) and on a sanitizer build's GPU tests (its memory and
/// undefined-behaviour checks of the host code); the plain release run of every GPU test takes the full
/// set (docs/gpu-conformance.md, "What each run covers").
inline bool sampled_run() {
  static const bool sampled = [] {
    const char* v = std::getenv("OCTO_TEST_SAMPLE");
    return v != nullptr && *v != 0 && std::string_view(v) != "0";
  }();
  return sampled;
}

/// In a sampled run: says (one doctest MESSAGE per distinct `what` and process) what the run leaves
/// out, and returns true; in a full run returns false. Every reduction goes through here, so a sampled
/// run's log names all it left out:  `if (test::sampled_out("Q4_0 ...")) continue;`
inline bool sampled_out(const std::string& what) {
  if (!sampled_run()) return false;
  static std::set<std::string> said;
  if (said.insert(what).second)
    MESSAGE("sampled out (OCTO_TEST_SAMPLE=1; the plain release run has it): " << what);
  return true;
}

/// Indices of the inputs a long repeated check takes (tiny-qwen's 50 sums, each one greedy generation):
/// all of them in the plain release run, which judges every answer, and every `stride`-th one (the first
/// included) in a sampled run: CI's sanitizer build and validation twins spent minutes walking the same
/// paths 50 times (tests/CMakeLists.txt).
inline std::vector<std::size_t> inputs_to_check(std::size_t count, std::size_t stride = 5) {
  const std::size_t step = sampled_run() ? stride : 1;
  if (step != 1) sampled_out("all but every " + std::to_string(stride) + "th of " + std::to_string(count) + " repeated inputs");
  std::vector<std::size_t> r;
  for (std::size_t i = 0; i < count; i += step) r.push_back(i);
  return r;
}

/// A whole file's bytes; a file that cannot be read fails the test, naming it.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `all` cut at every `sep` (n separators give n + 1 pieces).
inline std::vector<std::string> split(const std::string& all, const std::string& sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (std::size_t hit; (hit = all.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
    out.push_back(all.substr(pos, hit - pos));
  out.push_back(all.substr(pos));
  return out;
}

/// The integers of a line of whitespace-separated token ids.
inline std::vector<std::int32_t> parse_ids(const std::string& line) {
  std::vector<std::int32_t> ids;
  std::istringstream in(line);
  for (std::int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

/// The real Qwen2 tokenizer under OCTO_SHARED_DATA_DIR (tokenizer.json and the expected encodings).
inline std::filesystem::path qwen2_tokenizer_dir() {
  return std::filesystem::path(OCTO_SHARED_DATA_DIR) / "qwen2-tokenizer";
}

/// stories260K.gguf under OCTO_SHARED_DATA_DIR.
inline std::filesystem::path stories260k_gguf() {
  return std::filesystem::path(OCTO_SHARED_DATA_DIR) / "stories260K" / "stories260K.gguf";
}

/// The 257 golden greedy ids from BOS (stories260K.greedy-from-bos.ids.txt): every run of digits.
inline std::vector<std::int32_t> stories260k_golden_ids() {
  const auto path = std::filesystem::path(OCTO_SHARED_DATA_DIR) / "stories260K" / "stories260K.greedy-from-bos.ids.txt";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "missing " << path.string());
  const std::string s((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::int32_t> ids;
  std::int32_t v = 0;
  bool in_number = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      v = v * 10 + (c - '0');
      in_number = true;
    } else if (in_number) {
      ids.push_back(v);
      v = 0;
      in_number = false;
    }
  }
  if (in_number) ids.push_back(v);
  return ids;
}

/// ||a - b|| / ||b|| in float64, b being the reference.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / den);
}

}  // namespace octo::test
