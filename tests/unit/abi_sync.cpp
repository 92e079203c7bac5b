// The ABI mirrors (include/octo/vm/abi.hpp, shaders/abi.glsl) read as TEXT and checked against the IR's
// canonical codes, caps, version and param slots (IR spec §8: "parses both and fails on any drift"),
// plus their record layouts against each other under the GLSL std430/std140 rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <octo/ir/enums.hpp>
#include <octo/ir/param_fields.hpp>
#include <octo/ir/version.hpp>
#include <octo/vm/abi.hpp>

namespace {

// ---- a small tokenizer and the two parsers -------------------------------------------------------

std::vector<std::string> tokens(std::string line) {
  if (auto c = line.find("//"); c != std::string::npos) line.erase(c);
  std::vector<std::string> out;
  std::size_t i = 0;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < line.size()) {
    char c = line[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (ident(c)) {  // identifiers and numbers (0x00202420u is one token)
      std::size_t j = i;
      while (j < line.size() && ident(line[j])) ++j;
      out.push_back(line.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < line.size() && line[i + 1] == ':') {
      out.push_back("::");
      i += 2;
    } else {
      out.push_back(std::string(1, c));
      ++i;
    }
  }
  // Join qualified names: std :: uint32_t -> std::uint32_t.
  std::vector<std::string> joined;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] == "::" && !joined.empty() && k + 1 < out.size()) {
      joined.back() += "::" + out[++k];
    } else {
      joined.push_back(out[k]);
    }
  }
  return joined;
}

bool is_number(const std::string& t) { return !t.empty() && std::isdigit(static_cast<unsigned char>(t[0])); }

/// A C++/GLSL integer literal: decimal or 0x hex, optional u suffix.
bool parse_number(std::string t, std::int64_t& out) {
  if (!t.empty() && (t.back() == 'u' || t.back() == 'U')) t.pop_back();
  int base = 10;
  std::size_t i = 0;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    i = 2;
  }
  if (i == t.size()) return false;
  std::int64_t v = 0;
  for (; i < t.size(); ++i) {
    int d = std::isdigit(static_cast<unsigned char>(t[i])) ? t[i] - '0'
            : (base == 16 && std::isxdigit(static_cast<unsigned char>(t[i])))
                ? std::tolower(static_cast<unsigned char>(t[i])) - 'a' + 10
                : -1;
    if (d < 0) return false;
    v = v * base + d;
    if (v > (std::int64_t{1} << 40)) return false;
  }
  out = v;
  return true;
}

struct field {
  std::string type;
  std::string name;
  std::string extent;  // "" for a scalar, else the array extent as written (a constant or a number)
};

struct parsed {
  std::map<std::string, std::int64_t> constants;  // C++ `inline constexpr`, GLSL object-like #defines
  std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> enums;  // C++ only
  std::map<std::string, std::vector<field>> structs;
  std::vector<std::string> problems;  // lines the parser could not read, duplicate names
};

void add_constant(parsed& p, const std::string& name, const std::string& value, std::size_t line) {
  std::int64_t v = 0;
  if (!parse_number(value, v)) {
    p.problems.push_back("line " + std::to_string(line) + ": " + name + " = " + value + " is not a number");
    return;
  }
  if (!p.constants.emplace(name, v).second) p.problems.push_back("line " + std::to_string(line) + ": " + name + " defined twice");
}

/// Reads struct bodies (shared by both languages): `TYPE NAME ;` or `TYPE NAME [ EXTENT ] ;`.
bool struct_line(parsed& p, const std::string& current, const std::vector<std::string>& t, std::size_t line) {
  if (t.size() == 3 && t[2] == ";") {
    p.structs[current].push_back({t[0], t[1], ""});
    return true;
  }
  if (t.size() == 6 && t[2] == "[" && t[4] == "]" && t[5] == ";") {
    p.structs[current].push_back({t[0], t[1], t[3]});
    return true;
  }
  p.problems.push_back("line " + std::to_string(line) + ": unreadable member of " + current);
  return false;
}

