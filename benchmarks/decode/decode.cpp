// Prefill of a prompt of random token ids (512 by default), then greedy decode of 128 tokens, through
// octo::runtime::engine on a GGUF. Prints one JSON object: prefill and decode tok/s, ms/token, weight
// bytes read per decoded token, and the achieved GB/s as a fraction of a bandwidth bound (--bandwidth-gbs).
//
//   bench_decode --model FILE.gguf [--prompt-tokens 512] [--decode-tokens 128] [--bandwidth-gbs 3071]
//   --at-positions P1,P2,... times decode steps at those positions instead: for each, a prompt of P
//   tokens is prefilled and --decode-tokens greedy steps follow (positions P..P+N), all through the one
//   decode program recorded at load; one JSON line per position ("decode_at"). The attention of a step
//   reads the keys up to its position, so this shows how a step's cost follows the context actually used
//   (by default split-key up to 128 keys and flash-decoding past them, chosen on the device at every
//   step; OCTO_ATTENTION=split|flash forces one; OCTO_INDIRECT=0 dispatches flash-decoding for the whole
//   cache, the comparison).
//   --profile adds where a decode step's time goes: after the timed runs (unprofiled, so their numbers
//   stand), a second engine with GPU timestamps decodes a few tokens and prefills once; JSON lines give
//   the top opcodes and tasks by GPU time of one decode step and one prefill pass, and a table on stderr
//   sets the step's kernel time per opcode against the unprofiled ms/token (the rest: barriers, gaps
//   between dependent dispatches, the host).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/error.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/runtime/model_source.hpp"

