// Layer streaming under a VRAM budget: prefill of a random prompt (512 ids by default, one pass, so each
// streamed layer is uploaded once) and greedy decode through octo::runtime::engine, beside the
// measured pinned host->device bandwidth (allocate_pinned + upload_async on the transfer queue) and the
// source's read bandwidth (O_DIRECT). Prints one JSON object.
//
//   bench_stream --model FILE.gguf|DIR [--vram-budget 4GiB] [--tier ram|disk] [--ring 2] [--prompt-tokens 512]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/error.hpp"
#include "octo/ir/enums.hpp"
#include "octo/runtime/residency_plan.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Pinned host -> device bandwidth: `bytes` from one pinned block into a region, repeated, on the
/// transfer queue; the best of 5 rounds of 4 uploads (GB/s, 1e9 bytes).
double pinned_upload_gbs(const octo::vm::vulkan_options& vo, std::uint64_t bytes) {
  octo::vm::vulkan_vm vm(vo);
  vm.create_region("bandwidth", bytes);
  const auto p = vm.allocate_pinned(bytes);
  std::memset(p.data, 1, std::size_t(bytes));
  std::uint64_t v = vm.upload_async(p.id, 0, "bandwidth", 0, bytes, 0);  // warm-up
  vm.wait_upload(v);
  double best = 0.0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < 4; ++i) v = vm.upload_async(p.id, 0, "bandwidth", 0, bytes, 0);
    vm.wait_upload(v);
    best = std::max(best, 4.0 * double(bytes) / seconds_since(t0) / 1e9);
  }
  vm.free_pinned(p.id);
  return best;
}