parsed parse_cpp(const std::string& src) {
  parsed p;
  std::istringstream in(src);
  std::string line;
  std::string in_enum, in_struct;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    auto t = tokens(line);
    if (t.empty()) continue;
    if (!in_enum.empty()) {
      if (t.size() == 2 && t[0] == "}" && t[1] == ";") {
        in_enum.clear();
      } else if (t.size() == 4 && t[1] == "=" && is_number(t[2]) && t[3] == ",") {
        std::int64_t v = 0;
        if (parse_number(t[2], v))
          p.enums[in_enum].push_back({t[0], v});
        else
          p.problems.push_back("line " + std::to_string(n) + ": bad code " + t[2]);
      } else {
        // An enumerator without an explicit code (or anything else) is drift waiting to happen.
        p.problems.push_back("line " + std::to_string(n) + ": unreadable enumerator in " + in_enum + ": " + line);
      }
      continue;
    }
    if (!in_struct.empty()) {
      if (t.size() == 2 && t[0] == "}" && t[1] == ";")
        in_struct.clear();
      else if (t[0] != "constexpr")  // member functions are one line each
        struct_line(p, in_struct, t, n);
      continue;
    }
    if (t.size() >= 2 && t[0] == "inline" && t[1] == "constexpr") {
      if (t.size() == 7 && t[4] == "=" && t[6] == ";")
        add_constant(p, t[3], t[5], n);
      else
        p.problems.push_back("line " + std::to_string(n) + ": unreadable constant: " + line);
    } else if (t.size() == 6 && t[0] == "enum" && t[1] == "class" && t[3] == ":" && t[5] == "{") {
      in_enum = t[2];
      if (p.enums.count(in_enum)) p.problems.push_back("enum " + in_enum + " defined twice");
      p.enums[in_enum];
    } else if (t.size() == 3 && t[0] == "struct" && t[2] == "{") {
      in_struct = t[1];
      if (p.structs.count(in_struct)) p.problems.push_back("struct " + in_struct + " defined twice");
      p.structs[in_struct];
    }
  }
  if (!in_enum.empty() || !in_struct.empty()) p.problems.push_back("unterminated enum or struct");
  return p;
}

parsed parse_glsl(const std::string& src) {
  parsed p;
  std::istringstream in(src);
  std::string line;
  std::string in_struct;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    auto t = tokens(line);
    if (t.empty()) continue;
    if (!in_struct.empty()) {
      if (t.size() == 2 && t[0] == "}" && t[1] == ";")
        in_struct.clear();
      else
        struct_line(p, in_struct, t, n);
      continue;
    }
    if (t.size() >= 3 && t[0] == "#" && t[1] == "define") {
      // Function-like macros have "(" straight after the name; include guards have no value.
      bool function_like = line.find(t[2] + "(") != std::string::npos;
      if (function_like || t.size() == 3) continue;
      if (t.size() == 4)
        add_constant(p, t[2], t[3], n);
      else
        p.problems.push_back("line " + std::to_string(n) + ": unreadable #define: " + line);
    } else if (t.size() == 3 && t[0] == "struct" && t[2] == "{") {
      in_struct = t[1];
      if (p.structs.count(in_struct)) p.problems.push_back("struct " + in_struct + " defined twice");
      p.structs[in_struct];
    }
  }
  if (!in_struct.empty()) p.problems.push_back("unterminated struct");
  return p;
}

// ---- layouts -------------------------------------------------------------------------------------

struct member_layout {
  std::string name;
  std::string kind;  // language-neutral: "i32", "u32", "u64", "u32[4]", "struct params", ...
  std::int64_t offset;
  std::int64_t size;
};
struct struct_layout {
  std::vector<member_layout> members;
  std::int64_t size = 0;
  std::int64_t align = 1;
  std::string error;
};

std::int64_t round_up(std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; }

std::int64_t extent_of(const parsed& p, const std::string& e, std::string& error) {
  std::int64_t v = 0;
  if (parse_number(e, v)) return v;
  auto it = p.constants.find(e);
  if (it == p.constants.end()) {
    error = "unknown array extent " + e;
    return 0;
  }
  return it->second;
}