namespace {

using octo_bench::print_json_line;

// JSON lines: the top opcodes (summed) and the top tasks of one pass, by GPU time.
void print_profile(const char* phase, const std::vector<octo::vm::task_profile>& prof, std::size_t top) {
  double total = 0;
  for (const auto& r : prof) total += r.microseconds;
  print_json_line({{"name", "profile"}, {"phase", phase}, {"tasks", prof.size()}, {"gpu_us", total}});
  const auto ops = octo_bench::time_by_opcode(prof);
  for (std::size_t i = 0; i < ops.size() && i < top; ++i)
    print_json_line({{"name", "profile_opcode"},
                     {"phase", phase},
                     {"opcode", ops[i].opcode},
                     {"count", ops[i].count},
                     {"us", ops[i].us},
                     {"fraction", total > 0 ? ops[i].us / total : 0.0}});
  // By role: opcode and output name without its "blk.N." prefix (attn_q, ffn_down, ...), so each
  // weight shape's total shows.
  std::map<std::string, std::pair<double, int>> by_role;
  for (const auto& r : prof) {
    std::string role = r.output;
    if (role.rfind("blk.", 0) == 0)
      if (const auto dot = role.find('.', 4); dot != std::string::npos) role = role.substr(dot + 1);
    auto& e = by_role[r.opcode + " " + role];
    e.first += r.microseconds;
    ++e.second;
  }
  for (const auto& [role, e] : by_role)
    if (e.first >= 0.01 * total)
      print_json_line({{"name", "profile_role"},
                       {"phase", phase},
                       {"role", role},
                       {"count", e.second},
                       {"us", e.first},
                       {"fraction", total > 0 ? e.first / total : 0.0}});
  std::vector<const octo::vm::task_profile*> tasks;
  for (const auto& r : prof) tasks.push_back(&r);
  std::sort(tasks.begin(), tasks.end(), [](const auto* a, const auto* b) { return a->microseconds > b->microseconds; });
  for (std::size_t i = 0; i < tasks.size() && i < top; ++i)
    print_json_line({{"name", "profile_task"},
                     {"phase", phase},
                     {"task", tasks[i]->task},
                     {"opcode", tasks[i]->opcode},
                     {"output", tasks[i]->output},
                     {"us", tasks[i]->microseconds},
                     {"fraction", total > 0 ? tasks[i]->microseconds / total : 0.0}});
}

// The table on stderr: one decode step's GPU time per opcode (profiled, tasks serialized, so each is the
// kernel's own) against the unprofiled step's wall time; what the kernels do not account for is spent
// between them (barriers, dispatch gaps) or on the host. Negative where unprofiled kernels overlapped
// (no barrier between them) or ran faster than under timestamps (on lavapipe, always: CPU threads).
void print_step_table(const std::vector<octo::vm::task_profile>& prof, double ms_per_token, std::uint64_t dispatches,
                      std::uint64_t barriers) {
  double kernels_us = 0;
  for (const auto& r : prof) kernels_us += r.microseconds;
  const auto ops = octo_bench::time_by_opcode(prof);
  const double step_us = ms_per_token * 1000.0;
  const auto pct = [&](double us) { return step_us > 0 ? 100.0 * us / step_us : 0.0; };
  std::fprintf(stderr, "where a decode step goes (%.1f us unprofiled; %llu dispatches, %llu barriers):\n", step_us,
               static_cast<unsigned long long>(dispatches), static_cast<unsigned long long>(barriers));
  std::fprintf(stderr, "  %-28s %6s %10s %7s\n", "opcode", "count", "us/step", "% step");
  for (const auto& o : ops) std::fprintf(stderr, "  %-28s %6d %10.1f %6.1f%%\n", o.opcode.c_str(), o.count, o.us, pct(o.us));
  std::fprintf(stderr, "  %-28s %6zu %10.1f %6.1f%%\n", "kernels (sum)", prof.size(), kernels_us, pct(kernels_us));
  std::fprintf(stderr, "  %-28s %6s %10.1f %6.1f%%\n", "outside kernels", "", step_us - kernels_us,
               pct(step_us - kernels_us));
  print_json_line({{"name", "profile_step"},
                   {"step_us", step_us},
                   {"kernels_us", kernels_us},
                   {"outside_kernels_us", step_us - kernels_us},
                   {"dispatches", dispatches},
                   {"barriers", barriers}});
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, label, device;
  std::int64_t prompt_tokens = 512, decode_tokens = 128, chunk = 0, ctx = 0, repeat = 2;
  double bound_gbs = 3071.0;
  bool profile = false, control_words = false;
  std::vector<std::int64_t> skip_layers;
  std::string precision = "fast";
  octo::ir::dtype kv_type = octo::runtime::default_kv_dtype;
  std::uint32_t in_flight = octo::runtime::engine_options{}.decode_in_flight;
  std::vector<std::int64_t> at_positions;
  CLI::App app("A prompt of random ids prefilled in one pass, then greedy decode, on the Vulkan VM: one JSON line\n"
               "with both speeds and the decode's fraction of the memory bound.",
               "bench_decode");
  octo_bench::set_up(app);
  app.add_option("-m,--model", model, "the GGUF model (required)")->type_name("FILE.gguf");
  octo_bench::positive_option(app, "--prompt-tokens", prompt_tokens, "random prompt ids to prefill (default 512)");
  octo_bench::positive_option(app, "--decode-tokens", decode_tokens, "greedy tokens to decode after the prompt (default 128)");
  octo_bench::positive_option(app, "--prefill-chunk", chunk, "most prompt tokens per prefill pass (default: the whole prompt)");
  octo_bench::positive_option(app, "--ctx", ctx, "KV cache positions (default: prompt + decode rounded up to 256)");
  octo_bench::option(app, "--kv-type", "T", "the KV cache's type: f32, f16 (default) or q8_0",
                     [&](const std::string& v) { kv_type = octo::runtime::parse_kv_type(v); });
  octo_bench::positive_option(app, "--repeat", repeat, "timed runs after one warm-up run; the best of each phase (default 2)");
  octo_bench::positive_real_option(app, "--bandwidth-gbs", bound_gbs, "the bound for the fraction (default 3071: the H100's measured HBM read)");
  app.add_option("--name", label, "a label copied into the JSON (e.g. 0.5B-Q8_0)")->type_name("TEXT");
  app.add_option("--device", device, "Vulkan device index or name substring")->type_name("NAME");
  octo_bench::option(app, "--precision", "P",
                     "fast (default: prefill GEMMs on tensor cores where the device has them) or\n"
                     "accurate (f32 arithmetic; docs/precision.md)",
                     [&](const std::string& v) {
                       if (v != "fast" && v != "accurate") throw octo::error("bench_decode: --precision must be fast or accurate");
                       precision = v;
                     });
  octo_bench::option(app, "--in-flight", "N",
                     "greedy steps kept submitted ahead of the host, the next token fed on the device\n"
                     "(default: the engine's, 4; at most 256)",
                     [&](const std::string& v) {
                       in_flight = static_cast<std::uint32_t>(std::min<std::int64_t>(octo_bench::positive("bench_decode", "--in-flight", v), 256));
                     });
  app.add_flag_callback("--host-loop", [&] { in_flight = 0; },
                        "each token read back and written as the next step's input (--in-flight 0)");
  octo_bench::option(app, "--at-positions", "LIST",
                     "comma-separated positions: decode steps timed at each (a prompt of that length\n"
                     "prefilled first, --decode-tokens steps after it); one JSON line per position",
                     [&](const std::string& v) {
                       at_positions.clear();
                       for (const auto& p : octo_bench::split(v)) at_positions.push_back(octo_bench::positive("bench_decode", "--at-positions", p));
                       if (at_positions.empty()) throw octo::error("bench_decode: --at-positions needs at least one position");
                       std::sort(at_positions.begin(), at_positions.end());
                     });
  app.add_flag("--control-words", control_words,
               "record the control words' gates (every layer task an indirect dispatch;\n"
               "docs/vulkan.md \"Control words\"): their cost with nothing skipped");
  octo_bench::option(app, "--skip-layers", "LIST", "comma-separated layers to skip (turns the control words on)",
                     [&](const std::string& v) {
                       skip_layers.clear();
                       for (const auto& l : octo_bench::split(v)) {
                         if (l.find_first_not_of("0123456789") != std::string::npos || l.size() > 9)
                           throw octo::error("bench_decode: --skip-layers: '" + l + "' is not a layer index");
                         skip_layers.push_back(std::stoll(l));
                       }
                     });
  app.add_flag("--profile", profile,
               "then, on a second engine with GPU timestamps per task (tasks serialized): the top\n"
               "opcodes and tasks of one decode step and of one prefill pass, and a table (stderr) of\n"
               "where the unprofiled ms/token goes");
  octo_bench::parse_command_line(app, argc, argv);
  try {
    if (model.empty()) throw octo::error("bench_decode: --model FILE.gguf is required (see --help)");
    if (!std::filesystem::exists(model)) throw octo::error("bench_decode: --model: no such file '" + model + "'");
    if (!at_positions.empty()) prompt_tokens = std::max(prompt_tokens, at_positions.back());
    if (ctx == 0) ctx = (prompt_tokens + decode_tokens + 255) / 256 * 256;
    if (!at_positions.empty() && at_positions.back() + decode_tokens > ctx)
      throw octo::error("bench_decode: --at-positions " + std::to_string(at_positions.back()) + " + --decode-tokens " +
                        std::to_string(decode_tokens) + " exceeds --ctx " + std::to_string(ctx));

    octo::runtime::engine_options eo;
    eo.ctx = ctx;
    eo.kv_type = kv_type;
    // --at-positions prompts (up to the whole context) go in passes of 4096: one pass of 32k tokens
    // would need tens of GB of activations.
    eo.prefill_chunk = chunk > 0 ? chunk : at_positions.empty() ? prompt_tokens : std::min<std::int64_t>(prompt_tokens, 4096);
    eo.vulkan.device = device;
    eo.decode_in_flight = in_flight;
    eo.vulkan.control_words = control_words;
    eo.skip_layers = skip_layers;
    eo.vulkan.precision = precision == "accurate" ? octo::vm::matmul_precision::accurate : octo::vm::matmul_precision::fast;
    std::optional<octo::runtime::engine> timed(std::in_place, model, eo);
    auto& e = *timed;
    const auto& m = e.model();
    const auto& c = m.config();

    // Bytes one decode step reads: every weight of the decode program, except that an untied embedding
    // table is only gathered (one row); a tied one is also the LM head, read whole.
    double weight_bytes = 0.0;
    m.for_each_weight(m.decode_program(true), [&](std::string_view name, std::span<const std::byte> bytes) {
      const bool embedding = name.find("token_embd") != std::string_view::npos;
      weight_bytes += (embedding && !c.tied_embeddings) ? double(bytes.size()) / double(c.vocab) : double(bytes.size());
    });

    std::mt19937_64 rng(1234);
    std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(c.vocab - 1));
    std::vector<std::int32_t> prompt(static_cast<std::size_t>(prompt_tokens));
    for (auto& id : prompt) id = pick(rng);

    octo::runtime::sampling_params greedy;
    const auto keep_going = [](std::int32_t) { return true; };  // random weights: ignore end-of-generation
    if (!at_positions.empty()) {
      // Each position: reset, prefill P tokens (not timed here), decode N greedy steps; the best of
      // --repeat runs after a warm-up one. The decode program is the one recorded at load throughout
      // (each prompt length records its own prefill program); only the position differs.
      const std::span<const std::int32_t> all(prompt);
      for (std::size_t k = 0; k < at_positions.size(); ++k) {
        const std::int64_t P = at_positions[k];
        double best = 0;
        std::int64_t decoded_at = 0;
        for (std::int64_t r = 0; r <= repeat; ++r) {
          e.reset();
          e.generate(all.first(static_cast<std::size_t>(P)), decode_tokens, greedy, keep_going);
          const auto& t = e.last_timing();
          if (r == 0) continue;
          if (best == 0 || t.decode_ms < best) best = t.decode_ms;
          decoded_at = t.decode_tokens;
        }
        const auto s = e.decode_stats();
        const double ms = decoded_at > 0 ? best / double(decoded_at) : 0.0;
        const char* attention = std::getenv("OCTO_ATTENTION");
        const char* indirect = std::getenv("OCTO_INDIRECT");
        print_json_line({{"name", "decode_at"},
                         {"model", std::filesystem::path(model).filename().string()},
                         {"label", label},
                         {"device", e.device_name()},
                         {"position", P},
                         {"ctx", ctx},
                         {"decode_tokens", decoded_at},
                         {"ms_per_token", ms},
                         {"decode_tok_s", ms > 0 ? 1000.0 / ms : 0.0},
                         {"task_dispatches", s.task_dispatches},
                         {"indirect_dispatches", s.indirect_dispatches},
                         {"attention", attention ? attention : "default"},
                         {"indirect", indirect ? indirect : "1"},
                         {"kv_type", std::string(octo::ir::name(kv_type))}});
      }
      return 0;
    }
    double best_prefill_ms = 0, best_decode_ms = 0, first_prefill_ms = 0;
    std::int64_t decoded = 0;
    std::uint32_t most_in_flight = 0;
    bool loop_on_device = false;
    for (std::int64_t r = 0; r <= repeat; ++r) {  // run 0 warms pipelines and clocks
      e.reset();
      e.generate(prompt, decode_tokens, greedy, keep_going);
      const auto& t = e.last_timing();
      if (r == 0) {  // what a user's single prompt takes (qwen_generate): reported beside the best
        first_prefill_ms = t.prefill_ms;
        continue;
      }
      if (best_prefill_ms == 0 || t.prefill_ms < best_prefill_ms) best_prefill_ms = t.prefill_ms;
      if (best_decode_ms == 0 || t.decode_ms < best_decode_ms) best_decode_ms = t.decode_ms;
      decoded = t.decode_tokens;
      most_in_flight = t.most_in_flight;
      loop_on_device = t.token_loop_on_device;
    }
    const double prefill_tps = double(prompt_tokens) * 1000.0 / best_prefill_ms;
    const double ms_per_token = decoded > 0 ? best_decode_ms / double(decoded) : 0.0;
    const double decode_tps = ms_per_token > 0 ? 1000.0 / ms_per_token : 0.0;
    const double gbs = ms_per_token > 0 ? weight_bytes / (ms_per_token * 1e6) : 0.0;
    const auto s = e.decode_stats();
    print_json_line({{"name", "decode"},
                     {"model", std::filesystem::path(model).filename().string()},
                     {"label", label},
                     {"device", e.device_name()},
                     {"arch", m.architecture()},
                     {"weight_dtype", std::string(octo::ir::name(c.weight_dtype))},
                     {"hidden", c.hidden},
                     {"layers", c.layers},
                     {"vocab", c.vocab},
                     {"tied", c.tied_embeddings},
                     {"file_bytes", std::filesystem::file_size(model)},
                     {"prompt_tokens", prompt_tokens},
                     {"prefill_ms", best_prefill_ms},
                     {"prefill_tok_s", prefill_tps},
                     {"first_prefill_ms", first_prefill_ms},
                     {"decode_tokens", decoded},
                     {"decode_ms", best_decode_ms},
                     {"decode_tok_s", decode_tps},
                     {"ms_per_token", ms_per_token},
                     {"weight_bytes_per_token", weight_bytes},
                     {"gb_s", gbs},
                     {"fraction_of_bound", gbs / bound_gbs},
                     {"bound_gb_s", bound_gbs},
                     {"bound", "--bandwidth-gbs (H100 measured HBM read: 3071)"},
                     {"task_dispatches", s.task_dispatches},
                     // every kernel recorded: the tasks', their `before` launches (x rounded ahead, weights
                     // dequantized for a GEMM) and the VM's own (indirect group counts, L2 prefetches)
                     {"dispatches", s.dispatches},
                     {"barriers", s.barriers},
                     // per layer: the step's counts over the layers (embedding and head included)
                     {"task_dispatches_per_layer", double(s.task_dispatches) / double(std::max<std::int64_t>(c.layers, 1))},
                     // of the task dispatches, those that run every step: a task's kernels for other
                     // positions or the other precision are recorded, their group counts 0 (one a task runs)
                     {"task_dispatches_run", s.task_dispatches - s.exclusive_dispatches},
                     {"task_dispatches_run_per_layer",
                      double(s.task_dispatches - s.exclusive_dispatches) / double(std::max<std::int64_t>(c.layers, 1))},
                     {"barriers_per_layer", double(s.barriers) / double(std::max<std::int64_t>(c.layers, 1))},
                     {"token_loop", loop_on_device ? "device" : "host"},
                     {"in_flight", most_in_flight},
                     {"precision", precision},
                     {"kv_type", std::string(octo::ir::name(kv_type))},
                     {"indirect_dispatches", s.indirect_dispatches},
                     {"control_words", eo.vulkan.control_words || !skip_layers.empty()},
                     {"skipped_layers", skip_layers},
                     {"layer_stats", std::getenv("OCTO_LAYER_STATS") ? std::getenv("OCTO_LAYER_STATS") : "1"}});
    if (profile) {
      // A second engine with timestamps (the first freed before: both need the weights' memory). Its
      // decode steps run one at a time, each task after a barrier: per-kernel times, not the step's.
      const std::uint64_t dispatches = s.task_dispatches, barriers = s.barriers;
      timed.reset();
      eo.vulkan.profile = true;
      octo::runtime::engine p(model, eo);
      p.generate(prompt, std::min<std::int64_t>(decode_tokens, 8), greedy, keep_going);
      if (p.last_timing().decode_tokens > 0) {
        const auto prof = p.profile();  // the last pass: a decode step
        print_profile("decode", prof, 15);
        print_step_table(prof, ms_per_token, dispatches, barriers);
      }
      p.reset();
      p.prefill(prompt);
      print_profile("prefill", p.profile(), 15);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
