// The IR's JSON format (docs/ir.md §6): the spec's example document, exact output text, round trips over
// generated programs, forward compatibility, version checks, and malformed input giving error values.
#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

// Only the test uses the JSON library directly: to mutate documents field by field.
#include <nlohmann/json.hpp>

#include <octo/error.hpp>
#include <octo/ir/json.hpp>
#include <octo/ir/validate.hpp>
#include <octo/models/configs.hpp>
#include <octo/models/decoder.hpp>

using namespace octo::ir;

namespace {

// docs/ir.md §6, verbatim (the "..." entry of target stands for fields the example leaves out).
constexpr const char* spec_example = R"({
  "ir_version": "0.2.0",
  "abi_version": "0.2",
  "meta": {"model": "toy", "gpu": "rtx5090"},
  "target": {"name": "rtx5090", "sm_arch": 120, "num_sms": 82, "...": "..."},
  "buffers": [
    {"id": 0, "name": "x", "kind": "IO_INPUT", "dtype": "F16",
     "shape": [1, 16], "space": "HBM", "source": null},
    {"id": 1, "name": "proj.w", "kind": "WEIGHT", "dtype": "F16",
     "shape": [16, 16], "space": "HBM", "source": "proj.weight"}
  ],
  "counters": [{"id": 0, "init": 0, "note": "rmsnorm done"}],
  "tasks": [
    {"id": 0, "op": "RMSNORM", "inputs": [0, 2], "outputs": [3], "out_counter": 0,
     "waits": [], "params": {"eps": 1e-06, "hidden": 16}, "sm": null,
     "est_bytes": 0, "est_flops": 0, "label": "rmsnorm"},
    {"id": 1, "op": "GEMV_TILE", "inputs": [3, 1], "outputs": [4], "out_counter": 1,
     "waits": [{"counter": 0, "threshold": 1}],
     "params": {"K": 16, "N_tile": 16, "n_off": 0}, "sm": null, "label": "gemv"}
  ],
  "pages": {"buffer_to_page": {"3": 0, "4": 0}, "pages": [
    {"id": 0, "space": "SMEM", "nbytes": 64, "live_start": 0, "live_end": 1}]},
  "config": {"tiling": {}, "fusion_grouping": [], "sm_assignment": "load_balance",
             "pipelining_depth": 2, "page_allocation": "graph_color",
             "threads_per_block": 256, "smem_bytes_per_block": 0}
})";

program parse_ok(std::string_view s) {
  auto r = from_json(s);
  INFO(r.error);
  REQUIRE(r);
  CHECK(r.error.empty());
  return *r.value;
}

std::string parse_error(std::string_view s) {
  auto r = from_json(s);
  CHECK_FALSE(r);
  CHECK_FALSE(r.value.has_value());
  CHECK_FALSE(r.error.empty());
  return r.error;
}

