// octo convert: Hugging Face checkpoint folder → GGUF, through octo::model_file::convert_hf_to_gguf.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <string>

#include <csignal>
#include <cstring>

#include <unistd.h>

#include "commands.hpp"
#include "octo/file_io.hpp"
#include "octo/error.hpp"
#include "octo/model_file/hf_to_gguf.hpp"

namespace octo::tool {

namespace {
constexpr const char* convert_help =
    "usage: octo convert MODEL_DIR OUT.gguf [--type TYPE] [--name NAME] [--threads N] [--quiet] [--verbose]\n"
    "\n"
    "Converts a Hugging Face checkpoint folder (config.json, model.safetensors or a sharded\n"
    "model.safetensors.index.json, tokenizer.json) of a LlamaForCausalLM, Qwen2ForCausalLM or\n"
    "Qwen3ForCausalLM model into a GGUF v3 file with llama.cpp's tensor names and metadata.\n"
    "Tensors are streamed to a temporary OUT.gguf.tmp-* as they are converted (memory stays far\n"
    "below the file's size) and the file is renamed to OUT.gguf at the end; a failed or interrupted\n"
    "conversion removes it and leaves an existing OUT.gguf as it was.\n"
    "\n"
    "  --type TYPE   weight matrices: f32, f16 (default), bf16, q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                q2_k, q3_k, q4_k, q5_k, q6_k (every matrix that type), or llama.cpp's\n"
    "                mixtures q4_k_m, q5_k_m (output head and some attn_v / ffn_down Q6_K).\n"
    "                Rows that are not whole blocks fall back as llama.cpp does (Q4_K -> Q5_0,\n"
    "                Q5_K -> Q5_1, Q6_K -> Q8_0); norms and biases stay f32\n"
    "  --name NAME   general.name (default: the folder's name)\n"
    "  --threads N   conversion threads (default: all hardware threads)\n"
    "  --quiet       no progress line on stderr\n"
    "  --verbose     print each tensor as it is written\n";

}  // namespace

int convert_main(std::span<const std::string_view> args) {
  if (wants_help(args)) {
    std::fputs(convert_help, stdout);
    return 0;
  }
  std::vector<std::string> positional;
  model_file::hf_convert_options o;
  bool verbose = false, quiet = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw error(std::string(a) + " needs a value");
      return std::string(args[++i]);
    };
    auto scheme = [&](std::string_view v) {
      const auto w = model_file::parse_weight_scheme(v);
      o.type = w.type;
      o.mix = w.mix;
    };
    if (a == "--type") scheme(value());
    else if (a.starts_with("--type=")) scheme(a.substr(7));
    else if (a == "--name") o.name = value();
    else if (a == "--threads") {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 1024) throw error("--threads: '" + v + "' is not a count from 1 to 1024");
      o.threads = unsigned(n);
    }
    else if (a == "--quiet" || a == "-q") quiet = true;
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a.starts_with("-")) throw error("unknown option '" + std::string(a) + "' (see octo convert --help)");
    else positional.emplace_back(a);
  }
  if (positional.size() != 2) {
    std::fputs(convert_help, stderr);
    return 2;
  }
  if (verbose) o.log = [](const std::string& line) { std::printf("  %s\n", line.c_str()); };
  const auto t0 = std::chrono::steady_clock::now();
  if (!quiet) {
    // On a terminal one line redrawn per tensor; in a log about twenty lines, so 339 tensors of a 7B
    // model do not flood it.
    const bool tty = ::isatty(2) != 0;
    o.progress = [tty, t0, last = -1](const model_file::hf_convert_progress& p) mutable {
      const int pct = int(100.0 * double(p.bytes_written) / double(std::max<std::uint64_t>(p.file_bytes, 1)));
      const bool done = p.index + 1 == p.count;
      if (!tty && !done && pct / 5 == last / 5) return;
      last = pct;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "%stensor %zu/%zu %-28s %-5s %9.1f / %.1f MB  %5.1f s%s", tty ? "\r" : "", p.index + 1,
                   p.count, std::string(p.name).c_str(), std::string(ir::name(p.type)).c_str(), double(p.bytes_written) / 1e6,
                   double(p.file_bytes) / 1e6, s, tty && !done ? "" : "\n");
    };
  }
  octo::remove_temporaries_on_signals();  // an interrupted conversion removes its partial file
  const auto s = model_file::convert_hf_to_gguf(positional[0], positional[1], o);
  std::printf("wrote %s: %s, file type %u, %lld tensors, %llu bytes in %.1f s\n", positional[1].c_str(),
              s.architecture.c_str(), s.file_type, static_cast<long long>(s.tensors),
              static_cast<unsigned long long>(s.file_bytes),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

}  // namespace octo::tool
