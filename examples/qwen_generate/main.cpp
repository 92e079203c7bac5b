// qwen_generate: streams the continuation of a prompt (or a ChatML chat turn) from a GGUF model or a
// decomposed directory, on the best Vulkan device or on the CPU reference VM, all layers resident or
// streamed under a VRAM budget. Every bad option or file gives one line and exit 1.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <octo/error.hpp>
#include <octo/file_io.hpp>
#include <octo/ir/enums.hpp>
#include <octo/model_file/chat_template.hpp>
#include <octo/model_file/tokenizer.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/npy.hpp>
#include <octo/runtime/residency_plan.hpp>

namespace {

constexpr const char* usage = R"(usage: qwen_generate --model FILE.gguf|DIR [options]
Generates text from a GGUF model (architectures llama, qwen2, qwen3) or a directory made by
`octo decompose`.
  --model FILE|DIR      the GGUF model file or decomposed directory (required)
  --prompt TEXT         the prompt (default: empty, i.e. BOS only where the model has one)
  --chat                wrap the prompt as a ChatML user turn (instruct models)
  -n, --n-predict N     tokens to generate (default 128)
  --temperature T       0: greedy (default 0)
  --top-k K             keep the K most likely tokens, 0: all (default 40)
  --top-p P             nucleus sampling mass in (0, 1] (default 0.95)
  --repeat-penalty R    penalty for tokens among the last 64, 1: off (default 1)
  --seed S              sampler seed (default 0)
  --ctx N               KV cache positions (default: the model's context length, at most 4096)
  --vm vulkan|reference the Vulkan VM (default) or the CPU reference VM
  --device NAME         Vulkan device index or name substring (default: $OCTO_DEVICE, then the best)
  --prefill-chunk N     most prompt tokens per batched prefill pass (default 128)
  --vram-budget SIZE    stream layers that do not fit SIZE of device memory (e.g. 4GiB, 512MiB):
                        weights, KV cache, activations and the ring; prints the residency plan
  --ram-budget SIZE     pinned host memory keeping streamed layers warm (default 0: read each pass)
  --ring N              device slots streamed layers cycle through (default 2)
                        (a directory model, or any of these three, prints the plan and streaming counters)
  --ignore-eos          keep generating after an end-of-generation token
  --dump-logits FILE    write the float32 logits of the last prompt position as .npy, shape [vocab]
  --then-ids I,J,...    token ids appended to the encoded prompt (replays generated tokens exactly, e.g.
                        to read the logits where two engines' greedy outputs part)
  --json                one JSON object per generated token, then a summary object
  --verbose             also print the model's config and the decode program's dispatch counts (stderr)
  -h, --help            this text
)";

struct options {
  std::string model, prompt, dump_logits, device;
  std::vector<std::int32_t> then_ids;
  bool chat = false, json = false, ignore_eos = false, verbose = false;
  std::int64_t n_predict = 128, ctx = 0, prefill_chunk = 128;
  std::uint64_t vram_budget = 0, ram_budget = 0;
  std::uint32_t ring = 2;
  bool streaming = false;
  octo::runtime::sampling_params sampling{.temperature = 0.0f, .top_k = 40, .top_p = 0.95f, .repeat_penalty = 1.0f,
                                          .repeat_last_n = 64, .seed = 0};
  octo::runtime::backend vm = octo::runtime::backend::vulkan;
};

[[noreturn]] void bad(const std::string& what) { throw octo::error(what); }

std::int64_t parse_int(std::string_view opt, std::string_view v, std::int64_t lo, std::int64_t hi) {
  std::int64_t r = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    bad(std::string(opt) + ": '" + std::string(v) + "' is not an integer");
  if (r < lo || r > hi)
    bad(std::string(opt) + ": " + std::string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return r;
}

float parse_float(std::string_view opt, std::string_view v) {
  const std::string s(v);
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(r) || std::abs(r) > 1e30)
    bad(std::string(opt) + ": '" + s + "' is not a finite number");
  return static_cast<float>(r);
}

options parse(int argc, char** argv) {
  options o;
  bool have_model = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) bad(std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      std::exit(0);
    } else if (a == "--model" || a == "-m") {
      o.model = value();
      have_model = true;
    } else if (a == "--prompt" || a == "-p") {
      o.prompt = value();
    } else if (a == "--chat") {
      o.chat = true;
    } else if (a == "-n" || a == "--n-predict") {
      o.n_predict = parse_int(a, value(), 0, std::int64_t(1) << 30);
    } else if (a == "--temperature" || a == "--temp") {
      o.sampling.temperature = parse_float(a, value());
    } else if (a == "--top-k") {
      o.sampling.top_k = static_cast<std::int32_t>(parse_int(a, value(), 0, 1 << 30));
    } else if (a == "--top-p") {
      o.sampling.top_p = parse_float(a, value());
    } else if (a == "--repeat-penalty") {
      o.sampling.repeat_penalty = parse_float(a, value());
    } else if (a == "--seed") {
      o.sampling.seed = static_cast<std::uint64_t>(parse_int(a, value(), 0, INT64_MAX));
    } else if (a == "--ctx" || a == "-c") {
      o.ctx = parse_int(a, value(), 1, std::int64_t(1) << 24);
    } else if (a == "--prefill-chunk") {
      o.prefill_chunk = parse_int(a, value(), 1, 65536);
    } else if (a == "--vram-budget") {
      o.vram_budget = octo::runtime::parse_bytes(std::string(value()), "--vram-budget");
      o.streaming = true;
    } else if (a == "--ram-budget") {
      const auto v = value();
      o.ram_budget = v == "0" ? 0 : octo::runtime::parse_bytes(std::string(v), "--ram-budget");
      o.streaming = true;
    } else if (a == "--ring") {
      o.ring = static_cast<std::uint32_t>(parse_int(a, value(), 1, 64));
      o.streaming = true;
    } else if (a == "--vm") {
      const auto v = value();
      if (v == "vulkan") o.vm = octo::runtime::backend::vulkan;
      else if (v == "reference") o.vm = octo::runtime::backend::reference;
      else bad("--vm: '" + std::string(v) + "' is not one of vulkan, reference");
    } else if (a == "--device") {
      o.device = value();
    } else if (a == "--ignore-eos") {
      o.ignore_eos = true;
    } else if (a == "--dump-logits") {
      o.dump_logits = value();
      if (o.dump_logits.empty()) bad("--dump-logits needs a file name");
    } else if (a == "--then-ids") {
      const std::string_view v = value();
      for (std::size_t b = 0; b <= v.size();) {
        const std::size_t e = std::min(v.find(',', b), v.size());
        o.then_ids.push_back(static_cast<std::int32_t>(parse_int("--then-ids", v.substr(b, e - b), 0, INT32_MAX)));
        b = e + 1;
      }
    } else if (a == "--verbose") {
      o.verbose = true;
    } else if (a == "--json") {
      o.json = true;
    } else {
      bad("unknown option '" + std::string(a) + "' (see --help)");
    }
  }
  if (!have_model || o.model.empty()) bad("--model FILE.gguf is required (see --help)");
  if (std::filesystem::is_directory(o.model)) o.streaming = true;
  if (o.sampling.temperature < 0.0f) bad("--temperature must be >= 0");
  if (!(o.sampling.top_p > 0.0f && o.sampling.top_p <= 1.0f)) bad("--top-p must be in (0, 1]");
  if (o.sampling.repeat_penalty <= 0.0f) bad("--repeat-penalty must be > 0");
  return o;
}

