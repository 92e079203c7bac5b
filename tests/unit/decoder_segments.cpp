// Segments of decoder_step / prefill (build_options::part): a chain embed -> layer groups -> head, run on
// the reference VM with the hidden state handed over by the test, gives bit-identical logits to the whole
// program over a prefill and several decode steps (llama with tied embeddings, qwen2, qwen3); bad
// segments are refused.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <octo/ir/validate.hpp>
#include <octo/models/decoder.hpp>
#include <octo/vm/reference_vm.hpp>

using namespace octo;

namespace {

models::model_config small(models::arch a) {
  models::model_config c;
  c.name = "segments-test";
  c.architecture = a;
  c.vocab = 37;
  c.hidden = 16;
  c.layers = 4;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.ffn = 24;
  c.max_ctx = 16;
  c.weight_dtype = ir::dtype::f32;
  c.tied_embeddings = a == models::arch::llama;
  c.qkv_bias = a == models::arch::qwen2;
  c.qk_norm = a == models::arch::qwen3;
  c.rope = a == models::arch::llama ? rope_style::interleaved : rope_style::neox;
  return c;
}

// The same random values for a weight name in every program (seeded by the name).
std::vector<float> weight_values(const ir::buffer& b) {
  std::seed_seq seq(b.name.view().begin(), b.name.view().end());
  std::mt19937 rng(seq);
  std::normal_distribution<float> d(0.0f, 0.5f);
  std::vector<float> v(static_cast<std::size_t>(b.nbytes() / 4));
  const bool norm = b.name.view().find("norm") != std::string_view::npos;
  for (auto& x : v) x = norm ? 1.0f + 0.1f * d(rng) : d(rng);
  return v;
}

std::unique_ptr<vm::reference_vm> make_vm(ir::program p) {
  REQUIRE(ir::validate(p).ok);
  auto m = std::make_unique<vm::reference_vm>(std::move(p));
  for (const auto& b : m->program().buffers)
    if (b.kind == ir::buffer_kind::weight) m->write(b.name.view(), weight_values(b));
  return m;
}

bool has_buffer(const ir::program& p, std::string_view name) {
  for (const auto& b : p.buffers)
    if (b.name.view() == name) return true;
  return false;
}

// Runs one pass of `ids` at `start` through the whole program and through the chain; returns both logits.
struct runner {
  std::unique_ptr<vm::reference_vm> whole;
  std::vector<std::unique_ptr<vm::reference_vm>> chain;  // embed, layer groups..., head

  runner(const models::model_config& c, std::int64_t T, const std::vector<std::int64_t>& cuts) {
    models::build_options o;
    o.argmax = true;
    const auto make = [&](const models::build_options& bo) {
      return T == 1 ? models::decoder_step(c, bo) : models::prefill(c, T, bo);
    };
    whole = make_vm(make(o));
    models::build_options e;
    e.part = models::segment::embedding();
    chain.push_back(make_vm(make(e)));
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      models::build_options l;
      l.part = models::segment::layers(cuts[i], cuts[i + 1]);
      chain.push_back(make_vm(make(l)));
    }
    models::build_options h = o;
    h.part = models::segment::output_head(c.layers);
    chain.push_back(make_vm(make(h)));
  }

  void pass(const std::vector<std::int32_t>& ids, std::int64_t start, std::vector<float>& whole_logits,
            std::vector<float>& chain_logits, std::int32_t& whole_next, std::int32_t& chain_next) {
    std::vector<std::int32_t> pos(ids.size());
    for (std::size_t t = 0; t < ids.size(); ++t) pos[t] = static_cast<std::int32_t>(start + std::int64_t(t));
    whole->write_i32("tokens", ids);
    whole->write_i32("pos", pos);
    whole->set_position(start);
    whole->run();
    whole_logits = whole->read_f32("logits");
    whole_next = whole->read_i32("next_token").at(0);

    std::vector<float> hidden;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      auto& m = *chain[i];
      if (i == 0) m.write_i32("tokens", ids);
      else m.write("hidden_in", hidden);
      if (has_buffer(m.program(), "pos")) m.write_i32("pos", pos);
      m.set_position(start);
      m.run();
      if (i + 1 < chain.size()) hidden = m.read_f32("hidden_out");
    }
    chain_logits = chain.back()->read_f32("logits");
    chain_next = chain.back()->read_i32("next_token").at(0);
  }
};