/// C++ layout with natural alignment (what g++ does for these std-layout records).
struct_layout cpp_layout(const parsed& p, const std::string& name, int depth = 0) {
  struct_layout L;
  auto it = p.structs.find(name);
  if (it == p.structs.end() || depth > 4) {
    L.error = "no struct " + name;
    return L;
  }
  std::int64_t off = 0;
  for (const auto& f : it->second) {
    std::string kind;
    std::int64_t size = 0, align = 0;
    if (f.type == "std::uint32_t" || f.type == "std::int32_t") {
      kind = f.type == "std::uint32_t" ? "u32" : "i32";
      size = align = 4;
    } else if (f.type == "std::uint64_t") {
      kind = "u64";
      size = align = 8;
    } else if (f.type.rfind("abi::", 0) == 0) {
      auto sub = cpp_layout(p, f.type.substr(5), depth + 1);
      if (!sub.error.empty()) {
        L.error = sub.error;
        return L;
      }
      kind = "struct " + f.type.substr(5);
      size = sub.size;
      align = sub.align;
    } else {
      L.error = name + "." + f.name + ": unexpected type " + f.type;
      return L;
    }
    if (!f.extent.empty()) {
      std::int64_t n = extent_of(p, f.extent, L.error);
      kind += "[" + std::to_string(n) + "]";
      size *= n;
    }
    off = round_up(off, align);
    L.members.push_back({f.name, kind, off, size});
    off += size;
    L.align = std::max(L.align, align);
  }
  L.size = round_up(off, L.align);
  return L;
}

/// GLSL block layout, std430 or std140 (GLSL 4.60 §7.6.2.2). uvec2 is how the ABI carries a 64-bit value.
struct_layout glsl_layout(const parsed& p, const std::string& name, bool std140, int depth = 0) {
  struct_layout L;
  auto it = p.structs.find(name);
  if (it == p.structs.end() || depth > 4) {
    L.error = "no struct " + name;
    return L;
  }
  std::int64_t off = 0;
  for (const auto& f : it->second) {
    std::string kind;
    std::int64_t size = 0, align = 0;
    if (f.type == "uint" || f.type == "int" || f.type == "float") {
      kind = f.type == "uint" ? "u32" : f.type == "int" ? "i32" : "f32";
      size = align = 4;
    } else if (f.type == "uvec2") {
      kind = "u64";
      size = align = 8;
    } else if (f.type == "uvec4") {
      kind = "u32[4]";
      size = align = 16;
    } else if (f.type.rfind("octo_", 0) == 0) {
      auto sub = glsl_layout(p, f.type, std140, depth + 1);
      if (!sub.error.empty()) {
        L.error = sub.error;
        return L;
      }
      kind = "struct " + f.type.substr(5);
      size = sub.size;
      align = sub.align;
    } else {
      L.error = name + "." + f.name + ": unexpected type " + f.type;
      return L;
    }
    if (!f.extent.empty()) {
      std::int64_t n = extent_of(p, f.extent, L.error);
      if (!(kind.size() > 3 && kind.back() == ']')) kind += "[" + std::to_string(n) + "]";
      else kind = "?";  // arrays of vectors are not part of this ABI
      std::int64_t stride = std140 ? round_up(size, 16) : size;
      if (std140) align = round_up(align, 16);
      size = stride * n;
    }
    off = round_up(off, align);
    L.members.push_back({f.name, kind, off, size});
    off += size;
    L.align = std::max(L.align, align);
  }
  if (std140) L.align = round_up(L.align, 16);
  L.size = round_up(off, L.align);
  return L;
}

std::string describe(const member_layout& m) {
  return m.name + " " + m.kind + " @" + std::to_string(m.offset) + " +" + std::to_string(m.size);
}

void compare_layouts(const struct_layout& cpp, const struct_layout& glsl, const std::string& what,
                     std::vector<std::string>& drift) {
  if (!cpp.error.empty()) drift.push_back(what + " (C++): " + cpp.error);
  if (!glsl.error.empty()) drift.push_back(what + " (GLSL): " + glsl.error);
  if (!cpp.error.empty() || !glsl.error.empty()) return;
  std::size_t n = std::max(cpp.members.size(), glsl.members.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::string a = i < cpp.members.size() ? describe(cpp.members[i]) : "(none)";
    std::string b = i < glsl.members.size() ? describe(glsl.members[i]) : "(none)";
    if (a != b) drift.push_back(what + " member " + std::to_string(i) + ": C++ " + a + ", GLSL " + b);
  }
  if (cpp.size != glsl.size)
    drift.push_back(what + ": size " + std::to_string(cpp.size) + " in C++, " + std::to_string(glsl.size) + " in GLSL");
}

