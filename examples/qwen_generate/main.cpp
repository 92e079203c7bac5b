// qwen_generate: streams the continuation of a prompt (or a chat turn: ChatML or Llama 3) from a GGUF model or a
// decomposed directory, on the best Vulkan device or on the CPU reference VM, all layers resident or
// streamed under a VRAM budget. Every bad option or file gives one line and exit 1.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <octo/error.hpp>
#include <octo/file_io.hpp>
#include <octo/ir/enums.hpp>
#include <octo/model_file/chat_template.hpp>
#include <octo/model_file/tokenizer.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/npy.hpp>
#include <octo/runtime/residency_plan.hpp>
#ifdef OCTO_HAVE_MPI
#include <octo/runtime/mpi_link.hpp>
#endif

namespace {

struct options {
  std::string model, prompt, dump_logits, device;
  std::vector<std::int32_t> then_ids;
  bool chat = false, json = false, ignore_eos = false, verbose = false, stats = false;
  std::int64_t n_predict = 128, ctx = 0, prefill_chunk = 0;  // 0: the engine's default
  octo::ir::dtype kv_type = octo::runtime::default_kv_dtype;
  octo::vm::matmul_precision precision = octo::vm::matmul_precision::fast;
  std::uint64_t vram_budget = 0;
  std::optional<std::uint64_t> ram_budget;  // unset: the engine sizes the tier from the memory available
  std::uint32_t ring = 2;
  std::uint32_t in_flight = octo::runtime::engine_options{}.decode_in_flight;  // greedy steps ahead of the host
  bool streaming = false;
  octo::runtime::sampling_params sampling{.temperature = 0.0f, .top_k = 40, .top_p = 0.95f, .repeat_penalty = 1.0f,
                                          .repeat_last_n = 64, .seed = 0};
  octo::runtime::backend vm = octo::runtime::backend::vulkan;
  // a pipeline (docs/multi-gpu.md)
  std::vector<std::string> devices;
  std::vector<std::int64_t> split;
  std::vector<std::int64_t> skip_layers;
  std::uint32_t stages = 0;
  bool mpi = false;
  std::int64_t stage_timeout_s = 300;
  bool speaks = true;  // prints the text and the summary (with --mpi: rank 0 only)
  bool pipeline() const { return mpi || stages > 1 || devices.size() > 1 || split.size() > 1; }
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

/// "a,b,c" -> its items; an empty item is an error naming the option.
std::vector<std::string> comma_list(std::string_view opt, std::string_view v) {
  std::vector<std::string> items;
  for (std::size_t b = 0; b <= v.size();) {
    const std::size_t e = std::min(v.find(',', b), v.size());
    if (e == b) bad(std::string(opt) + ": '" + std::string(v) + "' has an empty item");
    items.emplace_back(v.substr(b, e - b));
    b = e + 1;
  }
  return items;
}

options parse(int argc, char** argv) {
  options o;
  CLI::App app("Generates text from a GGUF model (architectures llama, qwen2, qwen3) or a directory made by\n"
               "`octo decompose`, on the best Vulkan device or on the CPU reference VM.",
               "qwen_generate");
  app.set_help_flag("-h,--help", "this text");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(30);
  // CLI11 splits the command line; every value is converted here, so a bad one is one line naming its
  // option ("-n: 'abc' is not an integer").
  const auto value = [&](const std::string& names, const std::string& type, const std::string& desc,
                         std::function<void(const std::string&)> set) {
    return app.add_option_function<std::string>(names, std::move(set), desc)->type_name(type);
  };
  bool have_model = false;
  value("-m,--model", "FILE|DIR", "the GGUF model file or decomposed directory (required)", [&](const std::string& v) {
    o.model = v;
    have_model = true;
  });
  app.add_option("-p,--prompt", o.prompt, "the prompt (default: empty, i.e. BOS only where the model has one)")
      ->type_name("TEXT");
  app.add_flag("--chat", o.chat, "wrap the prompt as a user turn in the model's chat format (ChatML or Llama 3)");
  value("-n,--n-predict", "N", "tokens to generate (default 128)",
        [&](const std::string& v) { o.n_predict = parse_int("--n-predict", v, 0, std::int64_t(1) << 30); });
  value("--temperature,--temp", "T", "0: greedy (default 0)",
        [&](const std::string& v) { o.sampling.temperature = parse_float("--temperature", v); });
  value("--top-k", "K", "keep the K most likely tokens, 0: all (default 40)", [&](const std::string& v) {
    o.sampling.top_k = static_cast<std::int32_t>(parse_int("--top-k", v, 0, 1 << 30));
  });
  value("--top-p", "P", "nucleus sampling mass in (0, 1] (default 0.95)",
        [&](const std::string& v) { o.sampling.top_p = parse_float("--top-p", v); });
  value("--repeat-penalty", "R", "penalty for tokens among the last 64, 1: off (default 1)",
        [&](const std::string& v) { o.sampling.repeat_penalty = parse_float("--repeat-penalty", v); });
  value("--seed", "S", "sampler seed (default 0)", [&](const std::string& v) {
    o.sampling.seed = static_cast<std::uint64_t>(parse_int("--seed", v, 0, INT64_MAX));
  });
  value("-c,--ctx", "N",
        "KV cache positions (default: the most the device memory holds, up to the\n"
        "model's trained context; --verbose says what it chose)",
        [&](const std::string& v) { o.ctx = parse_int("--ctx", v, 1, std::int64_t(1) << 24); });
  value("--kv-type", "f32|f16|q8_0", "the KV cache's type (default f16; docs/precision.md)",
        [&](const std::string& v) { o.kv_type = octo::runtime::parse_kv_type(v); });
  value("--vm", "vulkan|reference", "the Vulkan VM (default) or the CPU reference VM", [&](const std::string& v) {
    if (v == "vulkan") o.vm = octo::runtime::backend::vulkan;
    else if (v == "reference") o.vm = octo::runtime::backend::reference;
    else bad("--vm: '" + v + "' is not one of vulkan, reference");
  });
  app.add_option("--device", o.device,
                 "Vulkan device index or name substring (default: $OCTO_DEVICE, then the best)")
      ->type_name("NAME");
  value("--prefill-chunk", "N",
        "most prompt tokens per batched prefill pass (default: as many as device\n"
        "memory holds, at most the context; 512 when streaming)",
        [&](const std::string& v) { o.prefill_chunk = parse_int("--prefill-chunk", v, 1, 65536); });
  value("--precision", "fast|accurate",
        "fast (default): prefill GEMMs on tensor cores with f16 factors where the\n"
        "device has cooperative matrices, decode GEMVs over 8-bit-rounded x on integer\n"
        "dot products where it accelerates them (docs/precision.md); accurate: f32 throughout",
        [&](const std::string& v) {
          if (v == "fast") o.precision = octo::vm::matmul_precision::fast;
          else if (v == "accurate") o.precision = octo::vm::matmul_precision::accurate;
          else bad("--precision must be fast or accurate, not '" + v + "'");
        });
  value("--vram-budget", "SIZE",
        "device memory for weights, KV cache, activations and the ring (e.g. 4GiB, 512MiB);\n"
        "layers that do not fit stream",
        [&](const std::string& v) {
          o.vram_budget = octo::runtime::parse_bytes(v, "--vram-budget");
          o.streaming = true;
        });
  value("--ram-budget", "SIZE",
        "pinned host memory keeping streamed layers warm (default: half of the\n"
        "available memory beyond 1 GiB, at most what the streamed layers need;\n"
        "0: none, every pass reads them from the model)",
        [&](const std::string& v) {
          o.ram_budget = v == "0" ? 0 : octo::runtime::parse_bytes(v, "--ram-budget");
          o.streaming = true;
        });
  value("--ring", "N", "device slots streamed layers cycle through (default 2)", [&](const std::string& v) {
    o.ring = static_cast<std::uint32_t>(parse_int("--ring", v, 1, 64));
    o.streaming = true;
  });
  value("--in-flight", "N",
        "greedy decode steps kept submitted ahead of the host, the next token fed\n"
        "on the device (default " + std::to_string(o.in_flight) + "; every layer resident)",
        [&](const std::string& v) { o.in_flight = static_cast<std::uint32_t>(parse_int("--in-flight", v, 1, 256)); });
  app.add_flag_callback("--host-loop", [&] { o.in_flight = 0; },
                        "greedy decode reads each token back and writes it as the next step's\n"
                        "input (no steps in flight; for comparison, same tokens)");
  app.add_flag("--ignore-eos", o.ignore_eos, "keep generating after an end-of-generation token");
  value("--dump-logits", "FILE", "write the float32 logits of the last prompt position as .npy, shape [vocab]",
        [&](const std::string& v) {
          if (v.empty()) bad("--dump-logits needs a file name");
          o.dump_logits = v;
        });
  value("--then-ids", "I,J,...",
        "token ids appended to the encoded prompt (replays generated tokens\n"
        "exactly, e.g. to read the logits where two engines' greedy outputs part)",
        [&](const std::string& v) {
          o.then_ids.clear();
          for (const auto& id : comma_list("--then-ids", v))
            o.then_ids.push_back(static_cast<std::int32_t>(parse_int("--then-ids", id, 0, INT32_MAX)));
        });
  value("--devices", "I,J,...",
        "a pipeline: the layers split over these Vulkan devices (index or name), one\n"
        "stage each; the residual stream passes between them (docs/multi-gpu.md)",
        [&](const std::string& v) { o.devices = comma_list("--devices", v); });
  value("--split", "N,M,...", "layers per pipeline stage (default: as even as possible)", [&](const std::string& v) {
    o.split.clear();
    for (const auto& n : comma_list("--split", v)) o.split.push_back(parse_int("--split", n, 0, 1 << 20));
  });
  value("--skip-layers", "I,J,...",
        "layers to skip: each passes its input on unchanged and reads no weights\n"
        "(control words, docs/vulkan.md; changes the model's output: measured there)",
        [&](const std::string& v) {
          o.skip_layers.clear();
          for (const auto& n : comma_list("--skip-layers", v)) o.skip_layers.push_back(parse_int("--skip-layers", n, 0, 1 << 20));
        });
  value("--stages", "N", "a pipeline of N stages on --device (or --devices): N VM instances (tests)",
        [&](const std::string& v) { o.stages = static_cast<std::uint32_t>(parse_int("--stages", v, 1, 1024)); });
  app.add_flag("--mpi", o.mpi,
               "one pipeline stage per MPI rank (mpirun -n STAGES qwen_generate --mpi ...);\n"
               "with --devices, rank r uses the r-th device; rank 0 prints");
  value("--stage-timeout", "SECONDS",
        "with --mpi: how long a rank waits for another's message before the job is\n"
        "aborted (default 300)",
        [&](const std::string& v) { o.stage_timeout_s = parse_int("--stage-timeout", v, 1, 1 << 24); });
  app.add_flag("--json", o.json, "one JSON object per generated token, then a summary object");
  app.add_flag("--stats", o.stats,
               "per-layer activation statistics (RMS, max |x|, NaN/Inf) of every pass, summed up per\n"
               "layer at the end (stderr); with --json also in each token's object");
  app.add_flag("--verbose", o.verbose, "also print the model's config and the decode program's dispatch counts (stderr)");
  app.footer("A directory model, or any of --vram-budget, --ram-budget, --ring, prints the residency plan and\n"
             "the streaming counters on stderr. Every bad option or file gives one line and exit 1.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ExtrasError&) {
    bad(octo::leftover_arguments_text(app.remaining()) + " (see --help)");
  } catch (const CLI::ArgumentMismatch& e) {
    std::string what = e.what();  // "--prompt: 1 required TEXT missing"
    bad(what.substr(0, what.find(':')) + " needs a value");
  } catch (const CLI::ParseError& e) {
    bad(std::string(e.what()) + " (see --help)");
  }
  if (!have_model || o.model.empty()) bad("--model FILE.gguf is required (see --help)");
  if (std::filesystem::is_directory(o.model)) o.streaming = true;
  if (o.sampling.temperature < 0.0f) bad("--temperature must be >= 0");
  if (!(o.sampling.top_p > 0.0f && o.sampling.top_p <= 1.0f)) bad("--top-p must be in (0, 1]");
  if (o.sampling.repeat_penalty <= 0.0f) bad("--repeat-penalty must be > 0");
  if (!o.device.empty() && !o.devices.empty()) bad("--device and --devices: give one of them");
#ifndef OCTO_HAVE_MPI
  if (o.mpi) bad("--mpi: this qwen_generate was built without MPI (install libopenmpi-dev and reconfigure)");
#endif
  return o;
}

/// Warm-tier hits over lookups (0 when nothing was looked up).
double ram_hit_rate(const octo::runtime::streaming_stats& s) {
  const auto lookups = s.ram_hits + s.ram_misses;
  return lookups > 0 ? double(s.ram_hits) / double(lookups) : 0.0;
}

/// One JSON object per line (nlohmann-json; text that is not UTF-8, e.g. half a multi-byte character
/// from a byte-level token, is replaced rather than thrown).
void print_json_line(const nlohmann::ordered_json& j) {
  std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n" << std::flush;
}

/// One layer's statistics over the passes that produced the generated tokens (--stats, --json).
struct layer_summary {
  std::uint64_t passes = 0, non_finite = 0;
  double rms_sum = 0.0;
  float rms_min = 0.0f, rms_max = 0.0f, max_abs = 0.0f;
  void add(const octo::vm::layer_stats& l) {
    rms_min = passes == 0 ? l.rms : std::min(rms_min, l.rms);
    rms_max = passes == 0 ? l.rms : std::max(rms_max, l.rms);
    max_abs = std::max(max_abs, l.max_abs);
    rms_sum += l.rms;
    non_finite += l.non_finite;
    ++passes;
  }
};

nlohmann::ordered_json layers_json(const std::vector<octo::vm::layer_stats>& pass) {
  auto a = nlohmann::ordered_json::array();
  for (const auto& l : pass)
    a.push_back({{"layer", l.layer}, {"rms", l.rms}, {"max_abs", l.max_abs}, {"non_finite", l.non_finite}});
  return a;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

int run_with(const options& o, octo::runtime::engine& e) {
  const auto& tok = e.model().tokenizer();
  std::vector<std::int32_t> prompt;
  if (o.chat) {
    if (!octo::model_file::chat_format_of(tok.vocab()))
      bad(std::string("--chat: the model's chat template is none of ") + octo::model_file::chat_formats_written +
          ", the formats octo writes; give the prompt in the model's own format without --chat");
    prompt = tok.encode(octo::model_file::apply_chat(tok.vocab(), {{"user", o.prompt}}), true, true);
  }
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
  // Per layer over the passes that produced the tokens (the first token's: the prompt's last pass).
  std::map<std::int32_t, layer_summary> layers;
  const auto on_token = [&](std::int32_t id) {
    const bool end = !o.ignore_eos && tok.is_end_of_generation(id);
    if (end) return false;
    ++emitted;
    const auto pass = e.layer_statistics();
    for (const auto& l : pass) layers[l.layer].add(l);
    const std::string text = stream.push(id);
    if (!o.speaks) return true;
    if (o.json) {
      nlohmann::ordered_json j = {{"id", id}, {"text", text}};
      if (o.stats) j["layers"] = layers_json(pass);
      print_json_line(j);
    } else {
      std::cout << text << std::flush;
    }
    return true;
  };
  std::vector<float> prompt_logits;
  e.generate(prompt, o.n_predict, o.sampling, on_token, o.dump_logits.empty() ? nullptr : &prompt_logits);
  const std::string rest = stream.finish();
  if (!o.speaks) return 0;
  if (!o.dump_logits.empty()) octo::runtime::write_npy_f32(o.dump_logits, prompt_logits);

  const auto& t = e.last_timing();
  const double prefill_tps = t.prefill_ms > 0 ? double(t.prompt_tokens) * 1000.0 / t.prefill_ms : 0.0;
  const double decode_tps = t.decode_ms > 0 ? double(t.decode_tokens) * 1000.0 / t.decode_ms : 0.0;
  const double ms_per_token = t.decode_tokens > 0 ? t.decode_ms / double(t.decode_tokens) : 0.0;
  if (o.json) {
    if (!rest.empty()) print_json_line({{"id", -1}, {"text", rest}});
    nlohmann::ordered_json summary = {{"summary",
                      {{"prompt_tokens", t.prompt_tokens},
                       {"generated_tokens", emitted},
                       {"prefill_ms", t.prefill_ms},
                       {"prefill_tok_s", prefill_tps},
                       {"decode_tokens", t.decode_tokens},
                       {"decode_ms", t.decode_ms},
                       {"decode_tok_s", decode_tps},
                       {"ms_per_token", ms_per_token},
                       {"device", e.device_name()}}}};
    if (!layers.empty()) {
      auto& a = summary["summary"]["layers"] = nlohmann::ordered_json::array();
      for (const auto& [l, m] : layers)
        a.push_back({{"layer", l}, {"passes", m.passes}, {"rms_mean", m.rms_sum / double(m.passes)}, {"rms_min", m.rms_min},
                     {"rms_max", m.rms_max}, {"max_abs", m.max_abs}, {"non_finite", m.non_finite}});
    }
    if (o.streaming) {  // where the streamed layers' bytes came from
      const auto& s = e.stats();
      const auto tier = e.tier_state();
      summary["summary"]["streaming"] = {{"passes", s.passes},
                                         {"streamed_bytes_per_token", e.streamed_bytes_per_token()},
                                         {"ram_tier_bytes", tier.bytes},
                                         {"ram_tier_budget", tier.budget},
                                         {"ram_tier_automatic", tier.automatic},
                                         {"ram_hits", s.ram_hits},
                                         {"ram_misses", s.ram_misses},
                                         {"ram_hit_rate", ram_hit_rate(s)},
                                         {"ram_evictions", s.ram_evictions},
                                         {"bytes_from_source", s.bytes_from_source}};
    }
    print_json_line(summary);
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
              << octo::runtime::format_bytes(e.streamed_bytes_per_token()) << " per token, RAM tier "
              << octo::runtime::format_bytes(e.tier_state().bytes) << ": " << s.ram_hits << " hits / " << s.ram_misses
              << " misses (hit rate " << std::lround(100.0 * ram_hit_rate(s)) << "%), "
              << octo::runtime::format_bytes(s.bytes_from_source) << " read from the model\n";
  }
  if (o.stats) {
    if (layers.empty()) {
      std::cerr << "layer statistics: none (no token generated, or OCTO_LAYER_STATS=0)\n";
    } else {
      std::cerr << "layer statistics over the passes of " << layers.begin()->second.passes
                << " tokens (each layer's output):\nlayer   rms mean    rms min    rms max     max |x|  NaN/Inf\n";
      for (const auto& [l, m] : layers) {
        char row[128];
        std::snprintf(row, sizeof row, "%5d %10.4g %10.4g %10.4g %11.4g %8llu\n", l, m.rms_sum / double(m.passes),
                      double(m.rms_min), double(m.rms_max), double(m.max_abs), static_cast<unsigned long long>(m.non_finite));
        std::cerr << row;
      }
    }
  }
  if (o.verbose) {
    const auto& c = e.model().config();
    std::cerr << e.model().architecture() << ": vocab " << c.vocab << ", hidden " << c.hidden << ", layers " << c.layers
              << ", heads " << c.heads << "/" << c.kv_heads << " x " << c.head_dim << ", ffn " << c.ffn << ", ctx "
              << c.max_ctx << " (KV cache " << octo::ir::name(e.model().kv_dtype()) << "), weights "
              << octo::ir::name(c.weight_dtype) << (c.tied_embeddings ? ", tied" : "") << ", RoPE theta " << c.rope_theta
              << (c.rope_ramp.on() ? ", low frequencies scaled by " + std::to_string(c.rope_ramp.low_scale) + " (Llama 3's ramp)"
                                   : std::string())
              << "\n";
    if (o.vm == octo::runtime::backend::vulkan) {
      const auto s = e.decode_stats();
      // Per layer: the step's counts over the layers (the embedding and the head are in the step's).
      const double layers = static_cast<double>(std::max<std::int64_t>(c.layers, 1));
      // A task's kernels for other positions or the other precision are recorded but run with 0 groups:
      // task_dispatches - exclusive_dispatches run every step.
      const std::uint64_t run = s.task_dispatches - s.exclusive_dispatches;
      std::cerr << "decode program" << (e.plan().all_resident() ? "" : "s") << ": " << s.task_dispatches
                << " task dispatches recorded, " << run << " run a step (" << s.dispatches << " kernels in all), "
                << s.barriers << " barriers per step (" << std::fixed << std::setprecision(1)
                << static_cast<double>(run) / layers << " dispatches and " << static_cast<double>(s.barriers) / layers
                << " barriers per layer), " << s.submits << " submits, " << s.memory_in_use / (1024 * 1024) << " MiB in use";
      if (s.weight_copies > 0)
        std::cerr << " (" << s.weight_copy_bytes / (1024 * 1024) << " MiB of them the f16 copies of " << s.weight_copies
                  << " quantized weights, for the prompt passes)";
      std::cerr << "\n";
    }
    if (t.decode_tokens > 0) {
      if (t.token_loop_on_device)
        std::cerr << "decode loop: on the device, up to " << t.most_in_flight << " submits in flight\n";
      else
        std::cerr << "decode loop: on the host, 1 submit in flight (each token read back before the next step)\n";
    }
  }
  return 0;
}


int run(const options& o, const std::shared_ptr<octo::runtime::stage_link>& link) {
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
  eo.kv_type = o.kv_type;
  eo.prefill_chunk = o.prefill_chunk;
  eo.vulkan.device = o.device;
  eo.vram_budget = o.vram_budget;
  eo.ram_budget = o.ram_budget;
  eo.ring_depth = o.ring;
  eo.decode_in_flight = o.in_flight;
  eo.devices = o.devices;
  eo.split = o.split;
  eo.skip_layers = o.skip_layers;
  eo.stages = o.stages;
  eo.link = link;
  // The plan and the load progress where streaming or a pipeline was asked for; the context chosen
  // with --verbose and no --ctx.
  if ((o.streaming || o.pipeline() || (o.verbose && o.ctx == 0)) && o.speaks)
    eo.progress = [](std::string_view line) {
      std::string l(line);
      while (!l.empty() && l.back() == '\n') l.pop_back();
      std::cerr << l << "\n";
    };
  eo.vulkan.precision = o.precision;
  octo::runtime::engine e(o.model, eo);
  return run_with(o, e);
}

}  // namespace

int main(int argc, char** argv) {
  std::shared_ptr<octo::runtime::stage_link> link;
  try {
    options o = parse(argc, argv);
#ifdef OCTO_HAVE_MPI
    if (o.mpi) {
      link = std::make_shared<octo::runtime::mpi_link>(&argc, &argv, std::chrono::seconds(o.stage_timeout_s));
      o.speaks = link->rank() == 0;
    }
#endif
    return run(o, link);
  } catch (const std::exception& ex) {
    std::string msg = one_line(ex.what());
    if (msg.rfind("octo:", 0) != 0) msg = "qwen_generate: " + msg;
    if (link) link->fail(msg);  // every rank ends, not only this one
    std::cerr << msg << "\n";
    return 1;
  }
}