void check_chain(models::arch a, const std::vector<std::int64_t>& cuts) {
  const auto c = small(a);
  const std::int64_t T = 5;
  runner prefill(c, T, cuts), decode(c, 1, cuts);
  std::vector<std::int32_t> prompt = {3, 17, 0, 36, 9};
  std::vector<float> wl, cl;
  std::int32_t wn = -1, cn = -2;
  prefill.pass(prompt, 0, wl, cl, wn, cn);
  REQUIRE(wl.size() == std::size_t(c.vocab));  // a prefill's head runs for the last prompt row only
  REQUIRE(cl.size() == wl.size());
  CHECK(std::memcmp(wl.data(), cl.data(), wl.size() * 4) == 0);
  CHECK(wn == cn);
  // The decode chains continue from the prefill's KV caches (copied by name, as a VM shares them).
  const auto copy_kv = [](vm::reference_vm& from, vm::reference_vm& to) {
    for (const auto& b : to.program().buffers)
      if (b.kind == ir::buffer_kind::kv_cache && has_buffer(from.program(), b.name.view()))
        to.write_bytes(b.name.view(), from.bytes(from.buffer_id(b.name.view())));
  };
  copy_kv(*prefill.whole, *decode.whole);
  for (auto& to : decode.chain)
    for (auto& from : prefill.chain) copy_kv(*from, *to);
  std::int32_t next = wn;
  for (std::int64_t step = 0; step < 4; ++step) {
    decode.pass({next}, T + step, wl, cl, wn, cn);
    REQUIRE(wl.size() == std::size_t(c.vocab));
    CHECK(std::memcmp(wl.data(), cl.data(), wl.size() * 4) == 0);
    CHECK(wn == cn);
    // the logits are not trivially equal (e.g. all zero): they vary across the vocabulary
    float lo = wl[0], hi = wl[0];
    for (float v : wl) lo = std::min(lo, v), hi = std::max(hi, v);
    CHECK(hi - lo > 1e-3f);
    next = wn;
  }
}

std::string build_error(const models::model_config& c, const models::build_options& o) {
  try {
    (void)models::decoder_step(c, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("segments: the whole program is the default and keeps its io names") {
  const auto c = small(models::arch::qwen2);
  const auto p = models::decoder_step(c);
  CHECK(has_buffer(p, "tokens"));
  CHECK(has_buffer(p, "logits"));
  CHECK_FALSE(has_buffer(p, "hidden_in"));
  CHECK_FALSE(has_buffer(p, "hidden_out"));
  models::build_options o;
  o.part = models::segment::layers(1, 3);
  const auto mid = models::decoder_step(c, o);
  CHECK(ir::validate(mid).ok);
  CHECK(has_buffer(mid, "hidden_in"));
  CHECK(has_buffer(mid, "hidden_out"));
  CHECK(has_buffer(mid, "blk.1.attn_q.weight"));
  CHECK(has_buffer(mid, "blk.2.k_cache"));
  CHECK_FALSE(has_buffer(mid, "blk.0.attn_q.weight"));
  CHECK_FALSE(has_buffer(mid, "blk.3.attn_q.weight"));
  CHECK_FALSE(has_buffer(mid, "token_embd.weight"));
  CHECK_FALSE(has_buffer(mid, "tokens"));
  // a tied head reads the embedding table but has no token input
  const auto tied = small(models::arch::llama);
  o.part = models::segment::output_head(tied.layers);
  const auto head = models::decoder_step(tied, o);
  CHECK(has_buffer(head, "token_embd.weight"));
  CHECK_FALSE(has_buffer(head, "tokens"));
  CHECK_FALSE(has_buffer(head, "pos"));
}

TEST_CASE("segments: a chain gives bit-identical logits (llama, tied embeddings)") {
  check_chain(models::arch::llama, {0, 1, 2, 3, 4});
}
TEST_CASE("segments: a chain gives bit-identical logits (qwen2, uneven groups)") {
  check_chain(models::arch::qwen2, {0, 3, 4});
}
TEST_CASE("segments: a chain gives bit-identical logits (qwen3, one group)") { check_chain(models::arch::qwen3, {0, 4}); }

TEST_CASE("segments: bad segments are refused") {
  const auto c = small(models::arch::qwen2);
  models::build_options o;
  o.part = models::segment::layers(3, 2);
  CHECK(build_error(c, o).find("0 <= first <= end <= layers") != std::string::npos);
  o.part = models::segment::layers(0, 5);
  CHECK(build_error(c, o).find("0 <= first <= end <= layers") != std::string::npos);
  o.part = models::segment::layers(2, 2);
  CHECK(build_error(c, o).find("empty") != std::string::npos);
  o.part = models::segment::layers(0, 2);
  o.argmax = true;
  CHECK(build_error(c, o).find("argmax") != std::string::npos);
}