// ---- the drift check ------------------------------------------------------------------------------

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}
std::string upper(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}
/// The C++ enumerator for an IR name: lower case, except where that is a C++ keyword (the IR's own
/// C++ enums make the same two substitutions).
std::string cpp_enumerator(std::string_view ir_name) {
  std::string l = lower(ir_name);
  if (l == "bool") return "boolean";
  if (l == "register") return "reg";
  return l;
}

using entry_list = std::vector<std::pair<std::string, std::int64_t>>;

template <std::size_t N>
entry_list ir_entries(const std::array<std::string_view, N>& names) {
  entry_list e;
  for (std::size_t i = 0; i < N; ++i) e.push_back({std::string(names[i]), std::int64_t(i)});
  return e;
}
entry_list ir_param_entries() {
  entry_list e;
  for (std::size_t i = 0; i < octo::ir::param_fields.size(); ++i)
    e.push_back({std::string(octo::ir::param_fields[i].name), std::int64_t(i)});
  return e;
}
std::int64_t ir_float_mask() {
  std::int64_t m = 0;
  for (std::size_t i = 0; i < octo::ir::param_fields.size(); ++i)
    if (octo::ir::param_fields[i].type == octo::ir::param_type::real) m |= std::int64_t{1} << i;
  return m;
}

void expect_constant(const parsed& p, const std::string& file, const std::string& name, std::int64_t want,
                     std::vector<std::string>& drift) {
  auto it = p.constants.find(name);
  if (it == p.constants.end())
    drift.push_back(file + ": " + name + " missing (IR: " + std::to_string(want) + ")");
  else if (it->second != want)
    drift.push_back(file + ": " + name + " = " + std::to_string(it->second) + ", IR says " + std::to_string(want));
}

void expect_enum(const parsed& p, const std::string& enum_name, const entry_list& ir, bool param_names,
                 std::vector<std::string>& drift) {
  auto it = p.enums.find(enum_name);
  if (it == p.enums.end()) {
    drift.push_back("abi.hpp: enum " + enum_name + " missing");
    return;
  }
  const auto& got = it->second;
  if (got.size() != ir.size())
    drift.push_back("abi.hpp: enum " + enum_name + " has " + std::to_string(got.size()) + " entries, IR has " +
                    std::to_string(ir.size()));
  for (std::size_t i = 0; i < std::min(got.size(), ir.size()); ++i) {
    std::string want = param_names ? ir[i].first : cpp_enumerator(ir[i].first);
    if (got[i].first != want || got[i].second != ir[i].second)
      drift.push_back("abi.hpp: " + enum_name + " entry " + std::to_string(i) + " is " + got[i].first + " = " +
                      std::to_string(got[i].second) + ", IR says " + want + " = " + std::to_string(ir[i].second));
  }
}

/// Every #define with `prefix` must be exactly the IR's list (no missing, renumbered or extra names).
void expect_defines(const parsed& g, const std::string& prefix, const entry_list& ir,
                    const std::vector<std::string>& not_in_group, std::vector<std::string>& drift) {
  std::map<std::string, std::int64_t> want;
  for (const auto& [n, code] : ir) want[prefix + upper(n)] = code;
  if (want.size() != ir.size()) drift.push_back("IR names collide once upper-cased under " + prefix);
  for (const auto& [n, code] : want) expect_constant(g, "abi.glsl", n, code, drift);
  for (const auto& [n, v] : g.constants)
    if (n.rfind(prefix, 0) == 0 && !want.count(n) &&
        std::find(not_in_group.begin(), not_in_group.end(), n) == not_in_group.end())
      drift.push_back("abi.glsl: " + n + " = " + std::to_string(v) + " is not in the IR");
}

