// What the benchmarks' command lines and inputs share: the command line (CLI11), comma lists, dtype
// names, positive integers and random weights quantized like a real model's. Errors name the benchmark
// (`tool`) and the bad value.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
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

/// A benchmark's command line: `app` holds its options, whose values the callers convert (octo::error
/// naming the option on a bad one). --help prints the options and exits
/// 0; an unknown option or a missing value is one line naming it and exit 1.
/// Call set_up first (before adding options): a repeated option takes its last value, as it always did.
inline void set_up(CLI::App& app) {
  app.set_help_flag("-h,--help", "this text");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(28);
}
inline void parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ExtrasError&) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), octo::leftover_arguments_text(app.remaining()).c_str());
    std::exit(1);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), e.what());
    std::exit(1);
  } catch (const octo::error& e) {  // a value the option's converter refused
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(1);
  }
}

/// An option whose value goes through `set` (a string: the converters below name the option on a bad
/// value).
inline CLI::Option* option(CLI::App& app, const std::string& names, const std::string& type, const std::string& desc,
                           std::function<void(const std::string&)> set) {
  return app.add_option_function<std::string>(names, std::move(set), desc)->type_name(type);
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

/// An option taking a finite number > 0 into `out`.
inline CLI::Option* positive_real_option(CLI::App& app, const std::string& names, double& out, const std::string& desc) {
  const std::string tool = app.get_name(), opt = names.substr(names.rfind(',') + 1);
  return option(app, names, "X", desc, [&out, tool, opt](const std::string& v) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != 0 || !(x > 0) || !std::isfinite(x))
      throw octo::error(tool + ": " + opt + " needs a number > 0, not '" + v + "'");
    out = x;
  });
}

/// An option taking an integer in [1, 2^40] into `out` (at most Int's largest).
template <class Int>
CLI::Option* positive_option(CLI::App& app, const std::string& names, Int& out, const std::string& desc) {
  const std::string tool = app.get_name(), opt = names.substr(names.rfind(',') + 1);
  return option(app, names, "N", desc,
                [&out, tool, opt](const std::string& v) {
                  out = static_cast<Int>(std::min<std::int64_t>(positive(tool.c_str(), opt, v), std::numeric_limits<Int>::max()));
                });
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
