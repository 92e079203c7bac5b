// manifest.json of a decomposed model: JSON reading with one-line errors naming the field, consistency
// checks (layers complete, tensors inside their files, aligned), file checks, XXH3 checksums.
#include "octo/stream/manifest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/gguf.hpp"
#include "posix_io.hpp"

namespace octo::stream {

using nlohmann::json;

std::string_view name(compression c) {
  switch (c) {
    case compression::none: return "none";
    case compression::zstd: return "zstd";
  }
  return "?";
}

namespace {

std::string_view role_name(file_role r) {
  switch (r) {
    case file_role::embed: return "embed";
    case file_role::head: return "head";
    case file_role::layer: return "layer";
  }
  return "?";
}

std::string shown(std::string_view s) { return octo::quoted(s, 120); }

bool parse_hex64(std::string_view s, std::uint64_t& out) {
  if (s.size() != 16) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    v = (v << 4) | std::uint64_t(d);
  }
  out = v;
  return true;
}

// Typed access to a JSON object's fields; errors name the field's path.
class reader {
 public:
  reader(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) throw octo::error(path_ + " is not an object");
  }
  const json& field(const char* k) const {
    auto it = j_.find(k);
    if (it == j_.end()) throw octo::error(where(k) + " is missing");
    return *it;
  }
  bool has(const char* k) const { return j_.contains(k); }
  std::string where(const char* k) const { return path_.empty() ? std::string(k) : path_ + "." + k; }
  std::string str(const char* k) const {
    const auto& v = field(k);
    if (!v.is_string()) throw octo::error(where(k) + " is not a string");
    return v.get<std::string>();
  }
  std::uint64_t u64(const char* k) const {
    const auto& v = field(k);
    if (!v.is_number_unsigned()) throw octo::error(where(k) + " is not a non-negative integer");
    return v.get<std::uint64_t>();
  }
  std::int64_t i64(const char* k) const {
    const auto& v = field(k);
    if (!v.is_number_integer()) throw octo::error(where(k) + " is not an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
      throw octo::error(where(k) + " is out of range");
    return v.get<std::int64_t>();
  }
  double real(const char* k) const {
    const auto& v = field(k);
    if (!v.is_number()) throw octo::error(where(k) + " is not a number");
    return v.get<double>();
  }
  bool boolean(const char* k) const {
    const auto& v = field(k);
    if (!v.is_boolean()) throw octo::error(where(k) + " is not true or false");
    return v.get<bool>();
  }
  std::uint64_t hex(const char* k) const {
    std::uint64_t v = 0;
    if (!parse_hex64(str(k), v)) throw octo::error(where(k) + " is not 16 lower-case hex digits");
    return v;
  }
  const json& array(const char* k) const {
    const auto& v = field(k);
    if (!v.is_array()) throw octo::error(where(k) + " is not an array");
    return v;
  }

 private:
  const json& j_;
  std::string path_;
};

json config_json(const stored_config& c) {
  json j{{"architecture", c.architecture}, {"vocab", c.vocab},          {"hidden", c.hidden},
              {"layers", c.layers},             {"heads", c.heads},          {"kv_heads", c.kv_heads},
              {"head_dim", c.head_dim},         {"ffn", c.ffn},              {"rope_theta", c.rope_theta},
              {"rms_eps", c.rms_eps},           {"tied_embeddings", c.tied_embeddings},
              {"qkv_bias", c.qkv_bias},         {"qk_norm", c.qk_norm},      {"rope", c.rope},
              {"max_ctx", c.max_ctx},           {"context_length", c.context_length},
              {"weight_dtype", std::string(ir::name(c.weight_dtype))}};
  if (c.rope_low_scale != 1.0) j["rope_ramp"] = json::array({c.rope_low_scale, c.rope_ramp_slope, c.rope_ramp_offset});
  return j;
}

stored_config config_of(const reader& r) {
  stored_config c;
  c.architecture = r.str("architecture");
  c.vocab = r.i64("vocab");
  c.hidden = r.i64("hidden");
  c.layers = r.i64("layers");
  c.heads = r.i64("heads");
  c.kv_heads = r.i64("kv_heads");
  c.head_dim = r.i64("head_dim");
  c.ffn = r.i64("ffn");
  c.rope_theta = r.real("rope_theta");
  c.rms_eps = r.real("rms_eps");
  c.tied_embeddings = r.boolean("tied_embeddings");
  c.qkv_bias = r.boolean("qkv_bias");
  c.qk_norm = r.boolean("qk_norm");
  c.rope = r.str("rope");
  if (r.has("rope_ramp")) {
    const auto& a = r.array("rope_ramp");
    if (a.size() != 3 || !a[0].is_number() || !a[1].is_number() || !a[2].is_number())
      throw octo::error(r.where("rope_ramp") + " is not three numbers [low_scale, slope, offset]");
    c.rope_low_scale = a[0].get<double>();
    c.rope_ramp_slope = a[1].get<double>();
    c.rope_ramp_offset = a[2].get<double>();
    if (!(c.rope_low_scale > 0.0 && c.rope_low_scale < 1.0) || !(std::abs(c.rope_ramp_slope) < 1e30) ||
        !(std::abs(c.rope_ramp_offset) < 1e30))
      throw octo::error(r.where("rope_ramp") + " needs low_scale in (0, 1), and slope and offset under 1e30 in size");
  }
  c.max_ctx = r.i64("max_ctx");
  c.context_length = r.i64("context_length");
  const auto dt = ir::parse<ir::dtype>(r.str("weight_dtype"));
  if (!dt) throw octo::error(r.where("weight_dtype") + " names no element type");
  c.weight_dtype = *dt;
  for (auto [k, v] : {std::pair{"vocab", c.vocab}, {"hidden", c.hidden}, {"layers", c.layers}, {"heads", c.heads},
                      {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim}, {"ffn", c.ffn}, {"max_ctx", c.max_ctx},
                      {"context_length", c.context_length}})
    if (v <= 0 || v > (std::int64_t(1) << 40)) throw octo::error(r.where(k) + " = " + std::to_string(v) + " is not a positive size");
  if (c.layers > 100000) throw octo::error(r.where("layers") + " is implausibly large");
  if (c.rope != "neox" && c.rope != "interleaved") throw octo::error(r.where("rope") + " is neither \"neox\" nor \"interleaved\"");
  return c;
}

bool safe_name(std::string_view n) {
  if (n.empty() || n == "." || n == ".." || n.size() > 255) return false;
  for (unsigned char c : n)
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return false;
  return true;
}

json file_json(const file_entry& f) {
  json j{{"name", f.name},           {"role", std::string(role_name(f.role))}, {"stored_bytes", f.stored_bytes},
         {"raw_bytes", f.raw_bytes}, {"compression", std::string(name(f.comp))}, {"xxh3", hex64(f.xxh3)}};
  if (f.role == file_role::layer) j["layer"] = f.layer;
  return j;
}

file_entry file_from_json(const reader& r, bool meta) {
  file_entry f;
  f.name = r.str("name");
  if (!safe_name(f.name)) throw octo::error(r.where("name") + " " + shown(f.name) + " is not a plain file name");
  f.stored_bytes = r.u64("stored_bytes");
  f.raw_bytes = r.u64("raw_bytes");
  f.xxh3 = r.hex("xxh3");
  const std::string c = r.str("compression");
  if (c == "none") f.comp = compression::none;
  else if (c == "zstd") f.comp = compression::zstd;
  else throw octo::error(r.where("compression") + " " + shown(c) + " is not \"none\" or \"zstd\"");
  if (meta) return f;
  const std::string role = r.str("role");
  if (role == "embed") f.role = file_role::embed;
  else if (role == "head") f.role = file_role::head;
  else if (role == "layer") {
    f.role = file_role::layer;
    f.layer = r.i64("layer");
  } else throw octo::error(r.where("role") + " " + shown(role) + " is not embed, head or layer");
  return f;
}

}  // namespace

