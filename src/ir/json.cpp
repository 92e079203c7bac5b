// The IR's JSON format (docs/ir.md §6) on nlohmann::ordered_json, which keeps key order so unknown params
// and meta keep theirs through a round trip. Loading reports the first problem as one line naming its
// field path; nothing escapes from_json as an exception.
#include "octo/ir/json.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "octo/error.hpp"
#include "octo/file_io.hpp"

namespace octo::ir {
namespace {

using json = nlohmann::ordered_json;

// Deeper documents are refused before parsing: nothing in a program nests this deep, and dumping a raw
// meta value recurses once per level.
constexpr int max_nesting = 256;

// ---- writing ---------------------------------------------------------------------------------------

std::string str(const text& t) { return std::string(t.view()); }

double finite_or_throw(double v, const std::string& path) {
  if (!std::isfinite(v)) throw octo::error("to_json: " + path + " is not finite, which JSON cannot hold");
  return v;
}

// JSON objects hold each key once; a program with a repeated key would lose an entry silently.
void put_unique(json& obj, const std::string& key, json value, const std::string& path) {
  if (obj.contains(key)) throw octo::error("to_json: " + path + " has the key \"" + key + "\" twice, which JSON cannot hold");
  obj[key] = std::move(value);
}

json write_param_list(const param_list& params, const std::string& path) {
  json o = json::object();
  for (const auto& p : params.items) {
    std::string key(p.key_name());
    put_unique(o, key, p.is_real ? json(finite_or_throw(p.f, path + "." + key)) : json(p.i), path);
  }
  return o;
}

json write_buffer(const buffer& b) {
  json o = json::object();
  o["id"] = b.id;
  o["name"] = str(b.name);
  o["kind"] = std::string(name(b.kind));
  o["dtype"] = std::string(name(b.dtype));
  o["shape"] = b.shape;
  o["space"] = std::string(name(b.space));
  o["source"] = b.source.empty() ? json(nullptr) : json(str(b.source));
  return o;
}

json write_task(const task& t) {
  json o = json::object();
  o["id"] = t.id;
  o["op"] = std::string(name(t.op));
  o["inputs"] = t.inputs;
  o["outputs"] = t.outputs;
  o["out_counter"] = t.out_counter;
  json waits = json::array();
  for (const auto& w : t.waits) waits.push_back(json{{"counter", w.counter}, {"threshold", w.threshold}});
  o["waits"] = std::move(waits);
  o["params"] = write_param_list(t.params, "tasks[" + std::to_string(t.id) + "].params");
  o["sm"] = t.sm < 0 ? json(nullptr) : json(t.sm);
  o["est_bytes"] = t.est_bytes;
  o["est_flops"] = t.est_flops;
  o["label"] = str(t.label);
  return o;
}

json write_target(const gpu_target& t) {
  json o = json::object();
  o["name"] = str(t.name);
  o["sm_arch"] = t.sm_arch;
  o["num_sms"] = t.num_sms;
  o["smem_bytes_per_sm"] = t.smem_bytes_per_sm;
  o["smem_bytes_per_block_optin"] = t.smem_bytes_per_block_optin;
  o["regs_per_sm"] = t.regs_per_sm;
  o["max_threads_per_sm"] = t.max_threads_per_sm;
  o["max_regs_per_thread"] = t.max_regs_per_thread;
  o["l2_bytes"] = t.l2_bytes;
  o["hbm_bytes"] = t.hbm_bytes;
  o["hbm_bandwidth_gbs"] = finite_or_throw(t.hbm_bandwidth_gbs, "target.hbm_bandwidth_gbs");
  o["fp16_tflops"] = finite_or_throw(t.fp16_tflops, "target.fp16_tflops");
  o["clock_ghz"] = finite_or_throw(t.clock_ghz, "target.clock_ghz");
  o["supports_cooperative"] = t.supports_cooperative;
  o["wddm_tdr"] = t.wddm_tdr;
  o["note"] = str(t.note);
  return o;
}

json write_config(const schedule_config& c) {
  json o = json::object();
  json tiling = json::object();  // grouped by archetype, in order of first appearance
  for (const auto& t : c.tiling) {
    json& keys = tiling[str(t.archetype)];
    if (keys.is_null()) keys = json::object();
    put_unique(keys, str(t.key), t.value, "config.tiling." + str(t.archetype));
  }
  o["tiling"] = std::move(tiling);
  json groups = json::array();
  for (const auto& g : c.fusion_grouping) {
    json names = json::array();
    for (const auto& n : g) names.push_back(str(n));
    groups.push_back(std::move(names));
  }
  o["fusion_grouping"] = std::move(groups);
  if (c.sm_assignment == sm_assignment_mode::explicit_map) {
    json m = json::object();  // JSON keys are strings; re-parsed as task ids on load
    for (const auto& b : c.sm_map) put_unique(m, std::to_string(b.task), b.sm, "config.sm_assignment");
    o["sm_assignment"] = std::move(m);
  } else {
    o["sm_assignment"] = std::string(name(c.sm_assignment));
  }
  o["pipelining_depth"] = c.pipelining_depth;
  o["page_allocation"] = std::string(name(c.page_allocation));
  o["threads_per_block"] = c.threads_per_block;
  o["smem_bytes_per_block"] = c.smem_bytes_per_block;
  return o;
}

json write_pages(const page_allocation& pa) {
  json map = json::object();
  for (const auto& b : pa.buffer_to_page) put_unique(map, std::to_string(b.buffer), b.page, "pages.buffer_to_page");
  json pages = json::array();
  for (const auto& p : pa.pages)
    pages.push_back(json{{"id", p.id},
                         {"space", std::string(name(p.space))},
                         {"nbytes", p.nbytes},
                         {"live_start", p.live_start},
                         {"live_end", p.live_end}});
  json o = json::object();
  o["buffer_to_page"] = std::move(map);
  o["pages"] = std::move(pages);
  return o;
}

json write_program(const program& p) {
  json o = json::object();
  o["ir_version"] = str(p.ir_version);
  o["abi_version"] = str(p.abi_version);
  json meta = json::object();
  for (const auto& m : p.meta) {
    if (!m.raw_json) {
      put_unique(meta, str(m.key), str(m.value), "meta");
      continue;
    }
    json v = json::parse(m.value.view(), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) throw octo::error("to_json: meta." + str(m.key) + " is marked raw_json but is not JSON");
    put_unique(meta, str(m.key), std::move(v), "meta");
  }
  o["meta"] = std::move(meta);
  o["target"] = p.has_target ? write_target(p.target) : json(nullptr);
  json buffers = json::array();
  for (const auto& b : p.buffers) buffers.push_back(write_buffer(b));
  o["buffers"] = std::move(buffers);
  json counters = json::array();
  for (const auto& c : p.counters) counters.push_back(json{{"id", c.id}, {"init", c.init}, {"note", str(c.note)}});
  o["counters"] = std::move(counters);
  json tasks = json::array();
  for (const auto& t : p.tasks) tasks.push_back(write_task(t));
  o["tasks"] = std::move(tasks);
  o["pages"] = p.has_pages ? write_pages(p.pages) : json(nullptr);
  o["config"] = p.has_config ? write_config(p.config) : json(nullptr);
  return o;
}

// ---- reading ---------------------------------------------------------------------------------------

// Thrown inside the reader only; from_json turns it into the error value.
struct load_error {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw load_error{path + ": " + what}; }

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      q += '?';
      continue;
    }
    q += c;
  }
  return q + "\"";
}