// "k" + std::to_string(i) trips a false -Wstringop-overflow in g++ 12 at -O3.
std::string numbered(const char* prefix, std::size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// ---- a seeded generator of programs: every field, no validity (JSON only checks the document's shape) --

struct generator {
  std::mt19937_64 rng;
  explicit generator(std::uint64_t seed) : rng(seed) {}

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  bool coin(int percent = 50) { return uniform(0, 99) < percent; }
  std::int32_t id() { return static_cast<std::int32_t>(coin(90) ? uniform(0, 40) : uniform(0, INT32_MAX)); }

  text word() {
    // ASCII, JSON escapes (quote, backslash, control characters) and multi-byte UTF-8.
    static const std::vector<std::string> pieces{"a", "b", "layer", ".", "_", "0", "9", " ", "\"", "\\", "/",
                                                 "\n", "\t", std::string(1, '\x01'), "\xc3\xa9", "\xe2\x82\xac",
                                                 "\xf0\x9f\x98\x80", "weight", "K", "{", "]"};
    std::string s;
    auto n = uniform(0, 8);
    for (int i = 0; i < n; ++i) s += pieces[static_cast<std::size_t>(uniform(0, std::int64_t(pieces.size()) - 1))];
    return text(s);
  }

  double real() {
    switch (uniform(0, 5)) {
      case 0: {  // any finite bit pattern: subnormals, huge, tiny
        for (;;) {
          double d = std::bit_cast<double>(static_cast<std::uint64_t>(rng()));
          if (std::isfinite(d)) return d;
        }
      }
      case 1: return static_cast<double>(uniform(-1000, 1000));  // integral reals must stay real
      case 2: return 1e-06;
      case 3: return std::uniform_real_distribution<double>(-10, 10)(rng);
      case 4: return coin() ? DBL_MAX : DBL_TRUE_MIN;
      default: return 0.1 * static_cast<double>(uniform(1, 99));
    }
  }
  std::int64_t integer() {
    switch (uniform(0, 3)) {
      case 0: return INT64_MIN + uniform(0, 2);
      case 1: return INT64_MAX - uniform(0, 2);
      default: return uniform(-100000, 100000);
    }
  }

  param_list params() {
    param_list ps;
    auto n = uniform(0, 6);
    for (int i = 0; i < n; ++i) {
      param p;
      if (coin(80)) {
        p.key = static_cast<param_key>(uniform(0, param_key_count - 1));
        bool dup = false;
        for (const auto& q : ps.items) dup = dup || q.key == p.key;
        if (dup) continue;
      } else {
        p.unknown_name = text("x_" + std::to_string(i) + "_" + std::to_string(uniform(0, 9)));  // unique
      }
      if (coin()) {
        p.is_real = true;
        p.f = real();
      } else {
        p.i = integer();
      }
      ps.items.push_back(p);
    }
    return ps;
  }

  std::vector<std::int64_t> shape() {
    std::vector<std::int64_t> s;
    auto rank = uniform(0, 5);
    for (int i = 0; i < rank; ++i) s.push_back(uniform(0, 4096));
    return s;
  }

  gpu_target target() {
    if (coin()) {
      auto names = target_names();
      return *find_target(names[static_cast<std::size_t>(uniform(0, std::int64_t(names.size()) - 1))]);
    }
    gpu_target t;
    t.name = word();
    t.sm_arch = static_cast<std::int32_t>(uniform(0, 200));
    t.num_sms = static_cast<std::int32_t>(uniform(0, 300));
    t.smem_bytes_per_sm = uniform(0, INT64_MAX);
    t.smem_bytes_per_block_optin = uniform(0, 1 << 20);
    t.regs_per_sm = uniform(0, 1 << 20);
    t.max_threads_per_sm = static_cast<std::int32_t>(uniform(0, 4096));
    t.max_regs_per_thread = static_cast<std::int32_t>(uniform(0, 255));
    t.l2_bytes = uniform(0, 1LL << 40);
    t.hbm_bytes = uniform(0, 1LL << 50);
    t.hbm_bandwidth_gbs = std::abs(real());
    t.fp16_tflops = real();
    t.clock_ghz = real();
    t.supports_cooperative = coin();
    t.wddm_tdr = coin();
    t.note = word();
    return t;
  }

  schedule_config config() {
    schedule_config c;
    static const char* archetypes[] = {"gemv", "attention", "gemm", "norm"};
    static const char* keys[] = {"N_tile", "kv_block", "M_tile", "K_tile"};
    // Grouped by archetype, as the JSON object of objects holds them.
    for (const char* a : archetypes) {
      if (!coin(40)) continue;
      for (const char* k : keys)
        if (coin()) c.tiling.push_back({text(a), text(k), integer()});
    }
    auto groups = uniform(0, 3);
    for (int g = 0; g < groups; ++g) {
      std::vector<text> names;
      auto n = uniform(0, 3);
      for (int i = 0; i < n; ++i) names.push_back(word());
      c.fusion_grouping.push_back(std::move(names));
    }
    switch (uniform(0, 2)) {
      case 0: c.sm_assignment = sm_assignment_mode::round_robin; break;
      case 1: c.sm_assignment = sm_assignment_mode::load_balance; break;
      default: {
        c.sm_assignment = sm_assignment_mode::explicit_map;
        auto n = uniform(0, 5);
        for (int i = 0; i < n; ++i) c.sm_map.push_back({std::int32_t(i * 3 + 1), std::int32_t(uniform(0, 131))});
      }
    }
    c.pipelining_depth = static_cast<std::int32_t>(uniform(0, 8));
    c.page_allocation = static_cast<page_allocation_mode>(uniform(0, 2));
    c.threads_per_block = static_cast<std::int32_t>(uniform(1, 1024));
    c.smem_bytes_per_block = static_cast<std::int32_t>(uniform(0, 232448));
    return c;
  }

  program make() {
    program p;
    static const char* raw_values[] = {"1", "-7", "1.5", "true", "null", "[1,2,[]]", "{\"a\":{\"b\":null}}",
                                       "{\"z\":1,\"a\":2}", "1e-06", "[\"\"]"};
    auto n_meta = uniform(0, 4);
    for (int i = 0; i < n_meta; ++i) {
      text key(numbered("k", std::size_t(i)));  // meta is a JSON object: keys unique
      if (coin())
        p.meta.push_back({key, word(), false});
      else
        p.meta.push_back({key, text(raw_values[uniform(0, 9)]), true});
    }
    if (coin()) {
      p.has_target = true;
      p.target = target();
    }
    auto nb = uniform(0, 8);
    for (int i = 0; i < nb; ++i) {
      buffer b;
      b.id = coin(80) ? i : id();
      b.name = word();
      b.kind = static_cast<buffer_kind>(uniform(0, buffer_kind_count - 1));
      b.dtype = static_cast<dtype>(uniform(0, dtype_count - 1));
      b.shape = shape();
      b.space = static_cast<mem_space>(uniform(0, mem_space_count - 1));
      if (coin()) {
        b.source = word();
        if (b.source.empty()) b.source = "w";  // empty source is written as null and reads back empty anyway
      }
      p.buffers.push_back(b);
    }
    auto nc = uniform(0, 6);
    for (int i = 0; i < nc; ++i)
      p.counters.push_back(counter{coin(80) ? i : id(), static_cast<std::int32_t>(uniform(INT32_MIN, INT32_MAX)), word()});
    auto nt = uniform(0, 10);
    for (int i = 0; i < nt; ++i) {
      task t;
      t.id = coin(80) ? i : id();
      t.op = static_cast<opcode>(uniform(0, opcode_count - 1));
      for (auto k = uniform(0, 9); k > 0; --k) t.inputs.push_back(id());
      for (auto k = uniform(0, 5); k > 0; --k) t.outputs.push_back(id());
      t.out_counter = id();
      for (auto k = uniform(0, 9); k > 0; --k)
        t.waits.push_back(wait{id(), static_cast<std::int32_t>(uniform(INT32_MIN, INT32_MAX))});
      t.params = params();
      t.sm = coin() ? unassigned_sm : id();
      t.est_bytes = uniform(0, INT64_MAX);
      t.est_flops = coin() ? 0 : uniform(0, INT64_MAX);
      t.label = word();
      p.tasks.push_back(t);
    }
    if (coin()) {
      p.has_pages = true;
      auto n = uniform(0, 6);
      for (int i = 0; i < n; ++i) p.pages.buffer_to_page.push_back({std::int32_t(i * 7 + 3), id()});  // unique keys
      auto np = uniform(0, 4);
      for (int i = 0; i < np; ++i)
        p.pages.pages.push_back(page{id(), static_cast<mem_space>(uniform(0, 3)), uniform(0, INT64_MAX),
                                     static_cast<std::int32_t>(uniform(-1, 100)),
                                     static_cast<std::int32_t>(uniform(-1, 100))});
    }
    if (coin()) {
      p.has_config = true;
      p.config = config();
    }
    if (coin(10)) p.ir_version = "0.2.7";  // a newer minor loads
    return p;
  }
};

bool same_bits(const program& a, const program& b) {
  // operator== compares doubles with ==; also demand the exact bits (catches 0.0 vs -0.0 and any rounding).
  if (a.tasks.size() != b.tasks.size()) return false;
  for (std::size_t t = 0; t < a.tasks.size(); ++t) {
    const auto& x = a.tasks[t].params.items;
    const auto& y = b.tasks[t].params.items;
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].is_real != y[i].is_real || std::bit_cast<std::uint64_t>(x[i].f) != std::bit_cast<std::uint64_t>(y[i].f))
        return false;
  }
  return std::bit_cast<std::uint64_t>(a.target.hbm_bandwidth_gbs) == std::bit_cast<std::uint64_t>(b.target.hbm_bandwidth_gbs) &&
         std::bit_cast<std::uint64_t>(a.target.fp16_tflops) == std::bit_cast<std::uint64_t>(b.target.fp16_tflops) &&
         std::bit_cast<std::uint64_t>(a.target.clock_ghz) == std::bit_cast<std::uint64_t>(b.target.clock_ghz);
}