std::vector<std::string> drift(const std::string& hpp, const std::string& glsl) {
  namespace ir = octo::ir;
  std::vector<std::string> d;
  parsed c = parse_cpp(hpp);
  parsed g = parse_glsl(glsl);
  for (const auto& e : c.problems) d.push_back("abi.hpp: " + e);
  for (const auto& e : g.problems) d.push_back("abi.glsl: " + e);

  // The IR's own version string and numbers agree.
  if (std::string(ir::abi_version) != std::to_string(ir::abi_version_major) + "." + std::to_string(ir::abi_version_minor))
    d.push_back("ir/version.hpp: abi_version string disagrees with its major/minor");

  const std::pair<const char*, std::int64_t> cpp_caps[] = {
      {"version_major", ir::abi_version_major}, {"version_minor", ir::abi_version_minor},
      {"max_inputs", ir::abi_max_inputs},       {"max_outputs", ir::abi_max_outputs},
      {"max_waits", ir::abi_max_waits},         {"max_rank", ir::abi_max_rank},
      {"param_float_mask", ir_float_mask()}};
  for (const auto& [n, v] : cpp_caps) expect_constant(c, "abi.hpp", n, v, d);
  const std::pair<const char*, std::int64_t> glsl_caps[] = {
      {"OCTO_ABI_VERSION_MAJOR", ir::abi_version_major}, {"OCTO_ABI_VERSION_MINOR", ir::abi_version_minor},
      {"OCTO_MAX_INPUTS", ir::abi_max_inputs},           {"OCTO_MAX_OUTPUTS", ir::abi_max_outputs},
      {"OCTO_MAX_WAITS", ir::abi_max_waits},             {"OCTO_MAX_RANK", ir::abi_max_rank},
      {"OCTO_PARAM_FLOAT_MASK", ir_float_mask()}};
  for (const auto& [n, v] : glsl_caps) expect_constant(g, "abi.glsl", n, v, d);

  // Param slots: enough for every key, at most 32 (param_present is a 32-bit mask), the same in both.
  auto cs = c.constants.find("param_slots");
  auto gs = g.constants.find("OCTO_PARAM_SLOTS");
  if (cs == c.constants.end() || gs == g.constants.end())
    d.push_back("param_slots / OCTO_PARAM_SLOTS missing");
  else if (cs->second != gs->second || cs->second < ir::param_key_count || cs->second > 32)
    d.push_back("param slots: abi.hpp " + std::to_string(cs->second) + ", abi.glsl " + std::to_string(gs->second) +
                ", IR keys " + std::to_string(ir::param_key_count));

  expect_enum(c, "dtype", ir_entries(ir::dtype_names), false, d);
  expect_enum(c, "mem_space", ir_entries(ir::mem_space_names), false, d);
  expect_enum(c, "opcode", ir_entries(ir::opcode_names), false, d);
  expect_enum(c, "param_slot", ir_param_entries(), true, d);

  expect_defines(g, "OCTO_DTYPE_", ir_entries(ir::dtype_names), {}, d);
  expect_defines(g, "OCTO_MEM_", ir_entries(ir::mem_space_names), {}, d);
  expect_defines(g, "OCTO_OP_", ir_entries(ir::opcode_names), {}, d);
  expect_defines(g, "OCTO_PARAM_", ir_param_entries(), {"OCTO_PARAM_SLOTS", "OCTO_PARAM_FLOAT_MASK"}, d);

  // Record layouts: C++ natural layout == GLSL std430; buffer_record also == std140.
  compare_layouts(cpp_layout(c, "params"), glsl_layout(g, "octo_params", false), "params", d);
  compare_layouts(cpp_layout(c, "instruction"), glsl_layout(g, "octo_instruction", false), "instruction (std430)", d);
  compare_layouts(cpp_layout(c, "buffer_record"), glsl_layout(g, "octo_buffer_record", false),
                  "buffer_record (std430)", d);
  compare_layouts(cpp_layout(c, "buffer_record"), glsl_layout(g, "octo_buffer_record", true),
                  "buffer_record (std140)", d);
  return d;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string hpp_path = std::string(OCTO_SOURCE_DIR) + "/include/octo/vm/abi.hpp";
const std::string glsl_path = std::string(OCTO_SOURCE_DIR) + "/shaders/abi.glsl";

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "mutation target not found: " << from);
  REQUIRE_MESSAGE(s.find(from, at + 1) == std::string::npos, "mutation target not unique: " << from);
  s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("abi.hpp and abi.glsl match the IR's codes, caps, version and param slots") {
  auto d = drift(read_file(hpp_path), read_file(glsl_path));
  for (const auto& e : d) MESSAGE(e);
  CHECK(d.empty());
}

