// octo inspect: a GGUF file's header, metadata (long arrays abbreviated) and tensor table.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "octo/model_file/gguf.hpp"

namespace octo::tool {

namespace {
constexpr const char* inspect_help =
    "Prints the GGUF version, alignment, every metadata entry (arrays show their first items unless\n"
    "--all), the tensor table: name, type, dimensions (ne0 first), offset and size, and the number\n"
    "of tensors and bytes of each type.";

// Text from the file, safe to print on a terminal: printable ASCII and valid UTF-8 (C1 controls
// excluded) as is, a newline as \n, every other byte (escape sequences, invalid UTF-8) as \xNN.
std::string terminal_safe(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
      ++i;
      continue;
    }
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f || c == '\\') escape(c);
      else out += char(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes checked, overlong forms,
    // surrogates and C1 controls (U+0080..U+009F, which some terminals obey) refused.
    const std::size_t len = c >= 0xf0 ? (c <= 0xf4 ? 4 : 0) : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    std::uint32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3f);
    }
    ok = ok && !(cp >= 0x80 && cp <= 0x9f) && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
         !(cp >= 0xd800 && cp <= 0xdfff);
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      escape(c);
      ++i;
    }
  }
  return out;
}

std::string scalar_text(const model_file::gguf_value& v) {
  using model_file::gguf_type;
  switch (v.type()) {
    case gguf_type::string: {
      const auto& s = v.as_string();
      std::string out = "\"" + terminal_safe(std::string_view(s).substr(0, 200)) + '"';
      if (s.size() > 200) {
        out += "... (";
        out += std::to_string(s.size());
        out += " bytes)";
      }
      return out;
    }
    case gguf_type::boolean: return v.as_bool() ? "true" : "false";
    case gguf_type::f32:
    case gguf_type::f64: {
      char b[64];
      std::snprintf(b, sizeof b, "%g", v.as_f64());
      return b;
    }
    case gguf_type::u64: case gguf_type::u32: case gguf_type::u16: case gguf_type::u8:
      return std::to_string(v.as_u64());
    case gguf_type::array: return "[array]";
    default: return std::to_string(v.as_i64());
  }
}

std::string value_text(const model_file::gguf_value& v, bool all) {
  if (v.type() != model_file::gguf_type::array) return scalar_text(v);
  const auto& items = v.as_array();
  std::string out = std::string(model_file::name(v.element_type())) + "[" + std::to_string(items.size()) + "] {";
  const std::size_t shown = all ? items.size() : std::min<std::size_t>(items.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += value_text(items[i], all);
  }
  out += shown < items.size() ? ", ...}" : "}";
  return out;
}
}  // namespace

void run_inspect(const std::string& path, bool all) {
  const auto f = model_file::gguf_file::open(path);
  std::printf("%s: GGUF v%u, %llu bytes, alignment %u, %zu metadata entries, %zu tensors\n\n", path.c_str(),
              f.version(), static_cast<unsigned long long>(f.file_size()), f.alignment(), f.metadata().size(),
              f.tensors().size());
  for (const auto& kv : f.metadata())
    std::printf("  %-45s %s\n", terminal_safe(kv.key).c_str(), value_text(kv.value, all).c_str());
  std::printf("\n  %-40s %-6s %-24s %12s %12s\n", "tensor", "type", "dims", "offset", "bytes");
  std::uint64_t total = 0;
  std::map<std::string, std::pair<std::size_t, std::uint64_t>> by_type;  // type -> (tensors, bytes)
  for (const auto& t : f.tensors()) {
    std::string dims;
    for (std::size_t i = 0; i < t.dims.size(); ++i) {
      if (i) dims += " x ";
      dims += std::to_string(t.dims[i]);
    }
    const auto type = model_file::ggml_type_name(t.ggml_type);
    char unknown[16];
    std::snprintf(unknown, sizeof unknown, "#%u", t.ggml_type);
    std::printf("  %-40s %-6s %-24s %12llu %12llu\n", terminal_safe(t.name).c_str(),
                type.empty() ? unknown : std::string(type).c_str(), dims.c_str(),
                static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.size));
    total += t.size;
    auto& [count, bytes] = by_type[type.empty() ? std::string(unknown) : std::string(type)];
    ++count;
    bytes += t.size;
  }
  std::printf("\n  %-8s %8s %16s %8s\n", "type", "tensors", "bytes", "share");
  for (const auto& [type, cb] : by_type)
    std::printf("  %-8s %8zu %16llu %7.1f%%\n", type.c_str(), cb.first, static_cast<unsigned long long>(cb.second),
                total ? 100.0 * double(cb.second) / double(total) : 0.0);
  std::printf("\n  %zu tensors, %llu bytes of tensor data\n", f.tensors().size(), static_cast<unsigned long long>(total));
}

void add_inspect(CLI::App& app) {
  struct args {
    std::string path;
    bool all = false;
  };
  auto a = std::make_shared<args>();
  auto* c = app.add_subcommand("inspect", "print a GGUF file's metadata and tensor table");
  c->footer(inspect_help);
  c->add_option("FILE.gguf", a->path, "the GGUF file")->required();
  c->add_flag("--all", a->all, "every item of metadata arrays, not only the first");
  c->callback([a] { run_inspect(a->path, a->all); });
}

}  // namespace octo::tool