/// A small valid document touching every section, in compact form, for the mutation tests.
program small_program() {
  program p;
  p.set_meta("model", "toy");
  p.meta.push_back({"layers", "[1,2]", true});
  p.has_target = true;
  p.target = *find_target("h100");
  auto x = p.add_buffer("x", buffer_kind::io_input, dtype::f16, {1, 16});
  auto w = p.add_buffer("w", buffer_kind::weight, dtype::q4_k, {16, 256}, "blk.0.w");
  auto y = p.add_buffer("y", buffer_kind::io_output, dtype::f32, {1, 16});
  auto c0 = p.add_counter("gemv done");
  auto c1 = p.add_counter();
  task g;
  g.op = opcode::gemv_tile;
  g.inputs = {x, w};
  g.outputs = {y};
  g.out_counter = c0;
  g.params.set(param_key::K, 256).set(param_key::N_tile, 16).set(param_key::n_off, 0).set_real(param_key::scale, 0.5);
  g.sm = 3;
  g.label = "gemv";
  p.add_task(g);
  task n;
  n.op = opcode::nop;
  n.out_counter = c1;
  n.waits = {{c0, 1}};
  p.add_task(n);
  p.has_pages = true;
  p.pages.buffer_to_page = {{2, 0}};
  p.pages.pages = {page{0, mem_space::smem, 64, 0, 1}};
  p.has_config = true;
  p.config.set_tile("gemv", "N_tile", 16);
  p.config.fusion_grouping = {{"gemv", "add"}};
  p.config.sm_assignment = sm_assignment_mode::explicit_map;
  p.config.sm_map = {{0, 3}, {1, 0}};
  return p;
}