TEST_CASE("the parsers read what the compiler reads") {
  // Guards the checker itself: parsed C++ layout and codes equal the compiled header's.
  parsed c = parse_cpp(read_file(hpp_path));
  CHECK(c.problems.empty());
  auto ins = cpp_layout(c, "instruction");
  auto buf = cpp_layout(c, "buffer_record");
  REQUIRE(ins.error.empty());
  REQUIRE(buf.error.empty());
  CHECK(ins.size == std::int64_t(sizeof(octo::vm::abi::instruction)));
  CHECK(buf.size == std::int64_t(sizeof(octo::vm::abi::buffer_record)));
  auto offset = [](const struct_layout& L, const std::string& n) {
    for (const auto& m : L.members)
      if (m.name == n) return m.offset;
    return std::int64_t{-1};
  };
  using octo::vm::abi::instruction;
  using octo::vm::abi::buffer_record;
  CHECK(offset(ins, "op") == std::int64_t(offsetof(instruction, op)));
  CHECK(offset(ins, "inputs") == std::int64_t(offsetof(instruction, inputs)));
  CHECK(offset(ins, "outputs") == std::int64_t(offsetof(instruction, outputs)));
  CHECK(offset(ins, "wait_counter") == std::int64_t(offsetof(instruction, wait_counter)));
  CHECK(offset(ins, "wait_threshold") == std::int64_t(offsetof(instruction, wait_threshold)));
  CHECK(offset(ins, "out_counter") == std::int64_t(offsetof(instruction, out_counter)));
  CHECK(offset(ins, "sm") == std::int64_t(offsetof(instruction, sm)));
  CHECK(offset(ins, "param_present") == std::int64_t(offsetof(instruction, param_present)));
  CHECK(offset(ins, "params") == std::int64_t(offsetof(instruction, params)));
  CHECK(offset(buf, "numel") == std::int64_t(offsetof(buffer_record, numel)));
  CHECK(offset(buf, "shape") == std::int64_t(offsetof(buffer_record, shape)));
  CHECK(offset(buf, "stride") == std::int64_t(offsetof(buffer_record, stride)));
  CHECK(c.enums["opcode"].size() == 19);
  CHECK(c.enums["opcode"][5] == std::pair<std::string, std::int64_t>{"gemv_tile", int(octo::vm::abi::opcode::gemv_tile)});
  CHECK(c.enums["dtype"][19].second == int(octo::vm::abi::dtype::q6_k));
  CHECK(c.constants["param_float_mask"] == octo::vm::abi::param_float_mask);

  // The std430/std140 rules as glslc applies them (offsets read off `spirv-dis` of a shader using abi.glsl).
  parsed g = parse_glsl(read_file(glsl_path));
  CHECK(g.problems.empty());
  auto gi = glsl_layout(g, "octo_instruction", false);
  auto gb = glsl_layout(g, "octo_buffer_record", true);
  CHECK(gi.size == 272);
  CHECK(offset(gi, "params") == 144);
  CHECK(gb.size == 64);
  CHECK(offset(gb, "shape") == 32);
  // And std140 would break octo_instruction: uint arrays get a 16-byte stride there.
  CHECK(glsl_layout(g, "octo_instruction", true).size != 272);
  CHECK(g.constants["OCTO_OP_ATTENTION_COMBINE"] == 18);
}

