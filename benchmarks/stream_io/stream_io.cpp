// bench_stream_io: does zstd compression of layer files pay on this disk? For each model (synthetic
// 7B-shaped one-layer models with random F16 and Q4_K weights, plus any --gguf), decomposes it raw and
// with zstd, then times layer reads with O_DIRECT (cold: no page cache) through octo::stream::layer_reader
// and zstd decoding alone from memory.
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/runtime/decomposed.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"

namespace fs = std::filesystem;
using namespace octo;

namespace {

struct shape {
  std::int64_t hidden, ffn, heads, kv_heads, vocab;
};

// A one-layer qwen2 GGUF whose block has the shapes of a real model's block; weights ~ N(0, 0.02) as
// trained weights roughly are, stored as `type`.
void make_model(const fs::path& out, ir::dtype type, const shape& s, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  model_file::gguf_writer w;
  w.set_string("general.architecture", "qwen2");
  w.set_u32("qwen2.embedding_length", std::uint32_t(s.hidden));
  w.set_u32("qwen2.block_count", 1);
  w.set_u32("qwen2.attention.head_count", std::uint32_t(s.heads));
  w.set_u32("qwen2.attention.head_count_kv", std::uint32_t(s.kv_heads));
  w.set_u32("qwen2.feed_forward_length", std::uint32_t(s.ffn));
  w.set_u32("qwen2.context_length", 4096);
  w.set_f32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_f32("qwen2.rope.freq_base", 1e6f);
  auto add = [&](const std::string& name, ir::dtype t, std::int64_t ne0, std::int64_t ne1) {
    const std::int64_t n = ne0 * ne1;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = normal(rng);
    std::vector<std::byte> bytes(static_cast<std::size_t>(ir::nbytes(t, n)));
    const auto row = ir::nbytes(t, ne0);
    for (std::int64_t r = 0; r < ne1; ++r)
      detail::quantize_row(t, v.data() + r * ne0, reinterpret_cast<std::uint8_t*>(bytes.data()) + r * row, ne0);
    if (ne1 == 1) w.add_tensor(name, t, {ne0}, bytes);
    else w.add_tensor(name, t, {ne0, ne1}, bytes);
  };
  const std::int64_t hd = s.hidden / s.heads, kv = hd * s.kv_heads;
  add("token_embd.weight", type, s.hidden, s.vocab);
  add("output_norm.weight", ir::dtype::f32, s.hidden, 1);
  add("blk.0.attn_norm.weight", ir::dtype::f32, s.hidden, 1);
  add("blk.0.attn_q.weight", type, s.hidden, s.hidden);
  add("blk.0.attn_q.bias", ir::dtype::f32, s.hidden, 1);
  add("blk.0.attn_k.weight", type, s.hidden, kv);
  add("blk.0.attn_k.bias", ir::dtype::f32, kv, 1);
  add("blk.0.attn_v.weight", type, s.hidden, kv);
  add("blk.0.attn_v.bias", ir::dtype::f32, kv, 1);
  add("blk.0.attn_output.weight", type, s.hidden, s.hidden);
  add("blk.0.ffn_norm.weight", ir::dtype::f32, s.hidden, 1);
  add("blk.0.ffn_gate.weight", type, s.hidden, s.ffn);
  add("blk.0.ffn_up.weight", type, s.hidden, s.ffn);
  add("blk.0.ffn_down.weight", type, s.ffn, s.hidden);
  // A minimal tokenizer so the file is a complete model.
  std::vector<std::string> tokens;
  for (int i = 0; i < s.vocab; ++i) tokens.push_back("t" + std::to_string(i));
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set("tokenizer.ggml.tokens", model_file::gguf_value::array_of_strings(tokens));
  w.write(out);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct result {
  std::string name;
  double raw_mb = 0, stored_mb = 0, raw_gbs = 0, zstd_gbs = 0, decode_gbs = 0, decode_cpu_gbs = 0;
};

// Best of `reps` timed reads of every layer file; returns raw bytes per second.
double time_reads(const stream::manifest& m, int reps) {
  stream::reader_options o;
  o.verify = stream::checksum_policy::never;  // measure I/O (+ decode), not hashing
  o.direct_io = true;
  stream::layer_reader r(m, o);
  stream::aligned_buffer buf(m.max_layer_bytes());
  double best = 1e30;
  std::uint64_t raw = 0;
  for (std::int64_t l = 0; l < m.layer_count(); ++l) raw += m.layer_file(l).raw_bytes;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t l = 0; l < m.layer_count(); ++l) r.read_layer(l, buf.span());
    best = std::min(best, seconds_since(t0));
  }
  if (!r.last_read_direct()) std::fprintf(stderr, "note: %s: reads were buffered (no O_DIRECT)\n", m.directory().c_str());
  return double(raw) / best;
}