/// Our error-path spelling of a JSON pointer into `doc`: /tasks/0/op -> tasks[0].op.
std::string field_path(const nlohmann::ordered_json& doc, const std::string& pointer) {
  std::string out;
  const nlohmann::ordered_json* at = &doc;
  std::size_t pos = 1;
  while (pos <= pointer.size()) {
    auto next = pointer.find('/', pos);
    std::string seg = pointer.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (at->is_array()) {
      out += "[" + seg + "]";
      at = &(*at)[std::stoul(seg)];
    } else {
      out += (out.empty() ? "" : ".") + seg;
      at = &(*at)[seg];
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("the docs/ir.md §6 example parses with the expected values") {
  program p = parse_ok(spec_example);
  CHECK(p.ir_version == "0.2.0");
  CHECK(p.abi_version == "0.2");
  REQUIRE(p.meta.size() == 2);
  CHECK(p.meta[0] == meta_entry{"model", "toy", false});
  CHECK(p.meta[1] == meta_entry{"gpu", "rtx5090", false});
  REQUIRE(p.has_target);
  CHECK(p.target.name == "rtx5090");
  CHECK(p.target.sm_arch == 120);
  CHECK(p.target.num_sms == 82);
  CHECK(p.target.smem_bytes_per_sm == 0);  // absent fields keep the gpu_target defaults
  CHECK(p.target.supports_cooperative);

  REQUIRE(p.buffers.size() == 2);
  CHECK(p.buffers[0].id == 0);
  CHECK(p.buffers[0].name == "x");
  CHECK(p.buffers[0].kind == buffer_kind::io_input);
  CHECK(p.buffers[0].dtype == dtype::f16);
  CHECK(p.buffers[0].shape == std::vector<std::int64_t>{1, 16});
  CHECK(p.buffers[0].space == mem_space::hbm);
  CHECK(p.buffers[0].source.empty());
  CHECK(p.buffers[1].name == "proj.w");
  CHECK(p.buffers[1].kind == buffer_kind::weight);
  CHECK(p.buffers[1].shape == std::vector<std::int64_t>{16, 16});
  CHECK(p.buffers[1].source == "proj.weight");

  REQUIRE(p.counters.size() == 1);
  CHECK(p.counters[0] == counter{0, 0, "rmsnorm done"});

  REQUIRE(p.tasks.size() == 2);
  const task& t0 = p.tasks[0];
  CHECK(t0.op == opcode::rmsnorm);
  CHECK(t0.inputs == std::vector<std::int32_t>{0, 2});
  CHECK(t0.outputs == std::vector<std::int32_t>{3});
  CHECK(t0.out_counter == 0);
  CHECK(t0.waits.empty());
  REQUIRE(t0.params.size() == 2);
  CHECK(t0.params.items[0].key == param_key::eps);  // document order kept
  CHECK(t0.params.items[0].is_real);
  CHECK(t0.params.items[0].f == 1e-06);
  CHECK(t0.params.items[1].key == param_key::hidden);
  CHECK_FALSE(t0.params.items[1].is_real);
  CHECK(t0.params.items[1].i == 16);
  CHECK(t0.sm == unassigned_sm);
  CHECK(t0.label == "rmsnorm");
  const task& t1 = p.tasks[1];
  CHECK(t1.id == 1);
  CHECK(t1.op == opcode::gemv_tile);
  CHECK(t1.inputs == std::vector<std::int32_t>{3, 1});
  CHECK(t1.out_counter == 1);
  REQUIRE(t1.waits.size() == 1);
  CHECK(t1.waits[0] == wait{0, 1});
  CHECK(t1.params.get(param_key::K) == 16);
  CHECK(t1.params.get(param_key::N_tile) == 16);
  CHECK(t1.params.has(param_key::n_off));
  CHECK(t1.est_bytes == 0);  // absent: default
  CHECK(t1.est_flops == 0);
  CHECK(t1.label == "gemv");

  REQUIRE(p.has_pages);
  CHECK(p.pages.buffer_to_page == std::vector<page_binding>{{3, 0}, {4, 0}});
  REQUIRE(p.pages.pages.size() == 1);
  CHECK(p.pages.pages[0] == page{0, mem_space::smem, 64, 0, 1});
  REQUIRE(p.has_config);
  CHECK(p.config == schedule_config{});  // the example spells out exactly the defaults

  // The "..." placeholder of target is an unknown field: dropped, never written back.
  CHECK(to_json(p).find("\"...\"") == std::string::npos);
}

TEST_CASE("output text: enums by name, null for absent parts, reals keep a fractional part") {
  program p;
  p.add_buffer("h", buffer_kind::activation, dtype::bf16, {2}, {}, mem_space::smem);
  p.add_counter("c");
  task t;
  t.op = opcode::rmsnorm;
  t.inputs = {0, 0};
  t.outputs = {0};
  t.params.set_real(param_key::eps, 1e-06).set(param_key::hidden, 2).set_real(param_key::theta, 10000.0);
  t.params.items.push_back(param{param_key::unknown, false, -3, 0.0, "zeta"});
  p.add_task(t);
  p.meta.push_back({"model", "m", false});
  p.meta.push_back({"n", "{\"b\":1,\"a\":[true,null]}", true});
  // Hand-written expectation (key order of docs/ir.md §6; params in insertion order, unknown kept).
  const std::string expected =
      R"({"ir_version":"0.2.0","abi_version":"0.2","meta":{"model":"m","n":{"b":1,"a":[true,null]}},"target":null,)"
      R"("buffers":[{"id":0,"name":"h","kind":"ACTIVATION","dtype":"BF16","shape":[2],"space":"SMEM","source":null}],)"
      R"("counters":[{"id":0,"init":0,"note":"c"}],)"
      R"("tasks":[{"id":0,"op":"RMSNORM","inputs":[0,0],"outputs":[0],"out_counter":0,"waits":[],)"
      R"("params":{"eps":1e-06,"hidden":2,"theta":10000.0,"zeta":-3},"sm":null,"est_bytes":0,"est_flops":0,"label":""}],)"
      R"("pages":null,"config":null})";
  CHECK(to_json(p, -1) == expected);

  p.has_config = true;
  p.config.sm_assignment = sm_assignment_mode::explicit_map;
  p.config.sm_map = {{7, 2}, {3, 0}};
  p.config.set_tile("gemv", "N_tile", 256).set_tile("attention", "kv_block", 128).set_tile("gemv", "K", 64);
  std::string s = to_json(p, -1);
  CHECK(s.find(R"("config":{"tiling":{"gemv":{"N_tile":256,"K":64},"attention":{"kv_block":128}},)"
               R"("fusion_grouping":[],"sm_assignment":{"7":2,"3":0},"pipelining_depth":2,)"
               R"("page_allocation":"graph_color","threads_per_block":256,"smem_bytes_per_block":0})") !=
        std::string::npos);

  // indent 2 puts fields on their own lines, as the spec's files are written.
  CHECK(to_json(p).find("\n  \"ir_version\": \"0.2.0\",\n") != std::string::npos);
}

TEST_CASE("round trip over generated programs is exact and stable") {
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    CAPTURE(seed);
    generator gen(seed);
    program p = gen.make();
    for (int indent : {2, -1, 0, 4}) {
      std::string a = to_json(p, indent);
      auto r = from_json(a);
      INFO(r.error);
      REQUIRE(r);
      CHECK(*r.value == p);
      CHECK(same_bits(*r.value, p));
      CHECK(to_json(*r.value, indent) == a);
    }
  }
}

TEST_CASE("a fused decode step (every fused opcode) round trips and still validates") {
  for (const auto* c : {&octo::models::qwen2_5_0_5b, &octo::models::qwen3_0_6b, &octo::models::stories260k}) {
    CAPTURE(c->name);
    const program p = octo::models::decoder_step(*c);
    bool fused = false;
    for (const auto& t : p.tasks) fused = fused || static_cast<int>(t.op) >= static_cast<int>(opcode::rmsnorm_gemv);
    CHECK(fused);
    auto r = from_json(to_json(p));
    INFO(r.error);
    REQUIRE(r);
    CHECK(*r.value == p);
    CHECK(octo::validate(*r.value).ok);
  }
}

TEST_CASE("doubles that are hard to print survive exactly; integral reals stay reals") {
  const double hard[] = {0.1, 1.0 / 3.0, 5e-324, 2.2250738585072014e-308, DBL_MAX, -DBL_MAX, 1e23,
                         9007199254740993.0, 123456789012345680.0, -0.0, 0.0, 1.0, -2.0, 1e21, 1e22,
                         4.35, 0.30000000000000004};
  program p;
  task t;
  for (double d : hard) t.params.items.push_back(param{param_key::unknown, true, 0, d, text(numbered("r", t.params.size()))});
  t.params.items.push_back(param{param_key::unknown, false, INT64_MIN, 0.0, "imin"});
  t.params.items.push_back(param{param_key::unknown, false, INT64_MAX, 0.0, "imax"});
  p.add_task(t);
  auto r = from_json(to_json(p));
  REQUIRE(r);
  const auto& got = r.value->tasks[0].params.items;
  REQUIRE(got.size() == std::size(hard) + 2);
  for (std::size_t i = 0; i < std::size(hard); ++i) {
    CAPTURE(hard[i]);
    CHECK(got[i].is_real);
    CHECK(std::bit_cast<std::uint64_t>(got[i].f) == std::bit_cast<std::uint64_t>(hard[i]));
  }
  CHECK(got[std::size(hard)].i == INT64_MIN);
  CHECK(got[std::size(hard) + 1].i == INT64_MAX);
  CHECK_FALSE(got[std::size(hard) + 1].is_real);
}

TEST_CASE("unknown fields of target and config are dropped on load") {
  program base = small_program();
  auto doc = nlohmann::ordered_json::parse(to_json(base));
  doc["target"]["hbm_gen"] = "HBM4";
  doc["target"]["future"] = {{"nested", {1, 2, 3}}};
  doc["config"]["speculative_depth"] = 3;
  doc["config"]["new_knob"] = nullptr;
  program p = parse_ok(doc.dump());
  CHECK(p == base);
  std::string out = to_json(p);
  CHECK(out.find("hbm_gen") == std::string::npos);
  CHECK(out.find("speculative_depth") == std::string::npos);
  CHECK(out == to_json(base));

  // A minimal config and target: everything but target.name is optional.
  auto minimal = nlohmann::ordered_json::parse(to_json(base));
  minimal["target"] = {{"name", "mygpu"}, {"num_sms", 7}};
  minimal["config"] = nlohmann::ordered_json::object();
  program m = parse_ok(minimal.dump());
  CHECK(m.target.name == "mygpu");
  CHECK(m.target.num_sms == 7);
  CHECK(m.target.clock_ghz == 0.0);
  CHECK(m.config == schedule_config{});
}

TEST_CASE("ir_version: a major mismatch is rejected, a newer minor loads") {
  auto doc = nlohmann::ordered_json::parse(to_json(small_program()));
  doc["ir_version"] = "1.0.0";
  CHECK(parse_error(doc.dump()) == "ir_version 1.0.0 is not compatible with this octo (0.2.0)");
  doc["ir_version"] = "0.9.3";
  CHECK(parse_ok(doc.dump()).ir_version == "0.9.3");
  doc["ir_version"] = "00.2";
  CHECK(parse_ok(doc.dump()).ir_version == "00.2");
  doc["ir_version"] = "12";
  CHECK(parse_error(doc.dump()) == "ir_version 12 is not compatible with this octo (0.2.0)");
  // The version is checked before anything else, so a future document gets the version message.
  CHECK(parse_error(R"({"ir_version": "3.0.0", "tasks": "a different format"})") ==
        "ir_version 3.0.0 is not compatible with this octo (0.2.0)");
  for (const char* bad : {"", "x.y", "1..0", ".1", "1.", "-1.0", "v0.2.0", "0.2.0-rc1"}) {
    doc["ir_version"] = bad;
    CHECK(parse_error(doc.dump()).starts_with("ir_version: "));
  }
  doc["ir_version"] = 2;
  CHECK(parse_error(doc.dump()) == "ir_version: expected a string, got number");
  doc.erase("ir_version");
  CHECK(parse_error(doc.dump()) == "ir_version: missing");
}

TEST_CASE("errors name the field path") {
  const std::string good = to_json(small_program(), -1);
  struct mutation {
    const char* from;
    const char* to;
    const char* error;
  };
  const mutation cases[] = {
      {R"("op":"GEMV_TILE")", R"("op":"GEMV")", R"(tasks[0].op: unknown opcode "GEMV")"},
      {R"("op":"GEMV_TILE")", R"("op":5)", "tasks[0].op: expected a string, got number"},
      {R"("dtype":"Q4_K")", R"("dtype":"Q4_K_M")", R"(buffers[1].dtype: unknown dtype "Q4_K_M")"},
      {R"("kind":"WEIGHT")", R"("kind":"weight")", R"(buffers[1].kind: unknown buffer kind "weight")"},
      {R"("space":"SMEM")", R"("space":"LDS")", R"(pages.pages[0].space: unknown memory space "LDS")"},
      {R"("id":1,"name":"w")", R"("id":-1,"name":"w")", "buffers[1].id: -1 is out of range [0, 2147483647]"},
      {R"("id":1,"name":"w")", R"("id":1.0,"name":"w")", "buffers[1].id: expected an integer, got number"},
      {R"("id":1,"name":"w")", R"("id":4294967296,"name":"w")",
       "buffers[1].id: 4294967296 is out of range [0, 2147483647]"},
      {R"("id":1,"name":"w")", R"("id":99999999999999999999999,"name":"w")",
       "buffers[1].id: expected an integer, got number"},
      {R"("id":1,"name":"w")", R"("name":"w")", "buffers[1].id: missing"},
      {R"("shape":[16,256])", R"("shape":[16,-256])", "buffers[1].shape[1]: -256 is out of range [0, 4611686018427387904]"},
      {R"("shape":[16,256])", R"("shape":[4294967296,4294967296])", "buffers[1].shape: more than 2^62 elements"},
      {R"("shape":[16,256])", R"("shape":{"0":16})", "buffers[1].shape: expected an array, got object"},
      {R"("source":"blk.0.w")", R"("source":7)", "buffers[1].source: expected a string, got number"},
      {R"("inputs":[0,1])", R"("inputs":[0,-1])", "tasks[0].inputs[1]: -1 is out of range [0, 2147483647]"},
      {R"("inputs":[0,1])", R"("inputs":[0,"1"])", "tasks[0].inputs[1]: expected an integer, got string"},
      {R"("inputs":[0,1])", R"("inputs":null)", "tasks[0].inputs: expected an array, got null"},
      {R"("out_counter":0)", R"("out_counter":-3)", "tasks[0].out_counter: -3 is out of range [0, 2147483647]"},
      {R"("waits":[{"counter":0,"threshold":1}])", R"("waits":[{"counter":0}])", "tasks[1].waits[0].threshold: missing"},
      {R"("waits":[{"counter":0,"threshold":1}])", R"("waits":[[0,1]])", "tasks[1].waits[0]: expected an object, got array"},
      {R"("K":256)", R"("K":"256")", "tasks[0].params.K: expected a number, got string"},
      {R"("K":256)", R"("K":1e999)", "malformed JSON: number overflow parsing '1e999'"},
      {R"("K":256)", R"("K":18446744073709551615)", "tasks[0].params.K: 18446744073709551615 is out of range [-9223372036854775808, 9223372036854775807]"},
      {R"("sm":3)", R"("sm":-1)", "tasks[0].sm: -1 is out of range [0, 2147483647]"},
      {R"("est_bytes":0)", R"("est_bytes":-5)", "tasks[0].est_bytes: -5 is out of range [0, 9223372036854775807]"},
      {R"("label":"gemv")", R"("label":["gemv"])", "tasks[0].label: expected a string, got array"},
      {R"("note":"gemv done")", R"("note":false)", "counters[0].note: expected a string, got boolean"},
      {R"("buffer_to_page":{"2":0})", R"("buffer_to_page":{"two":0})", R"(pages.buffer_to_page: key "two" is not an id)"},
      {R"("buffer_to_page":{"2":0})", R"("buffer_to_page":{"-2":0})", R"(pages.buffer_to_page: key "-2" is not an id)"},
      // Leading zeros: {"2":0,"02":1} would map buffer 2 twice (fuzz_ir_json).
      {R"("buffer_to_page":{"2":0})", R"("buffer_to_page":{"2":0,"02":1})", R"(pages.buffer_to_page: key "02" is not an id)"},
      {R"("sm_assignment":{"0":3,"1":0})", R"("sm_assignment":{"00":3})", R"(config.sm_assignment: key "00" is not an id)"},
      {R"("buffer_to_page":{"2":0})", R"("buffer_to_page":{"2":-1})", "pages.buffer_to_page.2: -1 is out of range [0, 2147483647]"},
      {R"("buffer_to_page":{"2":0})", R"("buffer_to_page":[[2,0]])", "pages.buffer_to_page: expected an object, got array"},
      {R"("live_start":0)", R"("live_start":-2)", "pages.pages[0].live_start: -2 is out of range [-1, 2147483647]"},
      {R"("sm_assignment":{"0":3,"1":0})", R"("sm_assignment":"random")",
       R"(config.sm_assignment: unknown sm assignment "random" (round_robin, load_balance or {task_id: sm}))"},
      {R"("sm_assignment":{"0":3,"1":0})", R"("sm_assignment":{"x":3})", R"(config.sm_assignment: key "x" is not an id)"},
      {R"("sm_assignment":{"0":3,"1":0})", R"("sm_assignment":7)", "config.sm_assignment: expected a string or an object, got number"},
      {R"("page_allocation":"graph_color")", R"("page_allocation":"greedy")",
       R"(config.page_allocation: unknown page allocation "greedy" (linear, graph_color or none))"},
      {R"("tiling":{"gemv":{"N_tile":16}})", R"("tiling":{"gemv":{"N_tile":"16"}})",
       "config.tiling.gemv.N_tile: expected an integer, got string"},
      {R"("fusion_grouping":[["gemv","add"]])", R"("fusion_grouping":[["gemv",1]])",
       "config.fusion_grouping[0][1]: expected a string, got number"},
      {R"("num_sms":132)", R"("num_sms":-132)", "target.num_sms: -132 is out of range [0, 2147483647]"},
      {R"("clock_ghz":1.98)", R"("clock_ghz":"fast")", "target.clock_ghz: expected a number, got string"},
      {R"("wddm_tdr":false)", R"("wddm_tdr":0)", "target.wddm_tdr: expected true or false, got number"},
      {R"("name":"h100")", R"("name":null)", "target.name: expected a string, got null"},
      {R"("meta":{"model":"toy","layers":[1,2]})", R"("meta":["model"])", "meta: expected an object, got array"},
      {R"("abi_version":"0.2")", R"("abi_version":0.2)", "abi_version: expected a string, got number"},
      {R"("tasks":[)", R"("tasks":7,"later":[)", "tasks: expected an array, got number"},
  };
  for (const auto& m : cases) {
    std::string to = m.to;
    CAPTURE(to);
    auto at = good.find(m.from);
    REQUIRE(at != std::string::npos);
    std::string bad = good;
    bad.replace(at, std::string(m.from).size(), m.to);
    CHECK(parse_error(bad) == m.error);
  }
}

TEST_CASE("every field replaced by every wrong kind of value: an error naming it, or a clean load") {
  using ojson = nlohmann::ordered_json;
  const ojson doc = ojson::parse(to_json(small_program()));
  const ojson flat = doc.flatten();
  const std::vector<ojson> wrong{ojson("x"), ojson::array(), ojson::object(), ojson(nullptr), ojson(true),
                                 ojson(1.5), ojson(-1), ojson(0), ojson(1e300), ojson(std::uint64_t(1) << 63),
                                 ojson::parse("[[[[{}]]]]")};
  int errors = 0, loads = 0;
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    const std::string pointer = it.key();
    for (const auto& w : wrong) {
      ojson bad = doc;
      bad[ojson::json_pointer(pointer)] = w;
      auto r = from_json(bad.dump());
      CAPTURE(pointer);
      CAPTURE(w.dump());
      if (r) {
        ++loads;
        CHECK(r.error.empty());
        // Whatever loads must write back and reload to the same program.
        auto again = from_json(to_json(*r.value));
        REQUIRE(again);
        CHECK(*again.value == *r.value);
      } else {
        ++errors;
        std::string path = field_path(doc, pointer);
        // The message names the field (or, for an empty container, the field it lies in).
        bool names_field = r.error.starts_with(path) || pointer.starts_with("/ir_version");
        CHECK_MESSAGE(names_field, r.error);
      }
    }
  }
  CHECK(errors > 300);  // the mutations really hit typed fields
  CHECK(loads > 20);    // and meta / nullable fields really accept other values
}

TEST_CASE("malformed text: every truncation, garbage, deep nesting, bad roots") {
  const std::string good = to_json(small_program());
  for (std::size_t n = 0; n < good.size(); ++n) {
    auto r = from_json(std::string_view(good).substr(0, n));
    CAPTURE(n);
    CHECK_FALSE(r);
    CHECK(r.error.starts_with("malformed JSON: "));
  }
  CHECK(parse_error("") .starts_with("malformed JSON: "));
  CHECK(parse_error(good + "x").starts_with("malformed JSON: "));
  CHECK(parse_error(good + "{}").starts_with("malformed JSON: "));
  CHECK(parse_error("{\"ir_version\": NaN}").starts_with("malformed JSON: "));
  CHECK(parse_error("// comment\n" + good).starts_with("malformed JSON: "));
  CHECK(parse_error("{\"ir_version\": \"0.2.0\xff\"}").starts_with("malformed JSON: "));  // not UTF-8
  CHECK(parse_error("\"\\ud800\"").starts_with("malformed JSON: "));                    // lone surrogate
  CHECK(parse_error("[]") == "document: expected an object, got array");
  CHECK(parse_error("17") == "document: expected an object, got number");
  CHECK(parse_error("null") == "document: expected an object, got null");
  CHECK(parse_error("\"program\"") == "document: expected an object, got string");
  CHECK(parse_error("{}") == "ir_version: missing");
  CHECK(parse_error(R"({"ir_version":"0.2.0","abi_version":"0.2","buffers":[],"counters":[]})") == "tasks: missing");

  // Deep nesting: refused before the parser or the writer could recurse on it.
  for (std::size_t depth : {300u, 100000u, 1000000u}) {
    CHECK(parse_error(std::string(depth, '[') + std::string(depth, ']')).starts_with("malformed JSON: nested deeper"));
    std::string meta = R"({"ir_version":"0.2.0","abi_version":"0.2","meta":{"m":)" + std::string(depth, '[') +
                       std::string(depth, ']') + R"(},"buffers":[],"counters":[],"tasks":[]})";
    CHECK(parse_error(meta).starts_with("malformed JSON: nested deeper"));
    CHECK(parse_error(std::string(depth, '{')).starts_with("malformed JSON: nested deeper"));
  }
  // Brackets inside strings do not count as nesting.
  program p = small_program();
  p.set_meta("brackets", text(std::string(5000, '[') + "\\\"{"));
  CHECK(parse_ok(to_json(p)) == p);
  // Moderate nesting inside meta is just a value.
  std::string nested = R"({"ir_version":"0.2.0","abi_version":"0.2","meta":{"m":)" + std::string(200, '[') +
                       std::string(200, ']') + R"(},"buffers":[],"counters":[],"tasks":[]})";
  program q = parse_ok(nested);
  CHECK(q.meta[0].raw_json);
  CHECK(q.meta[0].value.view() == std::string(200, '[') + std::string(200, ']'));
}

TEST_CASE("random byte mutations never crash, and whatever loads round trips") {
  const std::string good = to_json(small_program(), -1);
  std::mt19937_64 rng(2026);
  const std::string alphabet = "{}[]\":,0123456789.-+eE truenlfas\\\x01\xff";
  int loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    for (int k = 0; k < 1 + int(rng() % 4); ++k) {
      std::size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.erase(at, 1 + rng() % 8); break;
        default: s.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
      if (s.empty()) s.push_back('{');
    }
    auto r = from_json(s);
    CHECK(bool(r) == r.error.empty());
    if (r) {
      ++loaded;
      std::string a = to_json(*r.value);
      auto again = from_json(a);
      REQUIRE(again);
      CHECK(*again.value == *r.value);
      CHECK(to_json(*again.value) == a);
    }
  }
  CHECK(loaded > 0);
}