[[noreturn]] void wrong_type(const std::string& path, std::string_view expected, const json& v) {
  fail(path, "expected " + std::string(expected) + ", got " + v.type_name());
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

const json& object_at(const json& v, const std::string& path) {
  if (!v.is_object()) wrong_type(path, "an object", v);
  return v;
}
const json& array_at(const json& v, const std::string& path) {
  if (!v.is_array()) wrong_type(path, "an array", v);
  return v;
}

/// The member `key` of object `o` (already checked to be an object), or nullptr when absent.
const json* member(const json& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}
const json& required(const json& o, std::string_view key, const std::string& path) {
  const json* v = member(o, key);
  if (!v) fail(child(path, key), "missing");
  return *v;
}

std::int64_t integer(const json& v, const std::string& path, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer()) wrong_type(path, "an integer", v);
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi))
      fail(path, std::to_string(u) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<std::int64_t>(u);
  }
  auto i = v.get<std::int64_t>();
  if (i < lo || i > hi)
    fail(path, std::to_string(i) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return i;
}

constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t int32_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

/// A non-negative int32: ids, references to ids, counts.
std::int32_t id_at(const json& v, const std::string& path) {
  return static_cast<std::int32_t>(integer(v, path, 0, int32_max));
}
std::int32_t int32_at(const json& v, const std::string& path, std::int64_t lo = int32_min) {
  return static_cast<std::int32_t>(integer(v, path, lo, int32_max));
}

