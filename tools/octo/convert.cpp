// octo convert: Hugging Face checkpoint folder → GGUF, through octo::model_file::convert_hf_to_gguf.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <memory>
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
    "Converts a Hugging Face checkpoint folder (config.json, model.safetensors or a sharded\n"
    "model.safetensors.index.json, tokenizer.json) of a LlamaForCausalLM, Qwen2ForCausalLM or\n"
    "Qwen3ForCausalLM model into a GGUF v3 file with llama.cpp's tensor names and metadata.\n"
    "Tensors are streamed to a temporary OUT.gguf.tmp-* as they are converted (memory stays far\n"
    "below the file's size) and the file is renamed to OUT.gguf at the end; a failed or interrupted\n"
    "conversion removes it and leaves an existing OUT.gguf as it was.";

struct convert_args {
  std::string model_dir, out;
  model_file::hf_convert_options o;
  bool verbose = false, quiet = false;
};

void run_convert(convert_args& a) {
  auto& o = a.o;
  const bool verbose = a.verbose, quiet = a.quiet;
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
  const auto s = model_file::convert_hf_to_gguf(a.model_dir, a.out, o);
  std::printf("wrote %s: %s, file type %u, %lld tensors, %llu bytes in %.1f s\n", a.out.c_str(),
              s.architecture.c_str(), s.file_type, static_cast<long long>(s.tensors),
              static_cast<unsigned long long>(s.file_bytes),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

void add_convert(CLI::App& app) {
  auto a = std::make_shared<convert_args>();
  auto* c = app.add_subcommand("convert", "convert a Hugging Face checkpoint folder (safetensors) to GGUF");
  c->footer(convert_help);
  c->add_option("MODEL_DIR", a->model_dir, "the checkpoint folder")->required();
  c->add_option("OUT.gguf", a->out, "the GGUF file to write")->required();
  c->add_option_function<std::string>(
       "--type",
       [a](const std::string& v) {
         const auto w = model_file::parse_weight_scheme(v);
         a->o.type = w.type;
         a->o.mix = w.mix;
       },
       "weight matrices: f32, f16 (default), bf16, q8_0, q4_0, q4_1, q5_0,\n"
       "q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs (every matrix that\n"
       "type), or\n"
       "llama.cpp's mixtures q4_k_m, q5_k_m (output head and some attn_v /\n"
       "ffn_down Q6_K). Rows that are not whole blocks fall back as llama.cpp\n"
       "does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/IQ4_XS ->\n"
       "IQ4_NL); norms and biases stay f32")
      ->type_name("TYPE");
  c->add_option("--name", a->o.name, "general.name (default: the folder's name)")->type_name("NAME");
  c->add_option_function<std::string>(
       "--threads",
       [a](const std::string& v) {
         char* end = nullptr;
         const long n = std::strtol(v.c_str(), &end, 10);
         if (v.empty() || *end != '\0' || n < 1 || n > 1024)
           throw error("--threads: '" + v + "' is not a count from 1 to 1024");
         a->o.threads = unsigned(n);
       },
       "conversion threads (default: all hardware threads)")
      ->type_name("N");
  c->add_flag("-q,--quiet", a->quiet, "no progress line on stderr");
  c->add_flag("-v,--verbose", a->verbose, "print each tensor as it is written");
  c->callback([a] { run_convert(*a); });
}

}  // namespace octo::tool