TEST_CASE("to_json refuses what JSON cannot carry") {
  program p = small_program();
  p.tasks[0].params.set_real(param_key::eps, std::numeric_limits<double>::quiet_NaN());
  CHECK_THROWS_WITH_AS(to_json(p), "to_json: tasks[0].params.eps is not finite, which JSON cannot hold", octo::error);
  p = small_program();
  p.target.clock_ghz = INFINITY;
  CHECK_THROWS_AS(to_json(p), octo::error);
  p = small_program();
  p.buffers[0].name = text("bad\xff");
  CHECK_THROWS_AS(to_json(p), octo::error);
  p = small_program();
  p.meta.push_back({"model", "again", false});
  CHECK_THROWS_WITH_AS(to_json(p), "to_json: meta has the key \"model\" twice, which JSON cannot hold", octo::error);
  p = small_program();
  p.tasks[0].params.items.push_back(p.tasks[0].params.items[0]);
  CHECK_THROWS_WITH_AS(to_json(p), "to_json: tasks[0].params has the key \"K\" twice, which JSON cannot hold", octo::error);
  p = small_program();
  p.pages.buffer_to_page.push_back({2, 1});
  CHECK_THROWS_AS(to_json(p), octo::error);
  p = small_program();
  p.config.sm_map.push_back({0, 1});
  CHECK_THROWS_AS(to_json(p), octo::error);
  p = small_program();
  p.config.tiling.push_back(p.config.tiling[0]);
  CHECK_THROWS_WITH_AS(to_json(p), "to_json: config.tiling.gemv has the key \"N_tile\" twice, which JSON cannot hold", octo::error);
  p = small_program();
  p.meta.push_back({"broken", "{not json", true});
  CHECK_THROWS_WITH_AS(to_json(p), "to_json: meta.broken is marked raw_json but is not JSON", octo::error);
}

TEST_CASE("files: save and load, and I/O failures") {
  auto dir = std::filesystem::temp_directory_path() / ("octo_ir_json_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  program p = small_program();
  save_program(p, dir / "p.json");
  auto r = load_program(dir / "p.json");
  INFO(r.error);
  REQUIRE(r);
  CHECK(*r.value == p);

  auto missing = load_program(dir / "nope.json");
  CHECK_FALSE(missing);
  CHECK(missing.error.find("nope.json") != std::string::npos);

  {
    std::FILE* f = std::fopen((dir / "bad.json").c_str(), "w");
    REQUIRE(f);
    std::fputs(R"({"ir_version": "0.2.0", "abi_version": "0.2", "buffers": [], "counters": [], "tasks": [{"id": 0}]})", f);
    std::fclose(f);
  }
  auto bad = load_program(dir / "bad.json");
  CHECK_FALSE(bad);
  CHECK(bad.error == (dir / "bad.json").string() + ": tasks[0].op: missing");

  CHECK_THROWS_AS(save_program(p, dir / "no_such_dir" / "p.json"), octo::error);
  CHECK_FALSE(load_program(dir));  // a directory is not a program file
  std::filesystem::remove_all(dir);
}