/// Read bandwidth of `path` with O_DIRECT (buffered where refused): up to `limit` bytes in 8 MiB preads.
double direct_read_gbs(const std::filesystem::path& path, std::uint64_t limit, bool& direct) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  direct = fd >= 0;
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw octo::error("bench_stream: cannot open '" + path.string() + "': " + std::strerror(errno));
  constexpr std::uint64_t chunk = std::uint64_t(8) << 20;
  octo::stream::aligned_buffer buf(chunk);
  const std::uint64_t size = std::filesystem::file_size(path);
  const std::uint64_t n = std::min(limit, size) / 4096 * 4096;
  const auto t0 = clock_type::now();
  std::uint64_t done = 0;
  while (done < n) {
    const auto want = std::size_t(std::min(chunk, n - done));
    const ssize_t r = ::pread(fd, buf.data(), want, off_t(done));
    if (r < 0 && errno == EINVAL && direct) {  // filesystem refuses O_DIRECT
      ::close(fd);
      fd = ::open(path.c_str(), O_RDONLY);
      direct = false;
      continue;
    }
    if (r <= 0) break;
    done += std::uint64_t(r);
  }
  const double s = seconds_since(t0);
  ::close(fd);
  return done > 0 && s > 0 ? double(done) / s / 1e9 : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, label, device, tier = "ram";
  std::uint64_t vram_budget = std::uint64_t(4) << 30;
  std::int64_t prompt_tokens = 512, decode_tokens = 32, ctx = 0, repeat = 2, ring = 2, bw_mib = 256;
  std::int64_t resident_layers = -1;
  bool baseline = true, profile = false;
  CLI::App app("A model streamed through a memory budget (layers uploaded through a ring, from a pinned RAM tier\n"
               "or the source) against the same model resident: prefill and decode speeds, the PCIe bound and\n"
               "where the time goes, one JSON line.",
               "bench_stream");
  octo_bench::set_up(app);
  app.add_option("-m,--model", model, "the GGUF model or decomposed directory (required)")->type_name("FILE.gguf|DIR");
  octo_bench::option(app, "--vram-budget", "SIZE", "device memory for weights, KV cache, activations, ring (default 4GiB)",
                     [&](const std::string& v) { vram_budget = octo::runtime::parse_bytes(v, "bench_stream: --vram-budget"); });
  octo_bench::option(app, "--tier", "ram|disk",
                     "ram: every streamed layer kept in pinned RAM (filled by the warm-up run); disk: no RAM\n"
                     "tier, every pass reads the layers from the source (default ram)",
                     [&](const std::string& v) {
                       if (v != "ram" && v != "disk") throw octo::error("bench_stream: --tier must be ram or disk");
                       tier = v;
                     });
  octo_bench::positive_option(app, "--ring", ring, "ring slots (default 2)");
  octo_bench::option(app, "--resident-layers", "N", "exactly N layers resident (first and last first) instead of the budget's plan",
                     [&](const std::string& v) {
                       resident_layers = v == "0" ? 0 : octo_bench::positive("bench_stream", "--resident-layers", v);
                     });
  octo_bench::positive_option(app, "--prompt-tokens", prompt_tokens, "random prompt ids, prefilled in one pass (default 512)");
  octo_bench::positive_option(app, "--decode-tokens", decode_tokens, "greedy tokens after the prompt (default 32)");
  octo_bench::positive_option(app, "--ctx", ctx, "KV positions (default: prompt + decode rounded up to 256)");
  octo_bench::positive_option(app, "--repeat", repeat, "timed runs after one warm-up run; the best of each phase (default 2)");
  app.add_flag_callback("--no-baseline", [&] { baseline = false; }, "skip the all-resident run (compute time without streaming)");
  app.add_flag("--profile", profile,
               "then one more prefill on each engine with GPU timestamps per task (tasks serialized):\n"
               "its GPU time per opcode, as JSON lines");
  octo_bench::positive_option(app, "--bandwidth-mib", bw_mib, "bytes per measured upload / read (default 256)");
  app.add_option("--name", label, "a label copied into the JSON")->type_name("TEXT");
  app.add_option("--device", device, "Vulkan device index or name substring")->type_name("NAME");
  octo_bench::parse_command_line(app, argc, argv);
  try {
    if (model.empty()) throw octo::error("bench_stream: --model FILE.gguf|DIR is required (see --help)");
    if (!std::filesystem::exists(model)) throw octo::error("bench_stream: --model: no such file or directory '" + model + "'");
    if (ctx == 0) ctx = (prompt_tokens + decode_tokens + 255) / 256 * 256;
    const bool is_dir = std::filesystem::is_directory(model);

    octo::vm::vulkan_options vo;
    vo.device = device;
    const std::uint64_t bw_bytes = std::uint64_t(bw_mib) << 20;
    const double pcie_gbs = pinned_upload_gbs(vo, bw_bytes);

    std::mt19937_64 rng(1234);
    std::vector<std::int32_t> prompt(static_cast<std::size_t>(prompt_tokens));
    octo::runtime::sampling_params greedy;
    const auto keep_going = [](std::int32_t) { return true; };  // random weights: ignore end-of-generation

    octo::runtime::engine_options so;
    so.ctx = ctx;
    so.prefill_chunk = prompt_tokens;
    so.ring_depth = static_cast<std::uint32_t>(ring);
    so.vulkan = vo;
    so.progress = [](std::string_view line) { std::fprintf(stderr, "%.*s\n", int(line.size()), line.data()); };

    struct phase {
      double prefill_ms = 0, decode_ms = 0;
      std::int64_t decoded = 0;
    };
    const auto measure = [&](octo::runtime::engine& e, octo::runtime::streaming_stats* warm_stats) {
      std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(e.model().config().vocab - 1));
      for (auto& id : prompt) id = pick(rng);
      phase best;
      for (std::int64_t r = 0; r <= repeat; ++r) {  // run 0 warms pipelines, clocks and the RAM tier
        e.reset();
        if (r == 1) e.reset_stats();
        e.generate(prompt, decode_tokens, greedy, keep_going);
        const auto& t = e.last_timing();
        if (r == 0) continue;
        if (best.prefill_ms == 0 || t.prefill_ms < best.prefill_ms) best.prefill_ms = t.prefill_ms;
        if (best.decode_ms == 0 || t.decode_ms < best.decode_ms) best.decode_ms = t.decode_ms;
        best.decoded = t.decode_tokens;
      }
      if (warm_stats) *warm_stats = e.stats();
      return best;
    };

    // --profile: one prefill on an engine of the same options with per-task GPU timestamps (tasks
    // serialized, so the sums show where each program's time goes, not the overlap within it).
    const auto profile_prefill = [&](octo::runtime::engine_options o, const char* which) {
      o.vulkan.profile = true;
      octo::runtime::engine e(model, o);
      e.reset();
      (void)e.prefill(prompt);  // once to build and warm, once measured
      e.reset();
      const auto t0 = clock_type::now();
      (void)e.prefill(prompt);
      const double wall_ms = seconds_since(t0) * 1e3;
      const auto prof = e.profile();
      double total = 0;
      for (const auto& t : prof) total += t.microseconds;
      for (const auto& o : octo_bench::time_by_opcode(prof))
        octo_bench::print_json_line({{"name", "stream_profile"}, {"engine", which}, {"opcode", o.opcode},
                                     {"count", o.count}, {"us", o.us}});
      octo_bench::print_json_line({{"name", "stream_profile"}, {"engine", which}, {"gpu_us", total},
                                   {"prefill_ms", wall_ms}});
    };

    // Compute alone: every layer resident (the whole model in one program per pass, no uploads), when it
    // fits; the hidden fraction below then also charges the chain's extra submits to streaming.
    double resident_ms_per_token = -1, resident_prefill_ms = -1;
    if (baseline) {
      try {
        auto bo = so;
        bo.vram_budget = 0;  // all resident
        octo::runtime::engine e(model, bo);
        const auto b = measure(e, nullptr);
        resident_ms_per_token = b.decoded > 0 ? b.decode_ms / double(b.decoded) : -1;
        resident_prefill_ms = b.prefill_ms;
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "bench_stream: no all-resident baseline: %s\n", ex.what());
      }
    }

    so.vram_budget = vram_budget;
    so.resident_layers = resident_layers;
    so.ram_budget = tier == "ram" ? std::numeric_limits<std::uint64_t>::max() / 2 : 0;
    octo::runtime::engine e(model, so);
    octo::runtime::streaming_stats st;
    const auto s = measure(e, &st);
    const auto& plan = e.plan();
    const auto& c = e.model().config();

    // Source read bandwidth: the first layer file (directory) or the GGUF itself, O_DIRECT.
    bool direct = false;
    double disk_gbs = 0.0;
    if (is_dir) {
      const auto m = octo::stream::manifest::load(model);
      disk_gbs = direct_read_gbs(m.path_of(m.layer_file(c.layers / 2)), bw_bytes * 4, direct);
    } else {
      disk_gbs = direct_read_gbs(model, bw_bytes * 4, direct);
    }

    const double bytes_per_token = double(e.streamed_bytes_per_token());
    const double ms_per_token = s.decoded > 0 ? s.decode_ms / double(s.decoded) : 0.0;
    const double decode_tps = ms_per_token > 0 ? 1000.0 / ms_per_token : 0.0;
    const double prefill_tps = s.prefill_ms > 0 ? double(prompt_tokens) * 1000.0 / s.prefill_ms : 0.0;
    const double stream_gbs = ms_per_token > 0 ? bytes_per_token / (ms_per_token * 1e6) : 0.0;
    // The decode bound of issue 8: bytes per token over min(PCIe, disk) (disk only when it is the source).
    const double bound_gbs = tier == "disk" ? std::min(pcie_gbs, disk_gbs) : pcie_gbs;
    const double bound_tps = bytes_per_token > 0 && bound_gbs > 0 ? bound_gbs * 1e9 / bytes_per_token : 0.0;
    const double upload_ms = pcie_gbs > 0 ? bytes_per_token / (pcie_gbs * 1e6) : 0.0;
    // Upload time hidden behind compute: 1 - (streaming time - compute time) / upload time.
    double hidden = -1;
    if (resident_ms_per_token > 0 && upload_ms > 0)
      hidden = std::clamp(1.0 - (ms_per_token - resident_ms_per_token) / upload_ms, 0.0, 1.0);
    const double passes = st.passes > 0 ? double(st.passes) : 1.0;

    octo_bench::print_json_line({{"name", "stream"},
                                 {"model", std::filesystem::path(model).filename().string()},
                                 {"label", label},
                                 {"device", e.device_name()},
                                 {"source", is_dir ? "directory" : "gguf"},
                                 {"tier", tier},
                                 {"weight_dtype", std::string(octo::ir::name(c.weight_dtype))},
                                 {"layers", c.layers},
                                 {"hidden", c.hidden},
                                 {"vram_budget", vram_budget},
                                 {"ring", plan.ring_depth},
                                 {"resident_layers", plan.resident_layers},
                                 {"streamed_layers", plan.streamed_layers},
                                 {"slot_bytes", plan.slot_bytes},
                                 {"plan_total_bytes", plan.total_bytes},
                                 {"prompt_tokens", prompt_tokens},
                                 {"prefill_ms", s.prefill_ms},
                                 {"prefill_tok_s", prefill_tps},
                                 {"decode_tokens", s.decoded},
                                 {"decode_ms", s.decode_ms},
                                 {"decode_tok_s", decode_tps},
                                 {"ms_per_token", ms_per_token},
                                 {"streamed_bytes_per_token", bytes_per_token},
                                 {"stream_gb_s", stream_gbs},
                                 {"pinned_h2d_gb_s", pcie_gbs},
                                 {"disk_read_gb_s", disk_gbs},
                                 {"disk_direct_io", direct},
                                 {"fraction_of_pcie", pcie_gbs > 0 ? stream_gbs / pcie_gbs : 0.0},
                                 {"fraction_of_disk", disk_gbs > 0 ? stream_gbs / disk_gbs : 0.0},
                                 {"bound_gb_s", bound_gbs},
                                 {"bound_tok_s", bound_tps},
                                 {"fraction_of_bound", bound_tps > 0 ? decode_tps / bound_tps : 0.0},
                                 {"resident_ms_per_token", resident_ms_per_token},
                                 {"resident_prefill_ms", resident_prefill_ms},
                                 {"upload_ms_per_token", upload_ms},
                                 {"hidden_fraction", hidden},
                                 {"ram_hits", st.ram_hits},
                                 {"ram_misses", st.ram_misses},
                                 {"bytes_from_source", st.bytes_from_source},
                                 {"fetch_wait_ms_per_pass", st.fetch_wait_ms / passes},
                                 {"upload_wait_ms_per_pass", st.upload_wait_ms / passes},
                                 {"compute_wait_ms_per_pass", st.compute_wait_ms / passes}});
    if (profile) {
      auto resident = so;
      resident.vram_budget = 0;
      resident.resident_layers = -1;
      if (baseline) profile_prefill(resident, "resident");
      profile_prefill(so, "streamed");
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "%s\n", ex.what());
    return 1;
  }
  return 0;
}