double real_at(const json& v, const std::string& path) {
  if (!v.is_number()) wrong_type(path, "a number", v);
  double d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "number out of range");
  return d;
}

std::string string_at(const json& v, const std::string& path) {
  if (!v.is_string()) wrong_type(path, "a string", v);
  return v.get<std::string>();
}

bool bool_at(const json& v, const std::string& path) {
  if (!v.is_boolean()) wrong_type(path, "true or false", v);
  return v.get<bool>();
}

template <class E>
E enum_at(const json& v, const std::string& path, std::string_view what) {
  std::string s = string_at(v, path);
  auto e = parse<E>(s);
  if (!e) fail(path, "unknown " + std::string(what) + " " + quote(s));
  return *e;
}

/// A JSON object key holding a non-negative int32 in canonical decimal (buffer_to_page, explicit sm maps).
/// No leading zeros: "08" and "8" would name one id under two keys, which the program would hold twice
/// and to_json could not write back (found by fuzz_ir_json).
std::int32_t id_key(const std::string& key, const std::string& path) {
  bool digits = !key.empty() && key.size() <= 10 && (key.size() == 1 || key[0] != '0');
  std::int64_t v = 0;
  for (char c : key) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    v = v * 10 + (c - '0');
  }
  if (!digits || v > int32_max) fail(path, "key " + quote(key) + " is not an id");
  return static_cast<std::int32_t>(v);
}

std::vector<std::int32_t> id_list(const json& v, const std::string& path) {
  array_at(v, path);
  std::vector<std::int32_t> ids;
  ids.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) ids.push_back(id_at(v[i], index(path, i)));
  return ids;
}

void read_version(const json& doc) {
  std::string v = string_at(required(doc, "ir_version", ""), "ir_version");
  // MAJOR[.MINOR[.PATCH...]], all decimal.
  bool ok = !v.empty() && v.front() != '.' && v.back() != '.';
  for (std::size_t i = 0; ok && i < v.size(); ++i)
    ok = (v[i] >= '0' && v[i] <= '9') || (v[i] == '.' && v[i - 1] != '.');
  if (!ok) fail("ir_version", quote(v) + " is not a version number");
  auto major = [](std::string_view s) { return s.substr(0, s.find('.')); };
  auto strip = [](std::string_view s) {  // "00" and "0" are the same major
    while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
    return s;
  };
  if (strip(major(v)) != strip(major(ir_version)))
    throw load_error{"ir_version " + v + " is not compatible with this octo (" + std::string(ir_version) + ")"};
}

buffer read_buffer(const json& v, const std::string& path) {
  object_at(v, path);
  buffer b;
  b.id = id_at(required(v, "id", path), child(path, "id"));
  b.name = string_at(required(v, "name", path), child(path, "name"));
  b.kind = enum_at<buffer_kind>(required(v, "kind", path), child(path, "kind"), "buffer kind");
  b.dtype = enum_at<ir::dtype>(required(v, "dtype", path), child(path, "dtype"), "dtype");
  std::string sp = child(path, "shape");
  const json& shape = array_at(required(v, "shape", path), sp);
  // Element counts beyond 2^62 would overflow numel()/nbytes() downstream; no real tensor is near it.
  constexpr std::int64_t max_elems = std::int64_t{1} << 62;
  std::int64_t numel = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::int64_t d = integer(shape[i], index(sp, i), 0, max_elems);
    b.shape.push_back(d);
    if (d != 0 && numel > max_elems / d) fail(sp, "more than 2^62 elements");
    numel *= d;
  }
  if (const json* s = member(v, "space")) b.space = enum_at<mem_space>(*s, child(path, "space"), "memory space");
  if (const json* s = member(v, "source"); s && !s->is_null()) b.source = string_at(*s, child(path, "source"));
  return b;
}