TEST_CASE("any renumbering or layout change in either file is caught") {
  const std::string hpp = read_file(hpp_path);
  const std::string glsl = read_file(glsl_path);
  struct mutation {
    bool in_glsl;
    const char* from;
    const char* to;
  };
  const mutation cases[] = {
      {false, "  gemv_tile = 5,", "  gemv_tile = 6,"},
      {false, "  gemv_tile = 5,", "  gemv_tile,"},                        // implicit code
      {false, "  attention_combine = 18,\n", ""},                          // dropped
      {false, "  attention_combine = 18,\n", "  attention_combine = 18,\n  fused = 19,\n"},  // extra
      {false, "  q4_k = 17,\n  q5_k = 18,", "  q5_k = 17,\n  q4_k = 18,"},  // swapped names
      {false, "  boolean = 9,", "  bool_ = 9,"},
      {false, "  reg = 3,", "  reg = 4,"},
      {false, "  theta = 13,", "  theta = 14,"},
      {false, "  N_tile = 1,", "  n_tile = 1,"},
      {false, "max_waits = 8;", "max_waits = 16;"},
      {false, "max_rank = 4;", "max_rank = 5;"},
      {false, "version_minor = 2;", "version_minor = 3;"},
      {false, "param_float_mask = 0x00202420;", "param_float_mask = 0x00202020;"},
      {false, "param_slots = 32;", "param_slots = 24;"},
      {false, "  std::int32_t out_counter;", "  std::int32_t sm_;"},  // with the next two: swapped fields
      {false, "  std::int32_t sm; ", "  std::uint32_t sm; "},               // signedness
      {false, "  std::uint32_t reserved;           //", "  std::uint64_t reserved;           //"},
      {true, "#define OCTO_OP_GEMV_TILE 5\n", "#define OCTO_OP_GEMV_TILE 6\n"},
      {true, "#define OCTO_DTYPE_BOOL 9\n", "#define OCTO_DTYPE_BOOLEAN 9\n"},
      {true, "#define OCTO_MEM_REGISTER 3\n", ""},
      {true, "#define OCTO_OP_NOP 0\n", "#define OCTO_OP_NOP 0\n#define OCTO_OP_NOP 0\n"},
      {true, "#define OCTO_OP_ATTENTION_COMBINE 18\n", "#define OCTO_OP_ATTENTION_COMBINE 18\n#define OCTO_OP_FUSED 19\n"},
      {true, "#define OCTO_MAX_RANK 4\n", "#define OCTO_MAX_RANK 8\n"},
      {true, "#define OCTO_MAX_INPUTS 8\n", "#define OCTO_MAX_INPUTS (4 + 4)\n"},
      {true, "#define OCTO_ABI_VERSION_MAJOR 0\n", "#define OCTO_ABI_VERSION_MAJOR 1\n"},
      {true, "#define OCTO_PARAM_KV_BLOCK 25\n", "#define OCTO_PARAM_KV_BLOCK 26\n"},
      {true, "#define OCTO_PARAM_EPS 5\n", "#define OCTO_PARAM_EPSILON 5\n"},
      {true, "#define OCTO_PARAM_FLOAT_MASK 0x00202420u\n", "#define OCTO_PARAM_FLOAT_MASK 0x00002420u\n"},
      {true, "#define OCTO_PARAM_SLOTS 32\n", "#define OCTO_PARAM_SLOTS 26\n"},
      {true, "  uvec4 shape;", "  uint shape[OCTO_MAX_RANK];"},          // fine in std430, not in std140
      {true, "  int sm;", "  uint sm;"},
      {true, "  uint n_waits;\n", "  uint n_waits;\n  uint extra;\n"},
      {true, "  int outputs[OCTO_MAX_OUTPUTS];", "  int outputs[OCTO_MAX_INPUTS];"},
      {true, "  uvec2 numel;", "  uint numel;"},
  };
  for (const auto& m : cases) {
    std::string h = m.in_glsl ? hpp : replace_once(hpp, m.from, m.to);
    if (std::string(m.to) == "  std::int32_t sm_;")  // finish the swap: sm -> out_counter, sm_ -> sm
      h = replace_once(replace_once(h, "  std::int32_t sm; ", "  std::int32_t out_counter; "), "sm_;", "sm;");
    std::string g = m.in_glsl ? replace_once(glsl, m.from, m.to) : glsl;
    CAPTURE(std::string(m.to));
    CHECK_FALSE(drift(h, g).empty());
  }
}