std::string json_escape(std::string_view s) {
  std::string r;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\r': r += "\\r"; break;
      case '\t': r += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += ch;
        }
    }
  }
  return r;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

int run_with(const options& o, octo::runtime::engine& e) {
  const auto& tok = e.model().tokenizer();
  std::vector<std::int32_t> prompt;
  if (o.chat) prompt = tok.encode(octo::model_file::apply_chatml({{"user", o.prompt}}), true, true);
  else prompt = tok.encode(o.prompt, true, false);
  for (const std::int32_t id : o.then_ids) {
    if (id >= e.model().config().vocab) bad("--then-ids: " + std::to_string(id) + " is past the model's vocabulary");
    prompt.push_back(id);
  }
  if (prompt.empty()) {
    if (tok.vocab().bos >= 0) prompt.push_back(tok.vocab().bos);
    else bad("the prompt is empty and the model has no BOS token to start from (give --prompt)");
  }
  if (static_cast<std::int64_t>(prompt.size()) > e.context())
    bad("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
        std::to_string(e.context()) + " (raise --ctx)");

  octo::model_file::token_stream stream(tok);
  std::int64_t emitted = 0;
  const auto on_token = [&](std::int32_t id) {
    const bool end = !o.ignore_eos && tok.is_end_of_generation(id);
    if (end) return false;
    ++emitted;
    const std::string text = stream.push(id);
    if (o.json) std::cout << "{\"id\":" << id << ",\"text\":\"" << json_escape(text) << "\"}\n" << std::flush;
    else std::cout << text << std::flush;
    return true;
  };
  std::vector<float> prompt_logits;
  e.generate(prompt, o.n_predict, o.sampling, on_token, o.dump_logits.empty() ? nullptr : &prompt_logits);
  const std::string rest = stream.finish();
  if (!o.dump_logits.empty()) octo::runtime::write_npy_f32(o.dump_logits, prompt_logits);

  const auto& t = e.last_timing();
  const double prefill_tps = t.prefill_ms > 0 ? double(t.prompt_tokens) * 1000.0 / t.prefill_ms : 0.0;
  const double decode_tps = t.decode_ms > 0 ? double(t.decode_tokens) * 1000.0 / t.decode_ms : 0.0;
  const double ms_per_token = t.decode_tokens > 0 ? t.decode_ms / double(t.decode_tokens) : 0.0;
  if (o.json) {
    if (!rest.empty()) std::cout << "{\"id\":-1,\"text\":\"" << json_escape(rest) << "\"}\n";
    std::cout << "{\"summary\":{\"prompt_tokens\":" << t.prompt_tokens << ",\"generated_tokens\":" << emitted
              << ",\"prefill_ms\":" << t.prefill_ms << ",\"prefill_tok_s\":" << prefill_tps
              << ",\"decode_tokens\":" << t.decode_tokens << ",\"decode_ms\":" << t.decode_ms
              << ",\"decode_tok_s\":" << decode_tps << ",\"ms_per_token\":" << ms_per_token << ",\"device\":\""
              << json_escape(e.device_name()) << "\"}}\n";
  } else {
    std::cout << rest << "\n" << std::flush;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "prefill: %lld tokens, %.1f tok/s | decode: %lld tokens, %.1f tok/s, %.2f ms/token | device: ",
                static_cast<long long>(t.prompt_tokens), prefill_tps, static_cast<long long>(t.decode_tokens),
                decode_tps, ms_per_token);
  std::cerr << line << e.device_name() << "\n";
  if (o.streaming) {
    const auto& s = e.stats();
    std::cerr << "streaming: " << s.passes << " passes, " << s.layer_uploads << " layer uploads ("
              << octo::runtime::format_bytes(s.bytes_uploaded) << "), "
              << octo::runtime::format_bytes(e.streamed_bytes_per_token()) << " per token, RAM tier " << s.ram_hits
              << " hits / " << s.ram_misses << " misses, " << octo::runtime::format_bytes(s.bytes_from_source)
              << " read from the model\n";
  }
  if (o.verbose) {
    const auto& c = e.model().config();
    std::cerr << e.model().architecture() << ": vocab " << c.vocab << ", hidden " << c.hidden << ", layers " << c.layers
              << ", heads " << c.heads << "/" << c.kv_heads << " x " << c.head_dim << ", ffn " << c.ffn << ", ctx "
              << c.max_ctx << ", weights " << octo::ir::name(c.weight_dtype) << (c.tied_embeddings ? ", tied" : "")
              << "\n";
    if (o.vm == octo::runtime::backend::vulkan) {
      const auto s = e.decode_stats();
      std::cerr << "decode program" << (e.plan().all_resident() ? "" : "s") << ": " << s.task_dispatches
                << " task dispatches, " << s.barriers << " barriers, " << s.submits << " submits, "
                << s.memory_in_use / (1024 * 1024) << " MiB in use\n";
    }
  }
  return 0;
}


int run(const options& o) {
  if (!std::filesystem::exists(o.model)) bad("--model: no such file '" + o.model + "'");
  if (!o.dump_logits.empty()) {  // fail before any output, without touching an existing file
    try {
      octo::check_output_path(o.dump_logits);
    } catch (const octo::error& ex) {
      bad(std::string("--dump-logits: ") + ex.what());
    }
  }
  octo::runtime::engine_options eo;
  eo.vm = o.vm;
  eo.ctx = o.ctx;
  eo.prefill_chunk = o.prefill_chunk;
  eo.vulkan.device = o.device;
  eo.vram_budget = o.vram_budget;
  eo.ram_budget = o.ram_budget;
  eo.ring_depth = o.ring;
  if (o.streaming)  // the plan and the load progress, where streaming was asked for
    eo.progress = [](std::string_view line) {
      std::string l(line);
      while (!l.empty() && l.back() == '\n') l.pop_back();
      std::cerr << l << "\n";
    };
  octo::runtime::engine e(o.model, eo);
  return run_with(o, e);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& ex) {
    std::string msg = one_line(ex.what());
    if (msg.rfind("octo:", 0) != 0) msg = "qwen_generate: " + msg;
    std::cerr << msg << "\n";
    return 1;
  }
}
