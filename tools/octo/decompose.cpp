// octo decompose: GGUF -> decomposed model directory for layer streaming (octo::runtime::decompose_gguf).
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "octo/error.hpp"
#include "octo/runtime/decomposed.hpp"

namespace octo::tool {

namespace {
constexpr const char* decompose_help =
    "usage: octo decompose MODEL.gguf OUTDIR [--zstd] [--zstd-level N] [--align N] [--quiet]\n"
    "\n"
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
    "the existing OUTDIR and keeps it; otherwise it is rebuilt and swapped in atomically.\n"
    "\n"
    "  --zstd          compress layer files with zstd (decoded on load; see docs/streaming.md for\n"
    "                  whether that pays on your disk)\n"
    "  --zstd-level N  zstd level 1..19 (default 3)\n"
    "  --align N       tensor alignment inside files, a power of two 16..1048576 (default 4096)\n"
    "  --quiet         no progress on stderr\n";

std::uint64_t number(std::string_view opt, std::string_view v) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) throw error(std::string(opt) + ": '" + std::string(v) + "' is not a number");
  return n;
}
}  // namespace

int decompose_main(std::span<const std::string_view> args) {
  if (wants_help(args)) {
    std::fputs(decompose_help, stdout);
    return 0;
  }
  std::vector<std::string> positional;
  stream::decompose_options o;
  bool quiet = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto a = args[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= args.size()) throw error(std::string(a) + " needs a value");
      return args[++i];
    };
    if (a == "--zstd") o.zstd = true;
    else if (a == "--zstd-level") {
      const auto n = number(a, value());
      if (n < 1 || n > 19) throw error("--zstd-level " + std::to_string(n) + " is outside 1..19");
      o.zstd = true;
      o.zstd_level = int(n);
    } else if (a == "--align") o.alignment = number(a, value());
    else if (a == "--quiet") quiet = true;
    else if (a.starts_with("-")) throw error("unknown option '" + std::string(a) + "' (see octo decompose --help)");
    else positional.emplace_back(a);
  }
  if (positional.size() != 2) {
    std::fputs(decompose_help, stderr);
    return 2;
  }
  const bool tty = ::isatty(2) != 0;
  if (!quiet)
    o.progress = [tty](const stream::decompose_progress& p) {
      const double gib = double(1 << 30);
      std::fprintf(stderr, "%sdecompose: %zu/%zu files, %.2f of %.2f GiB (%.*s)%s", tty ? "\r" : "", p.files_done,
                   p.files_total, double(p.bytes_done) / gib, double(p.bytes_total) / gib, int(p.file.size()),
                   p.file.data(), tty ? "\033[K" : "\n");
      std::fflush(stderr);
    };
  const auto outcome = runtime::decompose_gguf(positional[0], positional[1], o);
  if (!quiet && tty) std::fputc('\n', stderr);
  const char* what = outcome == stream::decompose_outcome::kept       ? "up to date (verified, kept)"
                     : outcome == stream::decompose_outcome::replaced ? "rebuilt and replaced"
                                                                      : "created";
  if (!quiet) std::fprintf(stderr, "decompose: %s: %s\n", positional[1].c_str(), what);
  return 0;
}

}  // namespace octo::tool
