// What the benchmarks' command lines and inputs share: comma lists, dtype names, positive integers and
// random weights quantized like a real model's. Errors name the benchmark (`tool`) and the bad value.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/ir/enums.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace octo_bench {

/// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  for (std::size_t p = 0; p < list.size();) {
    auto q = list.find(',', p);
    if (q == std::string::npos) q = list.size();
    if (q > p) out.push_back(list.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

/// A profiled pass's GPU time per opcode (tasks serialized: each kernel's own time), largest first.
struct opcode_time {
  std::string opcode;
  double us = 0;
  int count = 0;
};
inline std::vector<opcode_time> time_by_opcode(const std::vector<octo::vm::task_profile>& prof) {
  std::map<std::string, opcode_time> by;
  for (const auto& r : prof) {
    auto& e = by[r.opcode];
    e.opcode = r.opcode;
    e.us += r.microseconds;
    ++e.count;
  }
  std::vector<opcode_time> out;
  for (auto& [op, e] : by) out.push_back(std::move(e));
  std::sort(out.begin(), out.end(), [](const opcode_time& a, const opcode_time& b) { return a.us > b.us; });
  return out;
}

/// A dtype by its IR name, any case ("q8_0", "Q4_K").
inline octo::ir::dtype parse_dtype(const char* tool, const std::string& s) {
  std::string upper = s;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (auto d = octo::ir::parse<octo::ir::dtype>(upper)) return *d;
  throw octo::error(std::string(tool) + ": unknown dtype '" + s + "'");
}

/// The value of option `opt` as an integer in [1, 2^40].
inline std::int64_t positive(const char* tool, const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != 0 || x <= 0 || x > (1LL << 40))
    throw octo::error(std::string(tool) + ": " + opt + " needs a positive integer, not '" + v + "'");
  return x;
}

/// A weight [N,K] of `dt`: 8 distinct random rows (quantized as a real model's are) repeated over N
/// rows; the kernels' memory traffic and arithmetic do not depend on the values.
inline std::vector<std::byte> make_weight(octo::ir::dtype dt, std::int64_t n, std::int64_t k, std::mt19937_64& rng) {
  const auto row_bytes = static_cast<std::size_t>(octo::ir::nbytes(dt, k));
  const std::int64_t distinct = std::min<std::int64_t>(8, n);
  std::vector<std::byte> rows(row_bytes * static_cast<std::size_t>(distinct));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(k));
  for (std::int64_t r = 0; r < distinct; ++r) {
    for (auto& x : v) x = u(rng);
    auto* dst = rows.data() + row_bytes * static_cast<std::size_t>(r);
    if (octo::ir::is_block_quantized(dt)) octo::detail::quantize_row(dt, v.data(), reinterpret_cast<std::uint8_t*>(dst), k);
    else octo::detail::from_f32(dt, v, std::span<std::byte>(dst, row_bytes));
  }
  std::vector<std::byte> out(row_bytes * static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r)
    std::memcpy(out.data() + row_bytes * static_cast<std::size_t>(r),
                rows.data() + row_bytes * static_cast<std::size_t>(r % distinct), row_bytes);
  return out;
}

}  // namespace octo_bench