std::string hex64(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::uint64_t xxh3_64(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::uint64_t xxh3_64_file(const std::filesystem::path& path) {
  detail::fd_handle fd(open_regular_file(path));
  XXH3_state_t* st = XXH3_createState();
  if (!st) throw octo::error("out of memory for a checksum state");
  XXH3_64bits_reset(st);
  std::vector<std::byte> buf(std::size_t(4) << 20);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      XXH3_freeState(st);
      throw octo::error(path.string() + ": read failed: " + detail::errno_text(e));
    }
    if (n == 0) break;
    XXH3_64bits_update(st, buf.data(), std::size_t(n));
  }
  const auto h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

source_info describe_source(const std::filesystem::path& gguf) {
  const auto f = model_file::gguf_file::open(gguf);
  source_info s;
  s.name = gguf.filename().string();
  s.bytes = f.file_size();
  // The header region: magic, counts, metadata and the tensor directory (everything before the data).
  detail::fd_handle fd(::open(gguf.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw octo::error(gguf.string() + ": cannot open: " + detail::errno_text(errno));
  std::vector<std::byte> head(std::size_t(f.data_offset()));
  std::size_t done = 0;
  while (done < head.size()) {
    const ssize_t n = ::pread(fd.get(), head.data() + done, head.size() - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw octo::error(gguf.string() + ": cannot read its header");
    done += std::size_t(n);
  }
  s.header_xxh3 = xxh3_64(head);
  return s;
}

// ---- manifest -------------------------------------------------------------------------------------------

void manifest::fail(const std::string& problem) const {
  throw octo::error((dir_.empty() ? std::string("manifest") : (dir_ / "manifest.json").string()) + ": " + problem);
}

manifest::manifest(std::filesystem::path dir, stored_config config, source_info source, std::uint64_t tensor_alignment,
                   file_entry meta, std::vector<file_entry> files, std::vector<tensor_entry> tensors)
    : dir_(std::move(dir)),
      config_(std::move(config)),
      source_(std::move(source)),
      tensor_alignment_(tensor_alignment),
      meta_(std::move(meta)),
      files_(std::move(files)),
      tensors_(std::move(tensors)) {
  index();
}

void manifest::index() {
  if (tensor_alignment_ < 16 || tensor_alignment_ > (1u << 20) || (tensor_alignment_ & (tensor_alignment_ - 1)) != 0)
    fail("tensor_alignment " + std::to_string(tensor_alignment_) + " is not a power of two from 16 to 1 MiB");
  if (!safe_name(meta_.name)) fail("meta file name " + shown(meta_.name) + " is not a plain file name");
  if (meta_.comp != compression::none || meta_.raw_bytes != meta_.stored_bytes)
    fail("the meta file must be stored uncompressed");
  layer_files_.assign(std::size_t(config_.layers), SIZE_MAX);
  std::size_t embeds = 0, heads = 0;
  std::map<std::string, std::size_t, std::less<>> names;
  names.emplace(meta_.name, SIZE_MAX);
  for (std::size_t i = 0; i < files_.size(); ++i) {
    auto& f = files_[i];
    const std::string at = "files[" + std::to_string(i) + "] " + shown(f.name);
    if (!safe_name(f.name)) fail(at + " is not a plain file name");
    if (!names.emplace(f.name, i).second) fail(at + " is listed twice");
    if (f.raw_bytes % io_alignment != 0)
      fail(at + ": raw_bytes " + std::to_string(f.raw_bytes) + " is not a multiple of " + std::to_string(io_alignment));
    if (f.comp == compression::none && f.stored_bytes != f.raw_bytes)
      fail(at + ": uncompressed but stored_bytes " + std::to_string(f.stored_bytes) + " != raw_bytes " +
           std::to_string(f.raw_bytes));
    f.tensors.clear();
    switch (f.role) {
      case file_role::embed:
        ++embeds;
        embed_index_ = i;
        break;
      case file_role::head:
        ++heads;
        head_index_ = i;
        break;
      case file_role::layer:
        if (f.layer < 0 || f.layer >= config_.layers)
          fail(at + ": layer " + std::to_string(f.layer) + " is outside the model's " + std::to_string(config_.layers) +
               " layers");
        if (layer_files_[std::size_t(f.layer)] != SIZE_MAX) fail(at + ": layer " + std::to_string(f.layer) + " has two files");
        layer_files_[std::size_t(f.layer)] = i;
        break;
    }
  }
  if (embeds != 1) fail("expected one embed file, found " + std::to_string(embeds));
  if (heads != 1) fail("expected one head file, found " + std::to_string(heads));
  for (std::size_t l = 0; l < layer_files_.size(); ++l)
    if (layer_files_[l] == SIZE_MAX) fail("no file for layer " + std::to_string(l));

  std::map<std::string_view, std::size_t> tnames;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    const std::string at = "tensor " + shown(t.name);
    if (t.name.empty()) fail("tensors[" + std::to_string(i) + "] has an empty name");
    if (!tnames.emplace(t.name, i).second) fail(at + " is listed twice");
    if (t.file >= files_.size()) fail(at + " names no listed file");
    auto& f = files_[t.file];
    if (t.offset % tensor_alignment_ != 0)
      fail(at + ": offset " + std::to_string(t.offset) + " is not a multiple of " + std::to_string(tensor_alignment_));
    if (t.offset > f.raw_bytes || t.bytes > f.raw_bytes - t.offset)
      fail(at + " (" + std::to_string(t.bytes) + " bytes at " + std::to_string(t.offset) + ") extends past the end of " +
           f.name + " (" + std::to_string(f.raw_bytes) + " bytes)");
    if (t.dims.empty() || t.dims.size() > 4) fail(at + " has " + std::to_string(t.dims.size()) + " dimensions");
    std::int64_t n = 1;
    for (auto d : t.dims) {
      if (d <= 0 || d > (std::int64_t(1) << 40) || n > (std::int64_t(1) << 50) / d) fail(at + " has a bad dimension");
      n *= d;
    }
    if (const auto dt = model_file::to_dtype(t.ggml_type)) {
      if (std::uint64_t(ir::nbytes(*dt, n)) != t.bytes)
        fail(at + ": " + std::to_string(t.bytes) + " bytes do not hold " + std::to_string(n) + " elements of " +
             std::string(ir::name(*dt)));
    } else if (model_file::ggml_type_name(t.ggml_type).empty()) {
      fail(at + " has unknown GGML type " + std::to_string(t.ggml_type));
    }
    f.tensors.push_back(i);
  }
  for (auto& f : files_) {
    std::sort(f.tensors.begin(), f.tensors.end(),
              [&](std::size_t a, std::size_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (std::size_t k = 1; k < f.tensors.size(); ++k) {
      const auto& p = tensors_[f.tensors[k - 1]];
      const auto& q = tensors_[f.tensors[k]];
      if (p.offset + p.bytes > q.offset) fail("tensors " + shown(p.name) + " and " + shown(q.name) + " overlap in " + f.name);
    }
  }
}

std::string manifest::to_json() const {
  json files = json::array();
  for (const auto& f : files_) files.push_back(file_json(f));
  json tensors = json::array();
  for (const auto& t : tensors_) {
    const auto tn = model_file::ggml_type_name(t.ggml_type);
    tensors.push_back(json{{"name", t.name},
                           {"type", std::string(tn.empty() ? "?" : tn)},
                           {"ggml_type", t.ggml_type},
                           {"shape", t.dims},
                           {"file", files_[t.file].name},
                           {"offset", t.offset},
                           {"bytes", t.bytes}});
  }
  json meta{{"name", meta_.name}, {"stored_bytes", meta_.stored_bytes}, {"raw_bytes", meta_.raw_bytes},
            {"compression", "none"}, {"xxh3", hex64(meta_.xxh3)}};
  json j{{"format", std::string(manifest_format)},
         {"version", manifest_version},
         {"source", {{"name", source_.name}, {"bytes", source_.bytes}, {"header_xxh3", hex64(source_.header_xxh3)}}},
         {"config", config_json(config_)},
         {"tensor_alignment", tensor_alignment_},
         {"meta", meta},
         {"files", files},
         {"tensors", tensors}};
  return j.dump(1) + "\n";
}

manifest manifest::parse(std::string_view text, const std::filesystem::path& dir) {
  manifest m;
  m.dir_ = dir;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and out_of_range for a number like 1e999
    m.fail(std::string("bad JSON: ") + octo::library_text(e.what()));
  }
  try {
    const reader r(j, "");
    const std::string format = r.str("format");
    if (format != manifest_format)
      throw octo::error("format " + shown(format) + " is not " + std::string(manifest_format));
    const auto version = r.i64("version");
    if (version != manifest_version)
      throw octo::error("format version " + std::to_string(version) + " is not supported (this octo reads version " +
                        std::to_string(manifest_version) + "; decompose the model again)");
    const reader src(r.field("source"), "source");
    m.source_.name = src.str("name");
    m.source_.bytes = src.u64("bytes");
    m.source_.header_xxh3 = src.hex("header_xxh3");
    m.config_ = config_of(reader(r.field("config"), "config"));
    m.tensor_alignment_ = r.u64("tensor_alignment");
    m.meta_ = file_from_json(reader(r.field("meta"), "meta"), true);
    const auto& files = r.array("files");
    std::map<std::string, std::size_t, std::less<>> by_name;
    for (std::size_t i = 0; i < files.size(); ++i) {
      m.files_.push_back(file_from_json(reader(files[i], "files[" + std::to_string(i) + "]"), false));
      by_name.emplace(m.files_.back().name, i);
    }
    const auto& tensors = r.array("tensors");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const reader t(tensors[i], "tensors[" + std::to_string(i) + "]");
      tensor_entry e;
      e.name = t.str("name");
      const auto g = t.u64("ggml_type");
      if (g > 0xffff) throw octo::error(t.where("ggml_type") + " is out of range");
      e.ggml_type = std::uint32_t(g);
      const auto& shape = t.array("shape");
      for (const auto& d : shape) {
        if (!d.is_number_unsigned()) throw octo::error(t.where("shape") + " holds a non-integer");
        e.dims.push_back(std::int64_t(std::min<std::uint64_t>(d.get<std::uint64_t>(), std::uint64_t(1) << 62)));
      }
      const std::string file = t.str("file");
      auto it = by_name.find(file);
      if (it == by_name.end()) throw octo::error(t.where("file") + " " + shown(file) + " is not in files");
      e.file = it->second;
      e.offset = t.u64("offset");
      e.bytes = t.u64("bytes");
      m.tensors_.push_back(std::move(e));
    }
  } catch (const octo::error& e) {
    m.fail(e.what());
  }
  m.index();
  return m;
}

manifest manifest::load(const std::filesystem::path& dir, verify_level level) {
  const auto path = dir / "manifest.json";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw octo::error(dir.string() + ": not a directory");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw octo::error(path.string() + ": missing (not a decomposed model directory, or an unfinished one)");
  manifest m = parse(read_file_text(path, std::uint64_t(1) << 30), dir);
  auto check_size = [&](const file_entry& f) {
    const auto p = dir / f.name;
    if (::stat(p.c_str(), &st) != 0) throw octo::error(p.string() + ": missing (" + detail::errno_text(errno) + ")");
    if (!S_ISREG(st.st_mode)) throw octo::error(p.string() + ": not a regular file");
    if (std::uint64_t(st.st_size) != f.stored_bytes)
      throw octo::error(p.string() + ": " + std::to_string(st.st_size) + " bytes, the manifest says " +
                        std::to_string(f.stored_bytes));
  };
  check_size(m.meta_);
  for (const auto& f : m.files_) check_size(f);
  if (level == verify_level::checksums) m.verify_all();
  return m;
}

const file_entry& manifest::layer_file(std::int64_t layer) const {
  if (layer < 0 || layer >= layer_count())
    throw octo::error("layer " + std::to_string(layer) + " is out of range (" + std::to_string(layer_count()) + " layers)");
  return files_[layer_files_[std::size_t(layer)]];
}

const file_entry* manifest::find_file(std::string_view n) const {
  if (n == meta_.name) return &meta_;
  for (const auto& f : files_)
    if (f.name == n) return &f;
  return nullptr;
}

const tensor_entry* manifest::find_tensor(std::string_view n) const {
  for (const auto& t : tensors_)
    if (t.name == n) return &t;
  return nullptr;
}

std::uint64_t manifest::max_layer_bytes() const {
  std::uint64_t m = 0;
  for (auto i : layer_files_) m = std::max(m, files_[i].raw_bytes);
  return m;
}

std::uint64_t manifest::total_raw_bytes() const {
  std::uint64_t s = 0;
  for (const auto& f : files_) s += f.raw_bytes;
  return s;
}

std::uint64_t manifest::total_stored_bytes() const {
  std::uint64_t s = 0;
  for (const auto& f : files_) s += f.stored_bytes;
  return s;
}

void manifest::check_source(const source_info& src) const {
  if (src == source_) return;
  throw octo::error(dir_.string() + " was decomposed from " + source_.name + " (" + std::to_string(source_.bytes) +
                    " bytes, header " + hex64(source_.header_xxh3) + "), not from " + src.name + " (" +
                    std::to_string(src.bytes) + " bytes, header " + hex64(src.header_xxh3) + "): another model version");
}

void manifest::verify_file(const file_entry& f) const {
  const auto p = path_of(f);
  const auto h = xxh3_64_file(p);
  if (h != f.xxh3)
    throw octo::error(p.string() + ": checksum mismatch (XXH3 " + hex64(h) + ", the manifest says " + hex64(f.xxh3) +
                      "): the file is corrupt");
}

void manifest::verify_all() const {
  verify_file(meta_);
  for (const auto& f : files_) verify_file(f);
}

}  // namespace octo::stream
