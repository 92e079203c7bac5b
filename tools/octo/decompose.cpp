// octo decompose: GGUF -> decomposed model directory for layer streaming (octo::runtime::decompose_gguf).
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "octo/error.hpp"
#include "octo/runtime/decomposed.hpp"

namespace octo::tool {

namespace {
constexpr const char* decompose_help =
    "Splits a GGUF model into a directory for layer streaming (docs/streaming.md):\n"
    "  manifest.json   format version, model config, source file name/size/header checksum, every\n"
    "                  file's sizes, compression and XXH3-64, every tensor's file, offset, type, shape\n"
    "  meta.gguf       the GGUF metadata (hyperparameters, tokenizer) without tensors\n"
    "  embed.bin       token_embd.weight\n"
    "  head.bin        output_norm.weight, output.weight (when not tied) and any other non-block tensor\n"
    "  layer_NNN.bin   the tensors of block NNN\n"
    "Tensor bytes are the GGUF's, each at an offset aligned to 4096 (direct I/O); files are padded to\n"
    "4096. The directory is written as OUTDIR.tmp-* and renamed into place when complete, so an\n"
    "interrupted run leaves nothing that loads. Re-running with the same source and options verifies\n"
    "the existing OUTDIR and keeps it; otherwise it is rebuilt and swapped in atomically.";

std::uint64_t number(std::string_view opt, std::string_view v) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) throw error(std::string(opt) + ": '" + std::string(v) + "' is not a number");
  return n;
}

struct decompose_args {
  std::string gguf, out;
  stream::decompose_options o;
  bool quiet = false;
};

void run_decompose(decompose_args& a) {
  auto& o = a.o;
  const bool quiet = a.quiet;
  const bool tty = ::isatty(2) != 0;
  if (!quiet)
    o.progress = [tty](const stream::decompose_progress& p) {
      const double gib = double(1 << 30);
      std::fprintf(stderr, "%sdecompose: %zu/%zu files, %.2f of %.2f GiB (%.*s)%s", tty ? "\r" : "", p.files_done,
                   p.files_total, double(p.bytes_done) / gib, double(p.bytes_total) / gib, int(p.file.size()),
                   p.file.data(), tty ? "\033[K" : "\n");
      std::fflush(stderr);
    };
  const auto outcome = runtime::decompose_gguf(a.gguf, a.out, o);
  if (!quiet && tty) std::fputc('\n', stderr);
  const char* what = outcome == stream::decompose_outcome::kept       ? "up to date (verified, kept)"
                     : outcome == stream::decompose_outcome::replaced ? "rebuilt and replaced"
                                                                      : "created";
  if (!quiet) std::fprintf(stderr, "decompose: %s: %s\n", a.out.c_str(), what);
}

}  // namespace

void add_decompose(CLI::App& app) {
  auto a = std::make_shared<decompose_args>();
  auto* c = app.add_subcommand("decompose", "split a GGUF into per-layer files + manifest for layer streaming");
  c->footer(decompose_help);
  c->add_option("MODEL.gguf", a->gguf, "the GGUF model")->required();
  c->add_option("OUTDIR", a->out, "the directory to write")->required();
  c->add_flag("--zstd", a->o.zstd,
              "compress layer files with zstd (decoded on load; see docs/streaming.md\n"
              "for whether that pays on your disk)");
  c->add_option_function<std::string>(
       "--zstd-level",
       [a](const std::string& v) {
         const auto n = number("--zstd-level", v);
         if (n < 1 || n > 19) throw error("--zstd-level " + std::to_string(n) + " is outside 1..19");
         a->o.zstd = true;
         a->o.zstd_level = int(n);
       },
       "zstd level 1..19 (default 3)")
      ->type_name("N");
  c->add_option_function<std::string>(
       "--align", [a](const std::string& v) { a->o.alignment = number("--align", v); },
       "tensor alignment inside files, a power of two 16..1048576 (default 4096)")
      ->type_name("N");
  c->add_flag("--quiet", a->quiet, "no progress on stderr");
  c->callback([a] { run_decompose(*a); });
}

}  // namespace octo::tool