counter read_counter(const json& v, const std::string& path) {
  object_at(v, path);
  counter c;
  c.id = id_at(required(v, "id", path), child(path, "id"));
  if (const json* i = member(v, "init")) c.init = int32_at(*i, child(path, "init"));
  if (const json* n = member(v, "note")) c.note = string_at(*n, child(path, "note"));
  return c;
}

param_list read_params(const json& v, const std::string& path) {
  object_at(v, path);
  param_list out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string p = child(path, it.key());
    param x;
    if (auto k = parse_param_key(it.key()))
      x.key = *k;
    else
      x.unknown_name = text(it.key());
    const json& val = it.value();
    if (val.is_number_integer()) {
      x.i = integer(val, p, int64_min, int64_max);
    } else if (val.is_number_float()) {
      x.is_real = true;
      x.f = real_at(val, p);
    } else {
      wrong_type(p, "a number", val);
    }
    out.items.push_back(std::move(x));
  }
  return out;
}

task read_task(const json& v, const std::string& path) {
  object_at(v, path);
  task t;
  t.id = id_at(required(v, "id", path), child(path, "id"));
  t.op = enum_at<opcode>(required(v, "op", path), child(path, "op"), "opcode");
  t.inputs = id_list(required(v, "inputs", path), child(path, "inputs"));
  t.outputs = id_list(required(v, "outputs", path), child(path, "outputs"));
  t.out_counter = id_at(required(v, "out_counter", path), child(path, "out_counter"));
  if (const json* w = member(v, "waits")) {
    std::string wp = child(path, "waits");
    array_at(*w, wp);
    for (std::size_t i = 0; i < w->size(); ++i) {
      std::string ip = index(wp, i);
      const json& e = object_at((*w)[i], ip);
      t.waits.push_back(wait{id_at(required(e, "counter", ip), child(ip, "counter")),
                             int32_at(required(e, "threshold", ip), child(ip, "threshold"))});
    }
  }
  if (const json* p = member(v, "params")) t.params = read_params(*p, child(path, "params"));
  if (const json* s = member(v, "sm"); s && !s->is_null()) t.sm = id_at(*s, child(path, "sm"));
  if (const json* e = member(v, "est_bytes")) t.est_bytes = integer(*e, child(path, "est_bytes"), 0, int64_max);
  if (const json* e = member(v, "est_flops")) t.est_flops = integer(*e, child(path, "est_flops"), 0, int64_max);
  if (const json* l = member(v, "label")) t.label = string_at(*l, child(path, "label"));
  return t;
}

// Only "name" is required: every other field has the gpu_target default, and unknown (newer) fields are
// dropped, so a document from a newer octo, or a hand-written one, still loads.
gpu_target read_target(const json& v) {
  const std::string path = "target";
  object_at(v, path);
  gpu_target t;
  t.name = string_at(required(v, "name", path), "target.name");
  auto i32 = [&](std::string_view key, std::int32_t& dst) {
    if (const json* e = member(v, key)) dst = id_at(*e, child(path, key));
  };
  auto i64 = [&](std::string_view key, std::int64_t& dst) {
    if (const json* e = member(v, key)) dst = integer(*e, child(path, key), 0, int64_max);
  };
  auto real = [&](std::string_view key, double& dst) {
    if (const json* e = member(v, key)) dst = real_at(*e, child(path, key));
  };
  auto flag = [&](std::string_view key, bool& dst) {
    if (const json* e = member(v, key)) dst = bool_at(*e, child(path, key));
  };
  i32("sm_arch", t.sm_arch);
  i32("num_sms", t.num_sms);
  i64("smem_bytes_per_sm", t.smem_bytes_per_sm);
  i64("smem_bytes_per_block_optin", t.smem_bytes_per_block_optin);
  i64("regs_per_sm", t.regs_per_sm);
  i32("max_threads_per_sm", t.max_threads_per_sm);
  i32("max_regs_per_thread", t.max_regs_per_thread);
  i64("l2_bytes", t.l2_bytes);
  i64("hbm_bytes", t.hbm_bytes);
  real("hbm_bandwidth_gbs", t.hbm_bandwidth_gbs);
  real("fp16_tflops", t.fp16_tflops);
  real("clock_ghz", t.clock_ghz);
  flag("supports_cooperative", t.supports_cooperative);
  flag("wddm_tdr", t.wddm_tdr);
  if (const json* e = member(v, "note")) t.note = string_at(*e, "target.note");
  return t;
}