// Thread CPU time: on a shared, overloaded machine wall time measures the contention, CPU time what one
// unloaded core would take.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// {raw bytes per wall second, raw bytes per CPU second} of zstd decoding alone.
std::pair<double, double> time_decode(const stream::manifest& m, int reps) {
  std::uint64_t raw = 0;
  double best = 1e30, best_cpu = 1e30;
  stream::aligned_buffer out(m.max_layer_bytes());
  std::vector<std::vector<std::byte>> frames;
  for (std::int64_t l = 0; l < m.layer_count(); ++l) {
    const auto& f = m.layer_file(l);
    stream::aligned_buffer in(stream::round_up(f.stored_bytes, 4096));
    stream::read_file_into(m.path_of(f), f.stored_bytes, in.span(), false);
    frames.emplace_back(in.data(), in.data() + f.stored_bytes);
    raw += f.raw_bytes;
  }
  ZSTD_DCtx* d = ZSTD_createDCtx();
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    for (std::size_t l = 0; l < frames.size(); ++l)
      if (ZSTD_isError(ZSTD_decompressDCtx(d, out.data(), out.size(), frames[l].data(), frames[l].size())))
        throw octo::error("zstd decode failed");
    best_cpu = std::min(best_cpu, thread_cpu_seconds() - c0);
    best = std::min(best, seconds_since(t0));
  }
  ZSTD_freeDCtx(d);
  return {double(raw) / best, double(raw) / best_cpu};
}

result measure(const std::string& name, const fs::path& gguf, const fs::path& work, int reps, int level) {
  result r;
  r.name = name;
  const auto raw_dir = work / (name + ".raw"), z_dir = work / (name + ".zstd");
  runtime::decompose_gguf(gguf, raw_dir);
  stream::decompose_options zo;
  zo.zstd = true;
  zo.zstd_level = level;
  runtime::decompose_gguf(gguf, z_dir, zo);
  const auto raw = stream::manifest::load(raw_dir), z = stream::manifest::load(z_dir);
  std::uint64_t raw_bytes = 0, stored = 0;
  for (std::int64_t l = 0; l < z.layer_count(); ++l) {
    raw_bytes += z.layer_file(l).raw_bytes;
    stored += z.layer_file(l).stored_bytes;
  }
  r.raw_mb = double(raw_bytes) / 1e6;
  r.stored_mb = double(stored) / 1e6;
  r.raw_gbs = time_reads(raw, reps) / 1e9;
  r.zstd_gbs = time_reads(z, reps) / 1e9;
  const auto [wall, cpu] = time_decode(z, reps);
  r.decode_gbs = wall / 1e9;
  r.decode_cpu_gbs = cpu / 1e9;
  fs::remove_all(raw_dir);
  fs::remove_all(z_dir);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 3, level = 3;
  fs::path work = fs::temp_directory_path();
  std::vector<fs::path> ggufs;
  CLI::App app("Layer read and zstd decode speed of streamed layers (random 7B-shaped F16 / Q4_K blocks, and any\n"
               "--gguf given), one table.",
               "bench_stream_io");
  octo_bench::set_up(app);
  app.add_flag("--quick", quick, "small shapes, one repetition (a smoke test)");
  octo_bench::positive_option(app, "--reps", reps, "repetitions, the best kept (default 3)");
  octo_bench::option(app, "--level", "N", "the zstd level (default 3; 1..22)", [&](const std::string& v) {
    level = static_cast<int>(octo_bench::positive("bench_stream_io", "--level", v));
    if (level > 22) throw octo::error("bench_stream_io: --level " + v + " is over zstd's 22");
  });
  octo_bench::option(app, "--dir", "WORKDIR", "where the test files go (default: the temporary directory)",
                     [&](const std::string& v) { work = v; });
  octo_bench::option(app, "--gguf", "MODEL.gguf", "also measure this model's layers (repeatable)",
                     [&](const std::string& v) { ggufs.emplace_back(v); })
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  octo_bench::parse_command_line(app, argc, argv);
  try {
    work /= "octo-stream-io-" + std::to_string(::getpid());
    fs::create_directories(work);
    // Qwen2.5-7B's block: hidden 3584, ffn 18944, 28 heads, 4 KV heads.
    const shape s = quick ? shape{256, 512, 4, 2, 64} : shape{3584, 18944, 28, 4, 256};
    if (quick) reps = 1;
    std::vector<result> results;
    for (auto [label, type] : {std::pair{"f16-random", ir::dtype::f16}, std::pair{"q4_k-random", ir::dtype::q4_k}}) {
      const auto g = work / (std::string(label) + ".gguf");
      make_model(g, type, s, 1234);
      results.push_back(measure(label, g, work, reps, level));
      fs::remove(g);
    }
    for (const auto& g : ggufs) results.push_back(measure(g.stem().string(), g, work, reps, level));
    fs::remove_all(work);
    std::printf("%-22s %10s %10s %6s %10s %10s %12s %12s\n", "layers of", "raw MB", "zstd MB", "ratio", "raw GB/s",
                "zstd GB/s", "decode GB/s", "decode/CPU-s");
    for (const auto& r : results)
      std::printf("%-22s %10.1f %10.1f %6.3f %10.2f %10.2f %12.2f %12.2f\n", r.name.c_str(), r.raw_mb, r.stored_mb,
                  r.stored_mb / r.raw_mb, r.raw_gbs, r.zstd_gbs, r.decode_gbs, r.decode_cpu_gbs);
    std::printf("(raw/zstd GB/s: raw layer bytes delivered per wall second by layer_reader with O_DIRECT, best of %d;\n"
                " decode: zstd level %d frames decoded from memory on one thread, per wall second and per second of\n"
                " the thread's CPU time, which is what an unloaded core would do)\n", reps, level);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_stream_io: %s\n", e.what());
    std::error_code ec;
    fs::remove_all(work, ec);
    return 1;
  }
  return 0;
}
