// The runtime on the CPU reference VM: stories260K's golden greedy continuation from BOS, prefill vs
// token-by-token decode, config / tensor errors from edited copies of a real GGUF, the sampler against
// hand-computed distributions, and the .npy writer's bytes.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <unistd.h>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <octo/detail/quant_blocks.hpp>
#include <octo/error.hpp>
#include <octo/model_file/gguf.hpp>
#include <octo/model_file/gguf_writer.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/npy.hpp>
#include <octo/runtime/sampler.hpp>

namespace fs = std::filesystem;
using namespace octo;

namespace {

const fs::path stories = test::stories260k_gguf();

// A copy of stories260K with `edit` applied to its metadata and tensors, written to a temp file.
struct edited_copy {
  fs::path path;
  edited_copy(const std::string& name, const std::function<void(std::map<std::string, model_file::gguf_value>&)>& meta,
              const std::function<bool(model_file::gguf_writer&, const model_file::gguf_tensor_info&,
                                       std::span<const std::byte>)>& tensor = {}) {
    REQUIRE_MESSAGE(fs::exists(stories), "missing " << stories.string());
    auto f = model_file::gguf_file::open(stories);
    std::map<std::string, model_file::gguf_value> kv;
    for (const auto& e : f.metadata()) kv[e.key] = e.value;
    meta(kv);
    model_file::gguf_writer w;
    for (auto& [k, v] : kv) w.set(k, v);
    for (const auto& t : f.tensors()) {
      const auto bytes = f.tensor(t.name).data;
      if (tensor && tensor(w, t, bytes)) continue;
      w.add_tensor_raw(t.name, t.ggml_type, t.dims, bytes);
    }
    path = fs::temp_directory_path() / ("octo_runtime_" + name + "_" + std::to_string(::getpid()) + ".gguf");
    w.write(path);
  }
  ~edited_copy() { fs::remove(path); }
};

std::string load_error(const fs::path& p) {
  try {
    (void)runtime::model_source::open(p);
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}


runtime::engine_options ref(std::int64_t ctx, std::int64_t chunk = 128) {
  runtime::engine_options o;
  o.vm = runtime::backend::reference;
  o.ctx = ctx;
  o.prefill_chunk = chunk;
  return o;
}

runtime::sampling_params sp(float temperature, std::int32_t top_k = 0, float top_p = 1.0f, float penalty = 1.0f,
                            std::uint64_t seed = 0) {
  runtime::sampling_params p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.repeat_penalty = penalty;
  p.seed = seed;
  return p;
}

}  // namespace

TEST_CASE("stories260K: greedy from BOS gives the 257 golden ids on the reference VM") {
  const auto golden = test::stories260k_golden_ids();
  REQUIRE(golden.size() == 257);
  runtime::engine e(stories, ref(512));
  CHECK(e.model().config().vocab == 512);
  CHECK(e.model().config().layers == 5);
  CHECK(e.model().config().rope == rope_style::interleaved);
  const std::int32_t bos[1] = {1};
  // The device argmax path (SAMPLE_ARGMAX in the decode program) ...
  const auto ids = e.generate(bos, 257, sp(0.0f));
  CHECK(ids == golden);
  // ... and the logits read back with the CPU argmax.
  e.reset();
  auto logits = e.prefill(bos);
  std::vector<std::int32_t> cpu;
  for (int i = 0; i < 257; ++i) {
    cpu.push_back(runtime::argmax(logits));
    if (i + 1 < 257) logits = e.decode(cpu.back());
  }
  CHECK(cpu == golden);
}

TEST_CASE("prefill in overlapping chunks gives the logits of token-by-token decode (reference VM)") {
  runtime::engine chunked(stories, ref(64, 8));
  runtime::engine whole(stories, ref(64, 64));
  const auto prompt = chunked.model().tokenizer().encode("Once upon a time, there was a little girl named Lily. She", true);
  REQUIRE(prompt.size() > 16);  // three windows of 8, the last overlapping
  REQUIRE(prompt.size() % 8 != 0);
  const auto a = chunked.prefill(prompt);
  const auto b = whole.prefill(prompt);
  runtime::engine steps(stories, ref(64));
  std::vector<float> c;
  for (auto id : prompt) c = steps.decode(id);
  CHECK(chunked.position() == std::int64_t(prompt.size()));
  CHECK(test::rel_l2(a, c) < 1e-5);
  CHECK(test::rel_l2(b, c) < 1e-5);
  // the KV cache the prefill left behind serves the next decode steps
  for (std::int32_t next : {400, 17, 300}) {
    const auto da = chunked.decode(next), dc = steps.decode(next);
    CHECK(test::rel_l2(da, dc) < 1e-5);
  }
}

TEST_CASE("a continued sequence prefills its new tokens in windows from its position (reference VM)") {
  // A second prompt after a first (a chat's next turn) goes through the prefill windows at the
  // sequence's position, attending to the cache the first left: the logits of token-by-token decode.
  runtime::engine chunked(stories, ref(64, 8));
  runtime::engine steps(stories, ref(64));
  const auto& tok = chunked.model().tokenizer();
  const auto first = tok.encode("Once upon a time", true);
  const auto second = tok.encode(" there was a little girl named Lily. She liked", false);
  REQUIRE(second.size() > 8);  // two windows of 8 at the first prompt's end, the last overlapping
  REQUIRE(second.size() % 8 != 0);
  std::vector<float> c;
  for (auto id : first) c = steps.decode(id);
  CHECK(test::rel_l2(chunked.prefill(first), c) < 1e-5);
  for (auto id : second) c = steps.decode(id);
  const auto a = chunked.prefill(second);
  CHECK(chunked.position() == std::int64_t(first.size() + second.size()));
  CHECK(test::rel_l2(a, c) < 1e-5);
  // one token more, and the decode steps after it, from the same cache
  const std::int32_t one[1] = {400};
  CHECK(test::rel_l2(chunked.prefill(one), steps.decode(400)) < 1e-5);
  for (std::int32_t next : {17, 300}) CHECK(test::rel_l2(chunked.decode(next), steps.decode(next)) < 1e-5);
  CHECK(chunked.stats().passes < steps.stats().passes);  // windows, not one pass per token
}

TEST_CASE("prompt and token errors") {
  runtime::engine e(stories, ref(8));
  const std::vector<std::int32_t> long_prompt(9, 5);
  CHECK_THROWS_WITH_AS(e.prefill(long_prompt), doctest::Contains("context"), octo::error);
  CHECK_THROWS_WITH_AS(e.prefill(std::vector<std::int32_t>{}), doctest::Contains("empty"), octo::error);
  CHECK_THROWS_WITH_AS(e.prefill(std::vector<std::int32_t>{512}), doctest::Contains("vocabulary"), octo::error);
  const std::vector<std::int32_t> full(8, 5);
  e.prefill(full);
  CHECK_THROWS_WITH_AS(e.decode(5), doctest::Contains("full"), octo::error);
}

TEST_CASE("config from GGUF metadata and its errors") {
  auto f = model_file::gguf_file::open(stories);
  const auto c = runtime::config_from_gguf(f, 100);
  CHECK(c.architecture == models::arch::llama);
  CHECK(c.hidden == 64);
  CHECK(c.heads == 8);
  CHECK(c.kv_heads == 4);
  CHECK(c.head_dim == 8);
  CHECK(c.ffn == 172);
  CHECK(c.max_ctx == 100);
  CHECK(c.tied_embeddings == false);
  CHECK(c.qkv_bias == false);
  CHECK(c.rms_eps == doctest::Approx(1e-5));

  {
    edited_copy g("arch", [](auto& kv) { kv["general.architecture"] = model_file::gguf_value::of_string("gpt2"); });
    CHECK(load_error(g.path) == "octo: " + g.path.filename().string() +
                                    ": unknown architecture 'gpt2' (octo runs llama, qwen2, qwen3)");
  }
  {
    edited_copy g("nokey", [](auto& kv) { kv.erase("llama.block_count"); });
    CHECK(load_error(g.path) == "octo: " + g.path.filename().string() + ": missing metadata key 'llama.block_count'");
  }
  {
    edited_copy g("badheads", [](auto& kv) { kv["llama.attention.head_count_kv"] = model_file::gguf_value::of_u32(3); });
    CHECK(load_error(g.path).find("not a multiple of head_count_kv 3") != std::string::npos);
  }
  {
    // blk.2.ffn_up.weight with one row fewer
    edited_copy g("shape", [](auto&) {},
                  [](model_file::gguf_writer& w, const model_file::gguf_tensor_info& t, std::span<const std::byte> b) {
                    if (t.name != "blk.2.ffn_up.weight") return false;
                    w.add_tensor_raw(t.name, t.ggml_type, {t.dims[0], t.dims[1] - 1}, b.first(b.size() - 64 * 4));
                    return true;
                  });
    CHECK(load_error(g.path) == "octo: " + g.path.filename().string() +
                                    ": tensor 'blk.2.ffn_up.weight' has shape [64, 171], expected [64, 172] (GGUF order)");
  }
  {
    // a type octo has no dtype for (GGML_TYPE_Q8_1 = 9) with the right byte count for its blocks
    edited_copy g("type", [](auto&) {},
                  [](model_file::gguf_writer& w, const model_file::gguf_tensor_info& t, std::span<const std::byte>) {
                    if (t.name != "blk.0.attn_q.weight") return false;
                    std::vector<std::byte> q8_1(std::size_t(64 * 64 / 32 * 36));
                    w.add_tensor_raw(t.name, 9, t.dims, q8_1);
                    return true;
                  });
    CHECK(load_error(g.path) == "octo: " + g.path.filename().string() +
                                    ": tensor 'blk.0.attn_q.weight' has unsupported type Q8_1");
  }
  // Other GGUF types octo does not compute with name themselves too, on a layer matrix and on the
  // embedding (stories260K's rows of 64 hold only 32-element blocks: ggml ids and bytes per 32, Q8_1 9 /
  // 36, MXFP4 39 / 17).
  for (const auto& [id, name, block_bytes] : {std::tuple<std::uint32_t, std::string, std::size_t>{9, "Q8_1", 36},
                                              {39, "MXFP4", 17}}) {
    for (const std::string tensor : {"blk.1.attn_k.weight", "token_embd.weight"}) {
      CAPTURE(name);
      CAPTURE(tensor);
      edited_copy g("type_" + name, [](auto&) {},
                    [&](model_file::gguf_writer& w, const model_file::gguf_tensor_info& t, std::span<const std::byte>) {
                      if (t.name != tensor) return false;
                      w.add_tensor_raw(t.name, id, t.dims, std::vector<std::byte>(std::size_t(t.dims[0] * t.dims[1] / 32) * block_bytes));
                      return true;
                    });
      CHECK(load_error(g.path) == "octo: " + g.path.filename().string() + ": tensor '" + tensor + "' has unsupported type " + name);
    }
  }
  {
    edited_copy g("missing", [](auto&) {},
                  [](model_file::gguf_writer&, const model_file::gguf_tensor_info& t, std::span<const std::byte>) {
                    return t.name == "blk.4.ffn_norm.weight";
                  });
    CHECK(load_error(g.path) == "octo: " + g.path.filename().string() + ": missing tensor 'blk.4.ffn_norm.weight'");
  }
}

TEST_CASE("sampler: greedy, penalties, top-k, top-p and temperature against hand-computed distributions") {
  using runtime::sampler;
  using runtime::sampling_params;
  const std::vector<std::int32_t> none;
  {
    sampler s(sp(0.0f));
    CHECK(s.sample(std::vector<float>{1.0f, 3.0f, 3.0f, -1.0f}, none) == 1);  // tie: lowest id
    CHECK(runtime::argmax(std::vector<float>{NAN, -2.0f, NAN}) == 1);
  }
  {
    // llama.cpp's rule: positive logits divided, negative multiplied
    sampler s(sp(0.0f, 0, 1.0f, 1.1f));
    CHECK(s.sample(std::vector<float>{2.0f, 1.9f}, std::vector<std::int32_t>{0}) == 1);  // 2/1.1 < 1.9
    CHECK(s.sample(std::vector<float>{-1.0f, -1.05f}, std::vector<std::int32_t>{0}) == 1);  // -1.1 < -1.05
    CHECK(s.sample(std::vector<float>{2.0f, 1.9f}, none) == 0);
  }
  const auto frequencies = [](const sampling_params& p, const std::vector<float>& logits, int n) {
    sampler s(p);
    std::vector<double> f(logits.size(), 0.0);
    for (int i = 0; i < n; ++i) f[std::size_t(s.sample(logits, std::vector<std::int32_t>{}))] += 1.0 / n;
    return f;
  };
  {
    // p = (1/4, 3/4) at temperature 1; at temperature 2 the ratio becomes sqrt(3)
    const auto f1 = frequencies(sp(1.0f, 0, 1.0f, 1.0f, 7), {0.0f, std::log(3.0f)}, 40000);
    CHECK(f1[1] == doctest::Approx(0.75).epsilon(0.02));
    const auto f2 = frequencies(sp(2.0f, 0, 1.0f, 1.0f, 8), {0.0f, std::log(3.0f)}, 40000);
    CHECK(f2[1] == doctest::Approx(std::sqrt(3.0) / (1.0 + std::sqrt(3.0))).epsilon(0.02));
  }
  {
    // probabilities 0.5, 0.3, 0.2: top-p 0.6 keeps {0, 1} -> 0.625 / 0.375; top-k 1 is greedy
    const std::vector<float> l{std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    const auto f = frequencies(sp(1.0f, 0, 0.6f, 1.0f, 3), l, 40000);
    CHECK(f[2] == 0.0);
    CHECK(f[0] == doctest::Approx(0.625).epsilon(0.02));
    const auto k2 = frequencies(sp(1.0f, 2, 1.0f, 1.0f, 4), {std::log(0.2f), std::log(0.5f), std::log(0.3f)}, 40000);
    CHECK(k2[0] == 0.0);
    CHECK(k2[1] == doctest::Approx(0.625).epsilon(0.02));
    const auto k1 = frequencies(sp(5.0f, 1, 1.0f, 1.0f, 5), l, 100);
    CHECK(k1[0] == doctest::Approx(1.0));
  }
  {
    // the same seed gives the same draws; another seed other draws
    const std::vector<float> l(50, 0.0f);
    sampler a(sp(1.0f, 0, 1.0f, 1.0f, 11)), b(sp(1.0f, 0, 1.0f, 1.0f, 11)), c(sp(1.0f, 0, 1.0f, 1.0f, 12));
    std::vector<std::int32_t> ra, rb, rc;
    for (int i = 0; i < 32; ++i) {
      ra.push_back(a.sample(l, none));
      rb.push_back(b.sample(l, none));
      rc.push_back(c.sample(l, none));
    }
    CHECK(ra == rb);
    CHECK(ra != rc);
  }
  CHECK_THROWS_AS(sampler(sp(0.0f, 0, 0.0f)), octo::error);
  CHECK_THROWS_AS(sampler(sp(-1.0f)), octo::error);
  CHECK_THROWS_AS(sampler(sp(0.0f, 0, 1.0f, 0.0f)), octo::error);
}

TEST_CASE(".npy v1.0: header and data bytes") {
  const auto p = fs::temp_directory_path() / ("octo_npy_" + std::to_string(::getpid()) + ".npy");
  const std::vector<float> v{1.5f, -2.0f, 0.25f};
  runtime::write_npy_f32(p, v);
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  fs::remove(p);
  REQUIRE(s.size() > 10);
  CHECK(s.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t hlen = std::uint8_t(s[8]) | std::size_t(std::uint8_t(s[9])) << 8;
  CHECK((10 + hlen) % 64 == 0);
  const std::string header = s.substr(10, hlen);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 0) == 0);
  CHECK(header.back() == '\n');
  REQUIRE(s.size() == 10 + hlen + 12);
  float back[3];
  std::memcpy(back, s.data() + 10 + hlen, 12);
  CHECK(back[0] == 1.5f);
  CHECK(back[1] == -2.0f);
  CHECK(back[2] == 0.25f);
  CHECK_THROWS_AS(runtime::write_npy_f32("/nonexistent-dir/x.npy", v), octo::error);
}

TEST_CASE("weights of mixed types (F32, Q8_0, Q4_0) in one file are uploaded in their own encodings") {
  // Two copies of stories260K: one with three matrices quantized, one with those matrices replaced by
  // their dequantized values in F32. The reference VM dequantizes blocks exactly, so both must give the
  // same logits; a buffer typed with the wrong dtype or fed the wrong bytes would not.
  const std::map<std::string, ir::dtype> quantized{{"blk.0.attn_q.weight", ir::dtype::q8_0},
                                                   {"blk.1.attn_v.weight", ir::dtype::q4_0},
                                                   {"blk.3.attn_output.weight", ir::dtype::q8_0}};
  const auto edit = [&](bool keep_blocks) {
    return [&, keep_blocks](model_file::gguf_writer& w, const model_file::gguf_tensor_info& t,
                            std::span<const std::byte> b) {
      const auto q = quantized.find(t.name);
      if (q == quantized.end()) return false;
      std::vector<float> f(b.size() / 4);
      std::memcpy(f.data(), b.data(), b.size());
      std::vector<std::byte> blocks(std::size_t(ir::nbytes(q->second, std::int64_t(f.size()))));
      for (std::int64_t r = 0; r < t.dims[1]; ++r)
        detail::quantize_row(q->second, f.data() + r * t.dims[0],
                             reinterpret_cast<std::uint8_t*>(blocks.data()) + r * ir::nbytes(q->second, t.dims[0]),
                             t.dims[0]);
      if (keep_blocks) {
        w.add_tensor(t.name, q->second, t.dims, blocks);
      } else {
        for (std::int64_t r = 0; r < t.dims[1]; ++r)
          detail::dequantize_row(q->second,
                                 reinterpret_cast<const std::uint8_t*>(blocks.data()) + r * ir::nbytes(q->second, t.dims[0]),
                                 f.data() + r * t.dims[0], t.dims[0]);
        w.add_tensor(t.name, ir::dtype::f32, t.dims, std::as_bytes(std::span<const float>(f)));
      }
      return true;
    };
  };
  edited_copy mixed("mixed", [](auto&) {}, edit(true));
  edited_copy plain("plain", [](auto&) {}, edit(false));
  {
    auto f = model_file::gguf_file::open(mixed.path);
    REQUIRE(f.tensor("blk.1.attn_v.weight").type == ir::dtype::q4_0);
  }
  runtime::engine a(mixed.path, ref(32)), b(plain.path, ref(32));
  const std::vector<std::int32_t> prompt{1, 403, 407, 261, 378};
  CHECK(test::rel_l2(a.prefill(prompt), b.prefill(prompt)) < 1e-5);
  for (std::int32_t next : {432, 383, 286}) CHECK(test::rel_l2(a.decode(next), b.decode(next)) < 1e-5);
}
