// Helpers shared by tests that read ../shared/data and compare float vectors: one copy of the golden-id
// reader and of the relative-L2 measure, so every test judges against the same oracle the same way.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace octo::test {

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