// Every field has the ScheduleConfig default; unknown fields are dropped.
schedule_config read_config(const json& v) {
  const std::string path = "config";
  object_at(v, path);
  schedule_config c;
  if (const json* t = member(v, "tiling")) {
    std::string tp = child(path, "tiling");
    object_at(*t, tp);
    for (auto a = t->begin(); a != t->end(); ++a) {
      std::string ap = child(tp, a.key());
      object_at(a.value(), ap);
      for (auto k = a.value().begin(); k != a.value().end(); ++k)
        c.tiling.push_back({text(a.key()), text(k.key()), integer(k.value(), child(ap, k.key()), int64_min, int64_max)});
    }
  }
  if (const json* f = member(v, "fusion_grouping")) {
    std::string fp = child(path, "fusion_grouping");
    array_at(*f, fp);
    for (std::size_t i = 0; i < f->size(); ++i) {
      std::string gp = index(fp, i);
      const json& g = array_at((*f)[i], gp);
      std::vector<text> names;
      for (std::size_t j = 0; j < g.size(); ++j) names.emplace_back(string_at(g[j], index(gp, j)));
      c.fusion_grouping.push_back(std::move(names));
    }
  }
  if (const json* s = member(v, "sm_assignment")) {
    std::string sp = child(path, "sm_assignment");
    if (s->is_string()) {
      std::string m = s->get<std::string>();
      if (m == "round_robin")
        c.sm_assignment = sm_assignment_mode::round_robin;
      else if (m == "load_balance")
        c.sm_assignment = sm_assignment_mode::load_balance;
      else
        fail(sp, "unknown sm assignment " + quote(m) + " (round_robin, load_balance or {task_id: sm})");
    } else if (s->is_object()) {
      c.sm_assignment = sm_assignment_mode::explicit_map;
      for (auto it = s->begin(); it != s->end(); ++it)
        c.sm_map.push_back({id_key(it.key(), sp), id_at(it.value(), child(sp, it.key()))});
    } else {
      wrong_type(sp, "a string or an object", *s);
    }
  }
  if (const json* e = member(v, "pipelining_depth")) c.pipelining_depth = id_at(*e, "config.pipelining_depth");
  if (const json* e = member(v, "page_allocation")) {
    std::string m = string_at(*e, "config.page_allocation");
    if (m == "linear")
      c.page_allocation = page_allocation_mode::linear;
    else if (m == "graph_color")
      c.page_allocation = page_allocation_mode::graph_color;
    else if (m == "none")
      c.page_allocation = page_allocation_mode::none;
    else
      fail("config.page_allocation", "unknown page allocation " + quote(m) + " (linear, graph_color or none)");
  }
  if (const json* e = member(v, "threads_per_block")) c.threads_per_block = id_at(*e, "config.threads_per_block");
  if (const json* e = member(v, "smem_bytes_per_block"))
    c.smem_bytes_per_block = id_at(*e, "config.smem_bytes_per_block");
  return c;
}

page_allocation read_pages(const json& v) {
  const std::string path = "pages";
  object_at(v, path);
  page_allocation pa;
  const std::string mp = "pages.buffer_to_page";
  const json& map = object_at(required(v, "buffer_to_page", path), mp);
  // Document order is kept (not re-sorted), so from_json(to_json(p)) == p for any p.
  for (auto it = map.begin(); it != map.end(); ++it)
    pa.buffer_to_page.push_back({id_key(it.key(), mp), id_at(it.value(), child(mp, it.key()))});
  const std::string pp = "pages.pages";
  const json& pages = array_at(required(v, "pages", path), pp);
  for (std::size_t i = 0; i < pages.size(); ++i) {
    std::string ip = index(pp, i);
    const json& e = object_at(pages[i], ip);
    page p;
    p.id = id_at(required(e, "id", ip), child(ip, "id"));
    p.space = enum_at<mem_space>(required(e, "space", ip), child(ip, "space"), "memory space");
    p.nbytes = integer(required(e, "nbytes", ip), child(ip, "nbytes"), 0, int64_max);
    if (const json* s = member(e, "live_start")) p.live_start = int32_at(*s, child(ip, "live_start"), -1);
    if (const json* s = member(e, "live_end")) p.live_end = int32_at(*s, child(ip, "live_end"), -1);
    pa.pages.push_back(p);
  }
  return pa;
}