TEST_CASE("glslc lays out abi.glsl exactly as g++ lays out abi.hpp") {
  // The real GLSL compiler as the oracle for std430/std140: compile a kernel that uses every record
  // (instruction in a std430 SSBO, buffer_record in a std430 SSBO and a std140 UBO) and read the member
  // offsets and array strides it decorates the SPIR-V with. glslc and spirv-dis come with the test
  // command's Debian packages (glslc, spirv-tools).
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("octo_abi_sync_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream k(dir / "layout.comp");
    k << "#version 450\n#include \"abi.glsl\"\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer I { octo_instruction ins[]; };\n"
         "layout(std430, binding = 1) buffer B { octo_buffer_record bufs[]; };\n"
         "layout(std140, binding = 2) uniform U { octo_buffer_record ubuf; };\n"
         "void main() {\n"
         "  bufs[0].rank = uint(octo_param_int(ins[0], OCTO_PARAM_K)) + uint(octo_param_float(ins[0], OCTO_PARAM_EPS))\n"
         "               + ubuf.shape.x + (octo_has_param(ins[0], OCTO_PARAM_N_TILE) ? 1u : 0u);\n"
         "}\n";
  }
  std::string cmd = "glslc -I'" + std::string(OCTO_SOURCE_DIR) + "/shaders' -o '" + (dir / "layout.spv").string() + "' '" +
                    (dir / "layout.comp").string() + "' && spirv-dis '" + (dir / "layout.spv").string() + "' -o '" +
                    (dir / "layout.txt").string() + "'";
  int rc = std::system(cmd.c_str());
  REQUIRE_MESSAGE(rc == 0, "glslc / spirv-dis failed (are the glslc and spirv-tools packages installed?): " << cmd);
  std::string dis = read_file((dir / "layout.txt").string());
  fs::remove_all(dir);

  // type name (e.g. %octo_buffer_record_0) -> member offsets; array type -> stride.
  std::map<std::string, std::map<int, std::int64_t>> offsets;
  std::map<std::string, std::int64_t> strides;
  std::istringstream in(dis);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string op, type, word;
    ls >> op >> type;
    if (op == "OpMemberDecorate") {
      int member = -1;
      std::int64_t value = -1;
      ls >> member >> word >> value;
      if (word == "Offset") offsets[type][member] = value;
    } else if (op == "OpDecorate") {
      std::int64_t value = -1;
      ls >> word >> value;
      if (word == "ArrayStride") strides[type] = value;
    }
  }
  using octo::vm::abi::instruction;
  using octo::vm::abi::buffer_record;
  const std::map<int, std::int64_t> want_ins{
      {0, offsetof(instruction, op)},           {1, offsetof(instruction, n_inputs)},
      {2, offsetof(instruction, n_outputs)},    {3, offsetof(instruction, n_waits)},
      {4, offsetof(instruction, inputs)},       {5, offsetof(instruction, outputs)},
      {6, offsetof(instruction, wait_counter)}, {7, offsetof(instruction, wait_threshold)},
      {8, offsetof(instruction, out_counter)},  {9, offsetof(instruction, sm)},
      {10, offsetof(instruction, param_present)}, {11, offsetof(instruction, reserved)},
      {12, offsetof(instruction, params)}};
  const std::map<int, std::int64_t> want_buf{
      {0, offsetof(buffer_record, address)}, {1, offsetof(buffer_record, numel)},
      {2, offsetof(buffer_record, rank)},    {3, offsetof(buffer_record, dtype)},
      {4, offsetof(buffer_record, space)},   {5, offsetof(buffer_record, reserved)},
      {6, offsetof(buffer_record, shape)},   {7, offsetof(buffer_record, stride)}};
  CHECK(offsets["%octo_instruction"] == want_ins);
  int buffer_record_layouts = 0;  // one per block that uses it: std430 and std140
  for (const auto& [type, members] : offsets)
    if (type.rfind("%octo_buffer_record", 0) == 0) {
      CAPTURE(type);
      CHECK(members == want_buf);
      ++buffer_record_layouts;
    }
  CHECK(buffer_record_layouts == 2);
  CHECK(strides["%_runtimearr_octo_instruction"] == std::int64_t(sizeof(instruction)));
  CHECK(strides["%_runtimearr_octo_buffer_record"] == std::int64_t(sizeof(buffer_record)));
  CHECK(strides["%_arr_uint_uint_32"] == 4);  // params.slot: std430 scalar arrays are packed
}
