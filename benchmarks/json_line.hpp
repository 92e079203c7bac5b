// json_line: the benchmarks' output, one JSON object per line on stdout (STYLE.md), written by
// nlohmann-json; text that is not UTF-8 (a device name, an error message) is replaced, never thrown.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

namespace octo_bench {

using json = nlohmann::ordered_json;  // keys in the order written: name first, as the readers expect

inline void print_json_line(const json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

}  // namespace octo_bench