program read_program(const json& doc) {
  if (!doc.is_object()) fail("document", std::string("expected an object, got ") + doc.type_name());
  read_version(doc);  // first, so a document of another major version gets the version message
  program p;
  p.ir_version = string_at(required(doc, "ir_version", ""), "ir_version");
  p.abi_version = string_at(required(doc, "abi_version", ""), "abi_version");
  if (const json* m = member(doc, "meta"); m && !m->is_null()) {
    object_at(*m, "meta");
    for (auto it = m->begin(); it != m->end(); ++it) {
      if (it.value().is_string())
        p.meta.push_back({text(it.key()), text(it.value().get<std::string>()), false});
      else
        p.meta.push_back({text(it.key()), text(it.value().dump()), true});
    }
  }
  if (const json* t = member(doc, "target"); t && !t->is_null()) {
    p.target = read_target(*t);
    p.has_target = true;
  }
  const json& buffers = array_at(required(doc, "buffers", ""), "buffers");
  for (std::size_t i = 0; i < buffers.size(); ++i) p.buffers.push_back(read_buffer(buffers[i], index("buffers", i)));
  const json& counters = array_at(required(doc, "counters", ""), "counters");
  for (std::size_t i = 0; i < counters.size(); ++i)
    p.counters.push_back(read_counter(counters[i], index("counters", i)));
  const json& tasks = array_at(required(doc, "tasks", ""), "tasks");
  for (std::size_t i = 0; i < tasks.size(); ++i) p.tasks.push_back(read_task(tasks[i], index("tasks", i)));
  if (const json* pg = member(doc, "pages"); pg && !pg->is_null()) {
    p.pages = read_pages(*pg);
    p.has_pages = true;
  }
  if (const json* c = member(doc, "config"); c && !c->is_null()) {
    p.config = read_config(*c);
    p.has_config = true;
  }
  return p;
}

/// The deepest [ / { nesting of `s` outside strings, stopping early past `limit`.
int nesting_depth(std::string_view s, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

std::string to_json(const program& p, int indent) {
  json doc = write_program(p);
  try {
    return doc.dump(indent < 0 ? -1 : indent);
  } catch (const json::type_error& e) {  // 316: a string is not UTF-8
    throw octo::error(std::string("to_json: a name, label or note is not valid UTF-8 (") + e.what() + ")");
  }
}

json_result from_json(std::string_view text) {
  json_result r;
  try {
    if (nesting_depth(text, max_nesting) > max_nesting) {
      r.error = "malformed JSON: nested deeper than " + std::to_string(max_nesting) + " levels";
      return r;
    }
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, or out_of_range 406 for a number like 1e999
      r.error = "malformed JSON: " + octo::library_text(e.what());
      return r;
    }
    r.value = read_program(doc);
  } catch (const load_error& e) {
    r.error = e.message;
  } catch (const std::exception& e) {  // out of memory, or a nlohmann invariant we did not foresee
    r.error = std::string("cannot load program: ") + octo::library_text(e.what());
  }
  if (!r.error.empty()) r.value.reset();
  return r;
}

json_result load_program(const std::filesystem::path& path) {
  std::string text;
  try {
    text = read_file_text(path);  // a FIFO or a device is an error, never a wait
  } catch (const octo::error& e) {
    json_result r;
    r.error = std::string("cannot read ") + e.what();
    return r;
  }
  json_result r = from_json(text);
  if (!r) r.error = path.string() + ": " + r.error;
  return r;
}

void save_program(const program& p, const std::filesystem::path& path) {
  std::string s = to_json(p, 2);
  s += '\n';
  octo::output_file out(path);  // an existing file is replaced only by a complete one
  out.write(std::as_bytes(std::span(s)));
  out.commit();
}

}  // namespace octo::ir
