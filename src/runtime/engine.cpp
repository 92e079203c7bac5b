// engine: the residency plan, the segment programs in one VM (one whole program when every layer is
// resident, else embedding / one per layer / head), the generate loop, and the pipeline that keeps
// streamed layers flowing: reader thread -> pinned staging (or the warm RAM tier) -> upload into a ring
// slot (after the compute that last used the slot) -> the layer's submit (after its upload).
// Split into pipeline stages (docs/multi-gpu.md), each stage is that machinery for its part of the
// model, on a VM of its own, and the stages pass the residual stream as messages ("the pipeline", below).
#include "octo/runtime/engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "engine_vm.hpp"
#include "octo/error.hpp"
#include "octo/models/decoder.hpp"
#include "octo/stream/prefetcher.hpp"
#include "octo/stream/ram_tier.hpp"

namespace octo::runtime {

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

constexpr std::uint64_t buffer_alignment = 256;  // placements inside regions
std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

/// The programs of one pass length T: the whole model (or pipeline stage's part) in one program, or a
/// chain: embedding, one per layer, head (a stage's chain may be a single layer's program).
struct program_set {
  std::int64_t T = 0;
  std::vector<std::uint32_t> programs;
  std::set<std::string, std::less<>> weights;  // the WEIGHT buffers its programs name
  bool one_program = false;  // the whole part in one program, every layer resident
  bool whole() const { return one_program; }
  std::uint32_t head() const { return programs.back(); }
};

std::string slot_region(std::uint32_t s) { return "slot" + std::to_string(s); }

}  // namespace

struct engine::impl {
  engine_options options;
  std::unique_ptr<model_source> src;
  models::model_config cfg;
  /// The part of the model this VM runs: all of it, or one pipeline stage's layers (the embedding with
  /// the first stage, the head with the last).
  models::segment part;
  struct pipeline;
  std::unique_ptr<pipeline> pipe;   // several stages: they hold the VMs, this impl holds none
  std::int64_t chunk = 1;           // prefill T upper bound
  std::uint64_t hidden_half = 0;    // bytes of one half of the hidden ping-pong region
  std::uint64_t scratch_bytes = 0;  // the shared activation region
  residency_plan plan;
  bool whole = true;                   // every layer resident, the model in one program per pass length
  std::vector<std::int64_t> streamed;  // streamed layers in order
  std::vector<std::int64_t> slot_of;   // per layer: ring slot, -1 when resident
  std::unique_ptr<detail::engine_vm> vm;
  std::set<std::string, std::less<>> weights_written;
  std::optional<program_set> decode_set, prefill_set;
  const program_set* last_ran = nullptr;  // whose profile() is the last pass's
  std::vector<vm::layer_stats> pass_stats;  // the last pass's layer statistics (engine::layer_statistics)

  // ---- the streaming pipeline -------------------------------------------------------------------------
  struct host_buffer {
    detail::pinned_block mem;
    bool busy = false;
  };
  struct fetch {
    std::int64_t item = 0, layer = 0;
    std::uint32_t pinned_id = 0;
    std::uint64_t pinned_offset = 0;
    int staging = -1;       // staging buffer index, or -1 for a tier blob
    bool tier = false;      // the blob is pinned in the tier
    enum class lookup : std::uint8_t { none, hit, miss } counted = lookup::none;  // in st.ram_hits / ram_misses
    std::future<std::uint64_t> ready;  // valid while a read is pending
  };
  struct release {
    std::uint64_t upload = 0;
    int staging = -1;
    std::int64_t tier_layer = -1;
  };
  std::vector<host_buffer> staging;
  std::vector<detail::pinned_block> tier_blocks;
  std::unique_ptr<stream::ram_tier> tier;  // with streamed layers (zero slots when off), one pinned block a slot
  std::uint64_t tier_budget = 0;            // bytes the tier may use now (set or automatic)
  clock_type::time_point last_memory_check;
  std::optional<std::uint64_t> last_available;  // the memory available at the last automatic sizing
  std::uint64_t evictions_before = 0;       // the tier's evictions at the last reset_stats()
  std::deque<fetch> fetches;       // items [next_upload, next_fetch)
  std::deque<release> releases;    // uploads whose source memory is still held
  std::int64_t next_fetch = 0, next_upload = 0, next_compute = 0;  // items: the cyclic sequence of streamed layers
  std::vector<std::uint64_t> slot_compute;  // per slot: compute value of its last user
  std::vector<std::uint64_t> slot_upload;   // per slot: the pending upload's value
  std::vector<bool> slot_pending;           // per slot: uploaded, compute not yet submitted
  std::atomic<std::uint64_t> source_ns{0}, source_bytes{0};
  bool broken = false;                      // a read or upload failed mid-pipeline

  std::int64_t pos = 0;
  timing last;
  streaming_stats st;
  std::unique_ptr<stream::prefetcher> reader;  // last: joined first, while the memory it writes still exists

  impl(const std::filesystem::path& path, const engine_options& o, models::segment p = {}) : options(o), part(p) {
    if (options.prefill_chunk < 0) throw octo::error("octo: the prefill chunk must be positive (0: automatic)");
    if (options.ring_depth == 0) throw octo::error("octo: the ring depth must be at least 1");
    const bool may_stream = options.vram_budget > 0 || options.resident_layers >= 0;
    src = model_source::open(path, options.ctx, options.kv_type);
    cfg = src->config();
    if (part.end_layer < 0) part.end_layer = cfg.layers;
    check_layers(options.skip_layers, "skip_layers");
    if (!options.skip_layers.empty()) options.vulkan.control_words = true;
    if (options.link || options.stages > 1 || options.devices.size() > 1 || options.split.size() > 1) {
      make_pipeline(path);
      return;
    }
    // The VM before the plan: its memory budget sizes the default context.
    vm = options.vm == backend::reference ? detail::make_reference_vm() : detail::make_vulkan_vm(options.vulkan);
    // The clock kept up while the model loads, so the first pass runs at speed (docs/vulkan.md).
    const detail::awake_scope awake(vm.get());
    // 512 until the device's memory is known (auto_chunk, below, where every layer is resident and no
    // budget was given); with a budget the plan counts the activations of exactly this many tokens.
    chunk = std::min(options.prefill_chunk > 0 ? options.prefill_chunk : 512, cfg.max_ctx);
    if (options.ctx == 0 && !may_stream && vm->memory_budget() > 0) {
      const std::int64_t ctx = largest_context();
      if (ctx != cfg.max_ctx) {
        src = model_source::open(path, ctx, options.kv_type);
        cfg = src->config();
        chunk = std::min(options.prefill_chunk > 0 ? options.prefill_chunk : 512, cfg.max_ctx);
      }
    }

    // Programs first (their buffers size the plan), then the plan, then the VM.
    const std::vector<ir::program> whole_decode{src->decode_program(part.head, part)};
    std::vector<ir::program> decode_programs;  // the chain's, when the plan takes it
    if (!may_stream) {
      plan = plan_with_resident_count(whole_inputs(whole_decode.front()), stage_layer_count());
    } else {
      const auto probe_decode = chain_programs(1);
      const auto probe_prefill = chain_programs(chunk);
      const auto in = chain_inputs(probe_decode, probe_prefill);
      if (options.resident_layers >= 0) {  // forced: the chain, whatever fits
        plan = plan_with_resident_count(in, options.resident_layers);
        whole = false;
      } else {
        plan = plan_residency(in);
        whole = plan.all_resident();
      }
      if (whole) {
        // The whole model as one program keeps every layer's activations: take it when it fits too.
        auto w = whole_inputs(whole_decode.front());
        w.vram_budget = in.vram_budget;
        const auto wp = plan_with_resident_count(w, stage_layer_count());
        whole = wp.total_bytes <= options.vram_budget;
        if (whole) plan = wp;
      }
      if (!whole) decode_programs = probe_decode;
    }
    say(plan.describe());

    slot_of.assign(std::size_t(cfg.layers), -1);
    for (std::int64_t l = part.first_layer; l < part.end_layer; ++l)
      if (!plan.resident[std::size_t(l - part.first_layer)]) {
        slot_of[std::size_t(l)] = std::int64_t(streamed.size() % plan.ring_depth);
        streamed.push_back(l);
      }

    if (!whole) {
      vm->create_region("hidden", 2 * hidden_half);
      vm->create_region("io", align_up(std::uint64_t(chunk) * 4, buffer_alignment));
      if (scratch_bytes > 0) vm->create_region("scratch", scratch_bytes);
      for (std::uint32_t s = 0; s < plan.ring_depth; ++s) vm->create_region(slot_region(s), plan.slot_bytes);
    }
    slot_compute.assign(plan.ring_depth, 0);
    slot_upload.assign(plan.ring_depth, 0);
    slot_pending.assign(plan.ring_depth, false);
    setup_host_memory();
    // Reads in flight are bounded by the host memory they fill (the ring and the staging buffers, at
    // most ring + 1 of them whatever the tier's size): a queue that deep never blocks the submitting thread.
    if (!streamed.empty()) reader = std::make_unique<stream::prefetcher>(2 * plan.ring_depth + 2);

    // prefill programs are added for the first prompt (the plan counts them)
    decode_set = add_set(1, whole ? whole_decode : decode_programs);
    // The token loop's tail is recorded (and its pipeline built) here, outside any timed pass.
    if (whole && options.decode_in_flight > 0) vm->enable_token_loop(decode_set->head(), options.decode_in_flight);
    if (!options.skip_layers.empty()) skip(options.skip_layers);
    if (options.prefill_chunk == 0 && !may_stream && options.vm == backend::vulkan) chunk = auto_chunk();
    say("ready: " + std::to_string(plan.resident_layers) + " resident layers, " + std::to_string(streamed.size()) +
        " streamed through " + std::to_string(plan.ring_depth) + " slots; device " + vm->device_name());
  }

  // The default context (engine_options::ctx 0, every layer resident, a VM with a memory budget): the
  // most KV positions whose caches fit the budget beside what the residency plan counts at the current
  // context (weights, the decode and prefill programs' activations) and an eighth of the budget kept for
  // what it does not (pipelines, staging, kernels' scratch, a longer prefill pass), at most the model's
  // trained context, in multiples of 256 from 256 up. Says what it chose.
  std::int64_t largest_context() {
    const auto decode = src->decode_program(true);
    std::uint64_t kv = 0;
    for (const auto& b : decode.buffers)
      if (b.kind == ir::buffer_kind::kv_cache) kv += std::uint64_t(b.nbytes());
    const std::uint64_t per_position = std::max<std::uint64_t>(kv / std::uint64_t(cfg.max_ctx), 1);
    const auto in = whole_inputs(decode);
    const std::uint64_t others = plan_with_resident_count(in, cfg.layers).total_bytes - in.kv_bytes;
    const std::uint64_t budget = vm->memory_budget();
    const std::uint64_t usable = budget - budget / 8;
    const std::int64_t trained = cfg.trained_ctx > 0 ? cfg.trained_ctx : cfg.max_ctx;
    std::int64_t ctx = usable > others ? std::int64_t(std::min<std::uint64_t>((usable - others) / per_position,
                                                                               std::uint64_t(trained)))
                                       : 0;
    if (ctx >= 256) ctx = ctx / 256 * 256;
    if (ctx < 1)
      throw octo::error("octo: " + src->label() + ": the weights and activations (" + format_bytes(others) +
                        ") leave no room for a KV cache in the device memory budget of " + format_bytes(budget));
    say("context: " + std::to_string(ctx) + " tokens (" + std::string(ir::name(src->kv_dtype())) + " KV cache, " +
        format_bytes(per_position * std::uint64_t(ctx)) + "): " +
        (ctx == trained ? "the model's trained context" : "the most the device memory budget of " + format_bytes(budget) + " holds") +
        "; --ctx sets another");
    return ctx;
  }

  // The prompt tokens a prefill pass may take when the caller leaves it to the engine: the prefill
  // program's own buffers grow linearly with T (its activations; its logits are one row), so two small
  // programs give the bytes per token; three quarters of the device memory left after the decode
  // program (weights, KV cache) may hold them.
  std::int64_t auto_chunk() const {
    const std::int64_t ctx = cfg.max_ctx;
    if (ctx <= 32) return std::min<std::int64_t>(ctx, 512);
    const auto own_bytes = [](const ir::program& p) {
      std::uint64_t n = 0;
      for (const auto& b : p.buffers)
        if (b.kind != ir::buffer_kind::weight && b.kind != ir::buffer_kind::constant && b.kind != ir::buffer_kind::kv_cache)
          n += (static_cast<std::uint64_t>(b.nbytes()) + 255) / 256 * 256;
      return n;
    };
    const std::uint64_t b16 = own_bytes(src->prefill_program(16, false, part)),
                        b32 = own_bytes(src->prefill_program(32, false, part));
    const std::uint64_t per_token = std::max<std::uint64_t>((b32 > b16 ? b32 - b16 : 0) / 16, 1);
    const std::uint64_t fixed = b16 > 16 * per_token ? b16 - 16 * per_token : 0;
    const auto st = vm->stats(decode_set->head());
    const std::uint64_t left = st.memory_budget > st.memory_in_use ? st.memory_budget - st.memory_in_use : 0;
    const std::uint64_t usable = left / 4 * 3;
    const std::uint64_t fits = usable > fixed ? (usable - fixed) / per_token : 0;
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min<std::uint64_t>(fits, std::uint64_t(ctx))), 1, ctx);
  }

  /// The plan's inputs for the whole model as one program per pass length: every buffer its own.
  residency_inputs whole_inputs(const ir::program& decode) const {
    residency_inputs in;
    in.ring_depth = options.ring_depth;
    for (std::int64_t l = part.first_layer; l < part.end_layer; ++l) in.layer_bytes.push_back(src->layer_blob_bytes(l));
    const auto count = [&](const ir::program& p, bool weights) {
      for (const auto& b : p.buffers) {
        const auto n = std::uint64_t(b.nbytes());
        if (b.kind == ir::buffer_kind::weight) {
          if (!weights) continue;
          const auto* t = src->find(ir::source_key(b));
          if (t && t->layer >= 0) continue;  // in layer_bytes
          (b.name.view() == "token_embd.weight" ? in.embed_bytes : in.head_bytes) += n;
        } else if (b.kind == ir::buffer_kind::kv_cache) {
          if (weights) in.kv_bytes += n;
        } else {
          in.activation_bytes += align_up(n, buffer_alignment);
        }
      }
    };
    count(decode, true);
    count(src->prefill_program(chunk, false, part), false);  // the prefill program's own activations, beside decode's
    return in;
  }

  /// The plan's inputs for the chain (a shared scratch region, the hidden-state ping-pong, a ring).
  residency_inputs chain_inputs(const std::vector<ir::program>& probe_decode,
                                const std::vector<ir::program>& probe_prefill) {
    hidden_half = align_up(std::uint64_t(chunk * cfg.hidden * 4), buffer_alignment);
    residency_inputs in;
    in.ring_depth = options.ring_depth;
    in.vram_budget = options.vram_budget;
    for (std::int64_t l = part.first_layer; l < part.end_layer; ++l) in.layer_bytes.push_back(src->layer_blob_bytes(l));
    std::uint64_t own_io = 0;
    for (const auto* set : {&probe_decode, &probe_prefill})
      for (const auto& p : *set) {
        scratch_bytes = std::max(scratch_bytes, scratch_layout(p, nullptr));
        for (const auto& b : p.buffers)
          if ((b.kind == ir::buffer_kind::io_input || b.kind == ir::buffer_kind::io_output) && b.name.view() != "pos" &&
              b.name.view() != "hidden_in" && b.name.view() != "hidden_out")
            own_io += align_up(std::uint64_t(b.nbytes()), buffer_alignment);
      }
    if (part.embed)
      for (const auto& b : probe_decode.front().buffers)
        if (b.kind == ir::buffer_kind::weight) in.embed_bytes += std::uint64_t(b.nbytes());
    if (part.head)
      for (const auto& b : probe_decode.back().buffers)
        if (b.kind == ir::buffer_kind::weight && (b.name.view() != "token_embd.weight" || !part.embed))
          in.head_bytes += std::uint64_t(b.nbytes());
    for (std::size_t i = std::size_t(lead()); i < std::size_t(lead() + stage_layer_count()); ++i)
      for (const auto& b : probe_decode[i].buffers) {
        if (b.kind == ir::buffer_kind::kv_cache) in.kv_bytes += std::uint64_t(b.nbytes());
        // a layer's composite weight (a Q|K|V bias) is no tensor of its blob: resident beside the head
        if (b.kind == ir::buffer_kind::weight && !src->find(ir::source_key(b)))
          in.head_bytes += std::uint64_t(b.nbytes());
      }
    in.activation_bytes = scratch_bytes + 2 * hidden_half + align_up(std::uint64_t(chunk) * 4, buffer_alignment) + own_io;
    return in;
  }

  ~impl();

  /// Programs in a chain before the first layer's (the embedding's, where this part has it).
  std::int64_t lead() const { return part.embed ? 1 : 0; }
  std::int64_t stage_layer_count() const { return part.end_layer - part.first_layer; }
  void make_pipeline(const std::filesystem::path& path);

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  // ---- programs -----------------------------------------------------------------------------------------

  /// The chain for pass length T: embedding, one program per layer, head (with the argmax); of them
  /// those of this part.
  std::vector<ir::program> chain_programs(std::int64_t T) const {
    std::vector<ir::program> r;
    const auto make = [&](models::segment seg, bool argmax) {
      return T == 1 ? src->decode_program(argmax, seg) : src->prefill_program(T, argmax, seg);
    };
    if (part.embed) r.push_back(make(models::segment::embedding(), false));
    for (std::int64_t l = part.first_layer; l < part.end_layer; ++l)
      r.push_back(make(models::segment::layers(l, l + 1), false));
    if (part.head) r.push_back(make(models::segment::output_head(cfg.layers), true));
    return r;
  }

  /// The prefill programs of pass length T as the plan segments the model (whole: the last row's logits,
  /// no argmax; a prompt of one token too runs the prefill program).
  std::vector<ir::program> set_programs(std::int64_t T) const {
    if (!whole) return chain_programs(T);
    return {src->prefill_program(T, false, part)};
  }

  /// Lays out `p`'s activation buffers from offset 0 of the scratch region; returns the bytes used.
  static std::uint64_t scratch_layout(const ir::program& p, std::vector<detail::placement>* out) {
    std::uint64_t end = 0;
    for (const auto& b : p.buffers) {
      if (b.kind != ir::buffer_kind::activation) continue;
      if (out) out->push_back({b.name.str(), "scratch", end});
      end = align_up(end + std::uint64_t(b.nbytes()), buffer_alignment);
    }
    return end;
  }

  program_set add_set(std::int64_t T, const std::vector<ir::program>& progs) {
    program_set s;
    s.T = T;
    s.one_program = whole;
    const std::size_t n = progs.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& p = progs[i];
      for (const auto& b : p.buffers)
        if (b.kind == ir::buffer_kind::weight) s.weights.insert(b.name.str());
      std::vector<detail::placement> pl;
      if (whole) {  // the VM places every buffer itself; weights shared with programs added before
        const std::uint32_t id = vm->add_program(p, pl);
        src->for_each_weight(p, [&](std::string_view name, std::span<const std::byte> bytes) {
          if (weights_written.insert(std::string(name)).second) vm->write_bytes(id, name, bytes);
        });
        s.programs.push_back(id);
        continue;
      }
      scratch_layout(p, &pl);
      const std::int64_t k = std::int64_t(i) - lead();  // the part's k-th layer (k = layers: the head)
      const bool is_layer = k >= 0 && k < stage_layer_count();
      const std::int64_t layer = is_layer ? part.first_layer + k : -1;
      // hidden state ping-pong: the embedding (or the previous stage, through the host) writes half 0,
      // the part's k-th layer reads half k%2 and writes (k+1)%2
      const std::int64_t in_half = k < 0 ? -1 : k % 2;
      // A streamed layer's weights are read from its slot, at their offsets in the layer's blob; a
      // composite (a Q|K|V task's bias: no tensor of the blob, find gives nullptr) stays resident.
      const auto in_slot = [&](const ir::buffer& b) {
        return is_layer && b.kind == ir::buffer_kind::weight && slot_of[std::size_t(layer)] >= 0 &&
               src->find(ir::source_key(b)) != nullptr;
      };
      for (const auto& b : p.buffers) {
        const auto name = b.name.view();
        if (name == "hidden_in") pl.push_back({"hidden_in", "hidden", std::uint64_t(in_half) * hidden_half});
        else if (name == "hidden_out") pl.push_back({"hidden_out", "hidden", std::uint64_t((in_half + 1) % 2) * hidden_half});
        else if (name == "pos") pl.push_back({"pos", "io", 0});
        else if (in_slot(b)) {
          const auto* t = src->find(ir::source_key(b));
          pl.push_back({b.name.str(), slot_region(std::uint32_t(slot_of[std::size_t(layer)])), t->offset});
        }
      }
      const std::uint32_t id = vm->add_program(p, pl);
      // resident weights: written once (programs share them by name)
      for (const auto& b : p.buffers) {
        if (b.kind != ir::buffer_kind::weight) continue;
        if (in_slot(b)) continue;
        if (weights_written.count(b.name.view())) continue;
        const std::string key(ir::source_key(b));
        src->with_tensor(key, [&](std::span<const std::byte> bytes) { vm->write_bytes(id, b.name.view(), bytes); });
        weights_written.insert(b.name.str());
      }
      s.programs.push_back(id);
      if (T == 1 && (i % 8 == 0 || i + 1 == n))
        say("loading: " + std::to_string(i + 1) + " of " + std::to_string(n) + " programs, " +
            format_bytes(vm->memory_in_use()) + " of device memory");
    }
    return s;
  }

  // ---- host memory: staging buffers and the warm tier ---------------------------------------------

  std::uint64_t tier_wanted() const { return std::uint64_t(streamed.size()) * plan.slot_bytes; }

  /// The budget the tier should have now: the set one, or the automatic one from the memory available
  /// plus what the tier holds (pinned, so not counted as available); nullopt: unknown, keep the tier.
  std::optional<std::uint64_t> tier_target() {
    if (options.ram_budget) return *options.ram_budget;
    const auto available = options.host_memory_available ? options.host_memory_available() : read_mem_available();
    if (!available) return std::nullopt;
    last_available = *available + tier->budget_bytes();
    return auto_ram_budget(*last_available, tier_wanted());
  }

  void setup_host_memory() {
    if (streamed.empty()) return;
    // One more use outweighs a pass of recency: a pass ticks the tier's clock at most once per streamed
    // layer (a hit, or an admitted miss), so the layers kept hit on every pass instead of giving way to
    // the one just read (ram_tier::admit), and a layer unused for 8 passes gives way.
    stream::ram_tier_options scoring;
    scoring.frequency_weight = double(streamed.size());
    tier = std::make_unique<stream::ram_tier>(plan.slot_bytes, std::span<const std::span<std::byte>>{}, scoring);
    resize_tier(tier_target().value_or(0), true);
    last_memory_check = clock_type::now();
  }

  /// Between passes: finishes the reads and uploads in flight and drops the items fetched for the next
  /// pass but not uploaded (refetched by it, their tier lookups uncounted), so no tier blob or staging
  /// buffer is in use.
  void quiesce() {
    while (!fetches.empty()) {
      auto& f = fetches.back();
      if (f.ready.valid()) f.ready.get();  // rethrows the read's error
      if (f.staging >= 0) staging[std::size_t(f.staging)].busy = false;
      if (f.tier) tier->unpin(stream::ram_tier::key(f.layer));
      if (f.counted == fetch::lookup::hit) --st.ram_hits;
      if (f.counted == fetch::lookup::miss) --st.ram_misses;
      fetches.pop_back();
      --next_fetch;
    }
    while (!releases.empty()) release_done(true);
  }

  void free_tier_block(const std::byte* p) {
    const auto it = std::find_if(tier_blocks.begin(), tier_blocks.end(),
                                 [&](const detail::pinned_block& b) { return p >= b.data && p < b.data + b.bytes; });
    if (it == tier_blocks.end()) throw octo::error("octo: a RAM tier slot outside the pinned blocks");
    vm->free_pinned(it->id);
    tier_blocks.erase(it);
  }

  /// Sizes the tier to `budget` (whole slots, at most every streamed layer): shrinking evicts the least
  /// vital layers and frees their blocks; growing allocates blocks while it can. Staging buffers exist
  /// only while the tier cannot hold every streamed layer. Between passes only.
  void resize_tier(std::uint64_t budget, bool initial = false) {
    const std::uint64_t slot = plan.slot_bytes;
    const std::size_t before = tier->capacity();
    const auto want = std::size_t(std::min<std::uint64_t>(budget / slot, streamed.size()));
    const std::size_t n_staging = want >= streamed.size() ? 0 : plan.ring_depth + 1;
    tier_budget = budget;
    if (!initial && want == before && n_staging == staging.size()) return;
    quiesce();
    while (tier->capacity() > want) {
      const auto m = tier->remove_slot();
      if (!m) throw octo::error("octo: a RAM tier slot is still in use after the pipeline drained");
      free_tier_block(m->data());
    }
    std::string short_by;
    while (tier->capacity() < want) {
      try {
        tier_blocks.push_back(vm->allocate_pinned(slot));
      } catch (const std::exception& e) {  // out of pinned memory: keep what the tier has
        short_by = ", " + std::to_string(want - tier->capacity()) + " slots short (" +
                   octo::library_text(e.what()) + ")";
        break;
      }
      tier->add_slots(std::span<std::byte>(tier_blocks.back().data, std::size_t(slot)));
    }
    const std::size_t have = tier->capacity();
    const std::size_t staging_now = have >= streamed.size() ? 0 : plan.ring_depth + 1;
    while (staging.size() > staging_now) {
      vm->free_pinned(staging.back().mem.id);
      staging.pop_back();
    }
    while (staging.size() < staging_now) staging.push_back({vm->allocate_pinned(slot), false});
    if (have != before && before > 0) ++st.ram_resizes;
    std::string why = "set";
    if (options.ram_budget && *options.ram_budget == 0) why = "off";
    else if (!options.ram_budget && !last_available) why = "automatic, but the memory available is unknown";
    else if (!options.ram_budget)
      why = "automatic: half of " + format_bytes(*last_available) +
            " available beyond 1 GiB, at most every streamed layer";
    say("RAM tier: " + std::to_string(have) + " of " + std::to_string(streamed.size()) + " streamed layers (" +
        format_bytes(have * slot) + " pinned; budget " + format_bytes(budget) + ", " + why + short_by + "), " +
        std::to_string(staging.size()) + " staging buffers of " + format_bytes(slot));
  }

  /// Automatic budget: re-reads the memory available (at most every memory_check_ms) and resizes.
  void follow_memory_pressure() {
    if (options.ram_budget || !tier) return;
    const auto now = clock_type::now();
    if (now - last_memory_check < std::chrono::milliseconds(options.memory_check_ms)) return;
    last_memory_check = now;
    if (const auto target = tier_target()) resize_tier(*target);
  }

  /// Which pinned block holds `p` (a tier blob), and where.
  std::pair<std::uint32_t, std::uint64_t> locate(const std::byte* p) const {
    for (const auto& b : tier_blocks)
      if (p >= b.data && p < b.data + b.bytes) return {b.id, std::uint64_t(p - b.data)};
    throw octo::error("octo: a RAM tier blob outside the pinned blocks");
  }

  // ---- the pipeline -------------------------------------------------------------------------------

  std::int64_t layer_of_item(std::int64_t item) const { return streamed[std::size_t(item % std::int64_t(streamed.size()))]; }

  void release_done(bool wait_oldest) {
    if (wait_oldest && !releases.empty()) {
      const auto t0 = clock_type::now();
      vm->wait_upload(releases.front().upload);
      st.upload_wait_ms += ms_since(t0);
    }
    const std::uint64_t done = vm->completed_upload();
    while (!releases.empty() && releases.front().upload <= done) {
      const auto& r = releases.front();
      if (r.staging >= 0) staging[std::size_t(r.staging)].busy = false;
      if (r.tier_layer >= 0) tier->unpin(stream::ram_tier::key(r.tier_layer));
      releases.pop_front();
    }
  }

  std::future<std::uint64_t> read_async(std::int64_t layer, std::span<std::byte> dst) {
    return reader->submit(
        [this, layer, dst] {
          const auto t0 = clock_type::now();
          const std::uint64_t n = src->read_layer(layer, dst);
          source_ns += std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count());
          source_bytes += n;
          return n;
        },
        "layer " + std::to_string(layer));
  }

  /// Starts reads for upcoming items while host memory is free (never blocks).
  void issue_fetches() {
    const std::int64_t window = std::int64_t(plan.ring_depth + staging.size());
    while (next_fetch < next_compute + window) {
      const std::int64_t layer = layer_of_item(next_fetch);
      const auto bytes = src->layer_blob_bytes(layer);
      fetch f;
      f.item = next_fetch;
      f.layer = layer;
      const auto key = stream::ram_tier::key(layer);
      const bool tier_on = tier && tier->capacity() > 0;
      if (tier_on && tier->contains(key)) {  // warm: straight from pinned RAM
        const auto blob = tier->lookup(key);
        tier->pin(key);
        std::tie(f.pinned_id, f.pinned_offset) = locate(blob->data());
        f.tier = true;
        f.counted = fetch::lookup::hit;
        ++st.ram_hits;
        fetches.push_back(std::move(f));
        ++next_fetch;
        continue;
      }
      // A miss: read into the tier when the layer is more vital than the tier's least vital one (a free
      // slot, or one gone stale), else into a staging buffer; when neither is free, retry later (an
      // admit that refuses changes nothing).
      int free_staging = -1;
      for (std::size_t i = 0; i < staging.size(); ++i)
        if (!staging[i].busy) {
          free_staging = int(i);
          break;
        }
      if (tier_on) {
        if (auto blob = tier->admit(key, bytes)) {
          tier->pin(key);
          std::tie(f.pinned_id, f.pinned_offset) = locate(blob->data());
          f.tier = true;
          f.counted = fetch::lookup::miss;
          ++st.ram_misses;
          f.ready = read_async(layer, *blob);
          fetches.push_back(std::move(f));
          ++next_fetch;
          continue;
        }
      }
      if (free_staging < 0) return;
      if (tier_on) {
        f.counted = fetch::lookup::miss;
        ++st.ram_misses;
      }
      auto& sb = staging[std::size_t(free_staging)];
      sb.busy = true;
      f.staging = free_staging;
      f.pinned_id = sb.mem.id;
      f.pinned_offset = 0;
      f.ready = read_async(layer, std::span<std::byte>(sb.mem.data, std::size_t(sb.mem.bytes)));
      fetches.push_back(std::move(f));
      ++next_fetch;
    }
  }

  /// Uploads fetched items in order while their slot is free; blocks on a read only for `must_item`.
  void issue_uploads(std::int64_t must_item) {
    while (!fetches.empty()) {
      auto& f = fetches.front();
      const auto s = std::size_t(slot_of[std::size_t(f.layer)]);
      if (slot_pending[s]) return;
      if (f.ready.valid()) {
        if (f.item != must_item && f.ready.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
        const auto t0 = clock_type::now();
        f.ready.get();  // rethrows the read's error
        st.fetch_wait_ms += ms_since(t0);
      }
      const auto bytes = src->layer_blob_bytes(f.layer);
      const std::uint64_t u =
          vm->upload_async(f.pinned_id, f.pinned_offset, slot_region(std::uint32_t(s)), 0, bytes, slot_compute[s]);
      ++st.layer_uploads;
      st.bytes_uploaded += bytes;
      slot_pending[s] = true;
      slot_upload[s] = u;
      releases.push_back({u, f.staging, f.tier ? f.layer : -1});
      fetches.pop_front();
      ++next_upload;
    }
  }

  void pump(std::int64_t must_item = -1) {
    release_done(false);
    issue_fetches();
    issue_uploads(must_item);
  }

  /// The upload value the compute of item next_compute waits for (issuing what it needs).
  std::uint64_t ensure_uploaded() {
    for (;;) {
      pump(next_compute);
      if (next_upload > next_compute) return slot_upload[std::size_t(slot_of[std::size_t(layer_of_item(next_compute))])];
      // Not even fetched: every staging buffer is still being uploaded from; wait for the oldest.
      if (releases.empty()) throw octo::error("octo: streaming pipeline stalled with no upload in flight");
      release_done(true);
    }
  }

  // ---- passes -------------------------------------------------------------------------------------

  /// One pass of `ids` at positions start..: the whole program, or embed, every layer, head. Returns
  /// the program that holds the logits (a pipeline stage without the head: "hidden_out"). A stage
  /// without the embedding reads `hidden_in` (f32 [T, hidden], the previous stage's) instead of `ids`.
  std::uint32_t run_pass(const program_set& s, std::span<const std::int32_t> ids, std::int64_t start,
                         std::span<const std::byte> hidden_in = {}) {
    if (broken) throw octo::error("octo: the engine failed earlier and cannot continue");
    last_ran = &s;
    try {
      if (!s.whole()) follow_memory_pressure();
      const auto T = static_cast<std::size_t>(s.T);
      std::vector<std::int32_t> pos_ids(T);
      for (std::size_t t = 0; t < T; ++t) pos_ids[t] = static_cast<std::int32_t>(start + std::int64_t(t));
      const auto first = s.programs.front();
      if (part.embed) vm->write_bytes(first, "tokens", std::as_bytes(ids));
      else vm->write_bytes(first, "hidden_in", hidden_in);
      vm->write_bytes(s.whole() ? first : s.programs[std::size_t(lead())], "pos",
                      std::as_bytes(std::span<const std::int32_t>(pos_ids)));
      vm->set_position(start, s.T);
      if (s.whole()) {
        const auto t0 = clock_type::now();
        vm->run(first);
        st.compute_wait_ms += ms_since(t0);
        ++st.passes;
      } else {
        run_chain(s);
      }
    } catch (...) {
      broken = true;
      throw;
    }
    // Outside the try: a non-finite activation leaves the engine usable (the position has not moved).
    observe_pass(s, start, s.T, s.T == 1 && !ids.empty() ? ids[0] : -1);
    return s.whole() ? s.programs.front() : s.head();
  }

  /// A chain pass: embed, every layer (streamed ones after their upload), head, in submission order;
  /// waits for the last.
  void run_chain(const program_set& s) {
    const auto first = s.programs.front();
    if (part.embed) vm->submit(first, 0);
    std::uint64_t done = 0;
    for (std::int64_t l = part.first_layer; l < part.end_layer; ++l) {
      const auto prog = s.programs[std::size_t(lead() + l - part.first_layer)];
      const auto slot = slot_of[std::size_t(l)];
      if (slot < 0) {
        done = vm->submit(prog, 0);
        continue;
      }
      const std::uint64_t u = ensure_uploaded();
      done = slot_compute[std::size_t(slot)] = vm->submit(prog, u);
      slot_pending[std::size_t(slot)] = false;
      ++next_compute;
      pump();
    }
    if (part.head) done = vm->submit(s.head(), 0);
    if (!streamed.empty()) pump();  // the next pass's first layers upload while the head computes
    const auto t0 = clock_type::now();
    vm->wait_compute(done);
    st.compute_wait_ms += ms_since(t0);
    ++st.passes;
    st.source_ms = double(source_ns.load()) / 1e6;
    st.bytes_from_source = source_bytes.load();
    if (tier) st.ram_evictions = tier->stats().evictions - evictions_before;
  }

  void check_layers(std::span<const std::int64_t> layers, const char* what) const {
    for (const auto l : layers)
      if (l < 0 || l >= cfg.layers)
        throw octo::error(std::string("octo: ") + what + ": layer " + std::to_string(l) +
                          " is not a layer of the model (it has " + std::to_string(cfg.layers) + ": 0-" +
                          std::to_string(cfg.layers - 1) + ")");
  }

  /// Control words: exactly `layers` skipped among this part's (the VM gates every program's kernels).
  void skip(std::span<const std::int64_t> layers) {
    if (options.vm == backend::vulkan && !options.vulkan.control_words)
      throw octo::error("octo: skipping layers needs the control words recorded (engine_options::skip_layers at "
                        "construction, or vulkan.control_words)");
    for (std::int64_t l = part.first_layer; l < part.end_layer; ++l)
      vm->set_layer_skipped(static_cast<std::int32_t>(l), std::find(layers.begin(), layers.end(), l) != layers.end());
  }

  /// Reads the layer statistics of the pass that ran at `start` (every program of the set) into
  /// pass_stats. A NaN or infinity in a layer's output is an error naming the first such layer and the
  /// pass, so nothing computed from it (logits, a token) reaches the caller.
  void observe_pass(const program_set& s, std::int64_t start, std::int64_t tokens, std::int32_t input_token) {
    pass_stats.clear();
    for (const auto prog : s.programs) {
      auto v = vm->layer_statistics(prog, start);
      pass_stats.insert(pass_stats.end(), v.begin(), v.end());
    }
    std::stable_sort(pass_stats.begin(), pass_stats.end(),
                     [](const vm::layer_stats& a, const vm::layer_stats& b) { return a.layer < b.layer; });
    for (const auto& l : pass_stats)
      if (l.non_finite > 0) {
        const std::string where =
            tokens == 1 ? "the decode step at position " + std::to_string(start) +
                              (input_token >= 0 ? " (input token " + std::to_string(input_token) + ")" : "")
                        : "the prompt pass over positions " + std::to_string(start) + "-" + std::to_string(start + tokens - 1);
        throw octo::error("octo: non-finite activations: the output of layer " + std::to_string(l.layer) + " holds " +
                          std::to_string(l.non_finite) + " NaN or infinite values of " + std::to_string(l.values) +
                          " in " + where + " (the model's weights or activations overflow float32); stopped");
      }
  }

  /// The prefill programs for a prompt of n tokens (built, uploaded and recorded here, outside a timed
  /// pass); those of another length are removed first.
  const program_set& prefill_programs(std::int64_t n) {
    const std::int64_t T = std::min(n, chunk);
    if (T == 1 && !whole) return *decode_set;  // the chain's T = 1 programs are the decode programs
    if (!prefill_set || prefill_set->T != T) {
      const detail::awake_scope awake(vm.get());  // uploads and copies: the pass follows at once
      if (prefill_set) {
        if (last_ran == &*prefill_set) last_ran = nullptr;
        for (const auto id : prefill_set->programs) vm->remove_program(id);
        // A weight only these programs named went with them (the decode step's Q|K|V task reads a
        // composite bias, the prefill the separate ones): the next set that names it writes it again.
        for (const auto& name : prefill_set->weights)
          if (!decode_set || !decode_set->weights.contains(name)) weights_written.erase(name);
        prefill_set.reset();
      }
      prefill_set = add_set(T, set_programs(T));
    }
    return *prefill_set;
  }

  void check_token(std::int32_t id) const {
    if (id < 0 || id >= cfg.vocab)
      throw octo::error("octo: token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(cfg.vocab));
  }

  std::uint32_t step(std::int32_t id) {
    check_token(id);
    if (pos >= cfg.max_ctx) throw octo::error("octo: the context of " + std::to_string(cfg.max_ctx) + " tokens is full");
    const std::int32_t t[1] = {id};
    const auto head = run_pass(*decode_set, t, pos);
    ++pos;
    return head;
  }

  /// The logits a pass left in its head program: [1, vocab] for a decode step and for a prefill, whose
  /// final norm and LM head run for its last row only (models::prefill).
  std::vector<float> last_logits(std::uint32_t head) {
    std::vector<float> out(static_cast<std::size_t>(cfg.vocab));
    vm->read_into(head, "logits", std::as_writable_bytes(std::span<float>(out)), 0);
    return out;
  }

  /// generate()'s greedy decode with the token loop on the device: `first` (chosen from the prefill's
  /// logits) is emitted and fed to the first step; each step's argmax is written by the device as the
  /// next step's input token and position, so up to decode_in_flight steps stay submitted while the host
  /// reads the tokens behind them. The host loop's stops, exactly: on_token returning false, n tokens,
  /// a full context. Steps needed for n tokens or the context are never submitted past them; steps in
  /// flight past an on_token stop are waited for and dropped: their KV rows lie at or past the position
  /// the engine keeps (that of the host loop), where the next tokens overwrite them, and the next pass
  /// writes the input token, pos and globals record again from the host.
  void greedy_on_device(std::int32_t first, std::int64_t n, const std::function<bool(std::int32_t)>& on_token,
                        std::vector<std::int32_t>& out) {
    out.push_back(first);
    if (on_token && !on_token(first)) return;
    const std::int64_t steps = std::min(n - std::int64_t(out.size()), cfg.max_ctx - pos);
    if (steps <= 0) return;
    if (broken) throw octo::error("octo: the engine failed earlier and cannot continue");
    const std::uint32_t prog = decode_set->head();
    const std::uint32_t depth = options.decode_in_flight;
    std::deque<std::uint64_t> in_flight;  // compute values of the submitted steps not read yet, oldest first
    const auto drop_in_flight = [&] {
      while (!in_flight.empty()) {
        (void)vm->token_step_result(prog, in_flight.front());
        in_flight.pop_front();
      }
    };
    try {
      const std::int32_t pos_id = static_cast<std::int32_t>(pos);
      vm->write_bytes(prog, "tokens", std::as_bytes(std::span<const std::int32_t>(&first, 1)));
      vm->write_bytes(prog, "pos", std::as_bytes(std::span<const std::int32_t>(&pos_id, 1)));
      vm->set_position(pos, 1);
      last_ran = &*decode_set;
      std::int64_t submitted = 0;
      for (std::int64_t read = 0; read < steps;) {
        while (submitted < steps && in_flight.size() < depth) {
          in_flight.push_back(vm->submit_token_step(prog));
          ++submitted;
        }
        last.most_in_flight = std::max(last.most_in_flight, std::uint32_t(in_flight.size()));
        const auto t0 = clock_type::now();
        const std::int32_t t = vm->token_step_result(prog, in_flight.front());
        st.compute_wait_ms += ms_since(t0);
        in_flight.pop_front();
        try {
          observe_pass(*decode_set, pos, 1, out.back());
        } catch (const octo::error&) {  // the steps behind it computed from the bad activations: dropped
          drop_in_flight();
          throw;
        }
        ++read;
        ++pos;  // the step consumed its input token: its KV row is written
        ++st.passes;
        ++last.decode_tokens;
        out.push_back(t);
        bool go_on = true;
        try {
          go_on = !on_token || on_token(t);
        } catch (...) {  // the caller's exception: the engine stays usable
          drop_in_flight();
          throw;
        }
        if (!go_on) break;
      }
      drop_in_flight();
    } catch (const octo::error&) {
      if (!in_flight.empty()) broken = true;  // a step failed or timed out: the device state is unknown
      throw;
    }
  }

  std::vector<float> prefill(std::span<const std::int32_t> ids) {
    if (ids.empty()) throw octo::error("octo: the prompt is empty");
    for (auto id : ids) check_token(id);
    if (pos + std::int64_t(ids.size()) > cfg.max_ctx)
      throw octo::error("octo: the prompt has " + std::to_string(ids.size()) + " tokens but the context holds " +
                        std::to_string(cfg.max_ctx - pos) + " more (raise --ctx)");
    if (pipe) return pipeline_prefill(ids);
    const auto n = static_cast<std::int64_t>(ids.size());
    if (pos != 0 && n == 1) return last_logits(step(ids[0]));  // one more token: a decode step, no program to build
    const auto& s = prefill_programs(n);
    // Windows of T <= n tokens from the sequence's position (a continued sequence too: its new tokens
    // attend to the cache's earlier ones); the last ends at the prompt's end and may overlap the one
    // before (the overlapped positions are recomputed to the same keys and values).
    const std::int64_t base = pos;
    std::int64_t start = 0;
    std::uint32_t head = 0;
    for (;;) {
      const bool last_window = start + s.T >= n;
      if (last_window) start = n - s.T;
      head = run_pass(s, ids.subspan(std::size_t(start), std::size_t(s.T)), base + start);
      if (last_window) break;
      start += s.T;
    }
    pos = base + n;
    return last_logits(head);
  }

  std::vector<float> pipeline_prefill(std::span<const std::int32_t> ids);
  /// The parts that hold a VM: the pipeline's stages in this process, else this one.
  std::vector<impl*> parts();
  /// One decode step of `id`: its logits, or with `greedy` only their argmax (computed on the device).
  std::vector<float> decode_logits(std::int32_t id);
  std::int32_t decode_token(std::int32_t id);
};

std::uint64_t auto_ram_budget(std::uint64_t available, std::uint64_t wanted) {
  constexpr std::uint64_t margin = std::uint64_t(1) << 30;
  return std::min(wanted, available > margin ? (available - margin) / 2 : 0);
}

std::optional<std::uint64_t> read_mem_available(const std::filesystem::path& meminfo) {
  std::ifstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    std::string unit;
    if (!(fields >> kib >> unit) || unit != "kB") return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

// ---- the pipeline ---------------------------------------------------------------------------------

namespace {

/// What travels between stages: a header naming the pass (so a stage out of step is an error, not
/// garbage), then the payload.
struct message_header {
  std::uint64_t sequence = 0;  // counts the pipeline's windows and results since construction
  std::int64_t start = 0;      // the window's first position
  std::int64_t tokens = 0;     // its T
  std::uint64_t kind = 0;      // what follows
};
enum : std::uint64_t { residual_message = 1, logits_message = 2, token_message = 3 };

/// Message passing between the stages of one process: one queue per (sender, receiver) pair. A stage
/// that fails closes the exchange, so the others stop waiting at once instead of timing out.
class local_exchange {
 public:
  /// Longer than any VM wait: a stage that hangs inside its VM times out there first.
  static constexpr auto timeout = std::chrono::minutes(10);

  void send(int from, int to, std::span<const std::byte> m) {
    std::lock_guard lk(mu_);
    queues_[{from, to}].emplace_back(m.begin(), m.end());
    cv_.notify_all();
  }
  void receive(int from, int to, std::span<std::byte> m) {
    std::unique_lock lk(mu_);
    auto& q = queues_[{from, to}];
    if (!cv_.wait_for(lk, timeout, [&] { return !q.empty() || !failure_.empty(); }))
      throw octo::error("octo: no message from stage " + std::to_string(from) + " in 10 minutes");
    if (!failure_.empty()) throw octo::error(failure_);
    if (q.front().size() != m.size())
      throw octo::error("octo: a message of " + std::to_string(q.front().size()) +
                        " bytes from stage " + std::to_string(from) + ", " + std::to_string(m.size()) + " expected");
    std::memcpy(m.data(), q.front().data(), m.size());
    q.pop_front();
  }
  /// Keeps the first failure: the cause (the stages that were waiting on it fail after).
  void fail(std::string_view why) {
    std::lock_guard lk(mu_);
    if (failure_.empty()) failure_ = std::string(why);
    cv_.notify_all();
  }
  std::string failure() const {
    std::lock_guard lk(mu_);
    return failure_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, std::deque<std::vector<std::byte>>> queues_;
  std::string failure_;
};

/// One in-process stage's end of the exchange.
class local_link final : public stage_link {
 public:
  local_link(local_exchange& ex, int rank, int size) : ex_(ex), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, std::span<const std::byte> m) override { ex_.send(rank_, to, m); }
  void receive(int from, std::span<std::byte> m) override { ex_.receive(from, rank_, m); }
  void fail(std::string_view why) override { ex_.fail(why); }

 private:
  local_exchange& ex_;
  int rank_, size_;
};

/// An error's text without its "octo: " (the pipeline's message adds its own).
std::string cause(const std::exception& e) {
  std::string t = octo::library_text(e.what());
  return t.rfind("octo: ", 0) == 0 ? t.substr(6) : t;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

/// The model's layers split into contiguous ranges, one per stage, each stage a VM of its own (the
/// engine's machinery for one part of the model, streaming included). In one process every stage runs
/// on a thread of its own for each pass, so stages on different devices work at once; with a
/// stage_link this process runs one stage and the others are other processes. A pass is a list of
/// windows (prefill micro-batches, or one decode token): stage 0 embeds each, every stage runs its
/// layers and sends the residual stream on, the last stage keeps the last window's logits or token
/// (and, across processes, sends them to every other stage).
struct engine::impl::pipeline {
  struct window {
    std::int64_t start = 0, tokens = 0;
    bool decode = false;  // the decode programs (T = 1, argmax), else the prefill programs of T tokens
  };
  struct result {
    std::vector<float> logits;
    std::int32_t token = -1;
  };

  std::vector<std::int64_t> first;            // per stage its first layer, then the layer count
  std::vector<int> ranks;                      // the stages this process runs ...
  std::vector<std::unique_ptr<impl>> stages;   // ... and their VMs
  std::shared_ptr<stage_link> remote;          // the other processes' stages, or null
  local_exchange exchange;
  std::vector<std::unique_ptr<local_link>> local_links;
  std::int64_t hidden = 0, vocab = 0;
  std::uint64_t sequence = 0;
  bool broken = false;

  int count() const { return int(first.size()) - 1; }
  stage_link& link_of(std::size_t i) { return remote ? *remote : *local_links[i]; }

  static void write_header(std::vector<std::byte>& msg, const message_header& h) {
    std::memcpy(msg.data(), &h, sizeof h);
  }
  static void check_header(std::span<const std::byte> msg, const message_header& want, int from) {
    message_header got;
    std::memcpy(&got, msg.data(), sizeof got);
    if (got.sequence != want.sequence || got.start != want.start || got.tokens != want.tokens || got.kind != want.kind)
      throw octo::error("octo: out of step with stage " + std::to_string(from) +
                        ": message " + std::to_string(got.sequence) + " (positions " + std::to_string(got.start) + "+" +
                        std::to_string(got.tokens) + ") where " + std::to_string(want.sequence) + " (" +
                        std::to_string(want.start) + "+" + std::to_string(want.tokens) + ") was due");
  }

  /// Stage `ranks[i]`'s share of a pass. `ids` holds the tokens of positions origin...
  void run_stage(std::size_t i, std::span<const std::int32_t> ids, std::int64_t origin, const std::vector<window>& ws,
                 bool greedy, std::uint64_t seq0, result& out) {
    impl& st = *stages[i];
    const int s = ranks[i], last = count() - 1;
    stage_link& link = link_of(i);
    std::vector<std::byte> msg;
    for (std::size_t w = 0; w < ws.size(); ++w) {
      const auto& win = ws[w];
      const message_header h{seq0 + w, win.start, win.tokens, residual_message};
      const program_set& set = win.decode ? *st.decode_set : st.prefill_programs(win.tokens);
      msg.resize(sizeof h + std::size_t(win.tokens * hidden) * 4);
      const auto payload = std::span<std::byte>(msg).subspan(sizeof h);
      std::uint32_t prog = 0;
      if (s == 0) {
        prog = st.run_pass(set, ids.subspan(std::size_t(win.start - origin), std::size_t(win.tokens)), win.start);
      } else {
        link.receive(s - 1, msg);
        check_header(msg, h, s - 1);
        prog = st.run_pass(set, {}, win.start, payload);
      }
      if (s < last) {
        write_header(msg, h);
        st.vm->read_into(prog, "hidden_out", payload);
        link.send(s + 1, msg);
      } else if (w + 1 == ws.size()) {
        if (greedy) st.vm->read_into(prog, "next_token", std::as_writable_bytes(std::span<std::int32_t>(&out.token, 1)));
        else out.logits = st.last_logits(prog);
      }
    }
    if (!remote) return;  // in one process the caller reads `out`
    // Across processes the last stage sends the result to every other (the next pass starts from it).
    const message_header h{seq0 + ws.size(), ws.back().start, ws.back().tokens, greedy ? token_message : logits_message};
    msg.resize(sizeof h + (greedy ? 4 : std::size_t(vocab) * 4));
    const auto payload = std::span<std::byte>(msg).subspan(sizeof h);
    if (s == last) {
      write_header(msg, h);
      if (greedy) std::memcpy(payload.data(), &out.token, 4);
      else std::memcpy(payload.data(), out.logits.data(), payload.size());
      for (int r = 0; r < last; ++r) link.send(r, msg);
    } else {
      link.receive(last, msg);
      check_header(msg, h, last);
      if (greedy) std::memcpy(&out.token, payload.data(), 4);
      else {
        out.logits.resize(std::size_t(vocab));
        std::memcpy(out.logits.data(), payload.data(), payload.size());
      }
    }
  }

  result run(std::span<const std::int32_t> ids, std::int64_t origin, const std::vector<window>& ws, bool greedy) {
    if (broken) throw octo::error("octo: a pipeline stage failed earlier; the engine cannot continue");
    const std::uint64_t seq0 = sequence;
    sequence += ws.size() + 1;
    result out;
    if (remote) {
      try {
        run_stage(0, ids, origin, ws, greedy, seq0, out);
      } catch (const std::exception& e) {
        broken = true;
        const std::string why = "octo: pipeline stage " + std::to_string(ranks.front()) + ": " + cause(e);
        remote->fail(why);  // an MPI link ends the job here
        throw octo::error(why);
      }
      return out;
    }
    const auto body = [&](std::size_t i) {
      try {
        run_stage(i, ids, origin, ws, greedy, seq0, out);
      } catch (const std::exception& e) {
        exchange.fail("octo: pipeline stage " + std::to_string(ranks[i]) + ": " + cause(e));
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < stages.size(); ++i) threads.emplace_back(body, i);
    body(0);
    for (auto& t : threads) t.join();
    if (auto why = exchange.failure(); !why.empty()) {
      broken = true;
      throw octo::error(why);
    }
    return out;
  }
};

std::vector<engine::impl*> engine::impl::parts() {
  if (!pipe) return {this};
  std::vector<impl*> r;
  for (auto& st : pipe->stages) r.push_back(st.get());
  return r;
}

engine::impl::~impl() {
  // Stop the reader before the memory its reads write goes away (the read in flight finishes, queued
  // ones are cancelled).
  reader.reset();
}

void engine::impl::make_pipeline(const std::filesystem::path& path) {
  auto p = std::make_unique<pipeline>();
  const auto& link = options.link;
  std::size_t n = std::max<std::size_t>({options.stages, options.devices.size(), options.split.size(), 1});
  if (link) {
    if (link->size() < 1 || link->rank() < 0 || link->rank() >= link->size())
      throw octo::error("octo: the stage link's rank " + std::to_string(link->rank()) + " is not in [0, " +
                        std::to_string(link->size()) + ")");
    n = std::size_t(link->size());
  }
  if (options.stages > 0 && options.stages != n)
    throw octo::error("octo: " + std::to_string(options.stages) + " stages asked for but the pipeline has " + std::to_string(n) +
                      (link ? " processes" : " (one per device)"));
  if (options.devices.size() > 1 && options.devices.size() != n)
    throw octo::error("octo: " + std::to_string(options.devices.size()) + " devices for " + std::to_string(n) +
                      " pipeline stages (one device per stage)");
  p->first = plan_pipeline(cfg.layers, n, options.split);
  if (options.vm == backend::vulkan) {  // an unknown device index: one line naming those there are
    std::vector<vm::vulkan_device_info> known;
    for (const auto& d : options.devices)
      if (all_digits(d)) {
        if (known.empty()) known = vm::list_vulkan_devices();
        if (d.size() > 9 || std::stoul(d) >= known.size()) {
          std::string names;
          for (const auto& k : known) names += (names.empty() ? "" : ", ") + std::to_string(k.index) + " " + k.name;
          throw octo::error("octo: no Vulkan device " + d + " (there " + (known.size() == 1 ? "is 1: " : "are " +
                            std::to_string(known.size()) + ": ") + names + ")");
        }
      }
  }
  chunk = options.prefill_chunk > 0 ? std::min(options.prefill_chunk, cfg.max_ctx) : std::min<std::int64_t>(256, cfg.max_ctx);
  p->hidden = cfg.hidden;
  p->vocab = cfg.vocab;
  p->remote = link;
  for (std::size_t s = 0; s < n; ++s) {
    if (link && int(s) != link->rank()) continue;
    engine_options so = options;
    so.stages = 0;
    so.devices.clear();
    so.split.clear();
    so.link = nullptr;
    so.ctx = cfg.max_ctx;      // one context for every stage (a stage does not size it from its own device)
    so.prefill_chunk = chunk;  // every stage cuts the prompt into the same micro-batches
    so.decode_in_flight = 0;   // a pipeline decodes in the host loop: each token crosses every stage
    if (so.resident_layers > p->first[s + 1] - p->first[s]) so.resident_layers = p->first[s + 1] - p->first[s];
    if (!options.devices.empty()) so.vulkan.device = options.devices[options.devices.size() == 1 ? 0 : s];
    const std::string who = "stage " + std::to_string(s) + " (layers " + std::to_string(p->first[s]) + "-" +
                            std::to_string(p->first[s + 1] - 1) + "): ";
    if (options.progress) so.progress = [who, f = options.progress](std::string_view line) { f(who + std::string(line)); };
    const models::segment seg{s == 0, p->first[s], p->first[s + 1], s + 1 == n};
    p->ranks.push_back(int(s));
    p->stages.push_back(std::make_unique<impl>(path, so, seg));
    if (!link) p->local_links.push_back(std::make_unique<local_link>(p->exchange, int(s), int(n)));
  }
  plan = p->stages.front()->plan;
  whole = false;  // no program of its own: the stages hold them
  pipe = std::move(p);
  say("pipeline: " + std::to_string(n) + " stages" + (link ? ", this process runs stage " + std::to_string(link->rank()) : "") +
      "; micro-batches of " + std::to_string(chunk) + " prompt tokens");
}

std::vector<float> engine::impl::pipeline_prefill(std::span<const std::int32_t> ids) {
  const auto n = std::int64_t(ids.size());
  std::vector<pipeline::window> ws;
  // The windows one engine's prefill takes, from the sequence's position: T tokens each, the last ending
  // at the prompt's end.
  const std::int64_t T = std::min(n, chunk);
  for (std::int64_t start = 0;; start += T) {
    const bool last_window = start + T >= n;
    ws.push_back({pos + (last_window ? n - T : start), T, false});
    if (last_window) break;
  }
  auto r = pipe->run(ids, pos, ws, false);
  pos += n;
  return std::move(r.logits);
}

std::vector<float> engine::impl::decode_logits(std::int32_t id) {
  if (!pipe) return last_logits(step(id));
  check_token(id);
  if (pos >= cfg.max_ctx) throw octo::error("octo: the context of " + std::to_string(cfg.max_ctx) + " tokens is full");
  const std::int32_t t[1] = {id};
  auto r = pipe->run(t, pos, {{pos, 1, true}}, false);
  ++pos;
  return std::move(r.logits);
}

std::int32_t engine::impl::decode_token(std::int32_t id) {
  if (!pipe) {
    const auto head = step(id);
    std::int32_t r = 0;
    vm->read_into(head, "next_token", std::as_writable_bytes(std::span<std::int32_t>(&r, 1)));
    return r;
  }
  check_token(id);
  if (pos >= cfg.max_ctx) throw octo::error("octo: the context of " + std::to_string(cfg.max_ctx) + " tokens is full");
  const std::int32_t t[1] = {id};
  const auto r = pipe->run(t, pos, {{pos, 1, true}}, true);
  ++pos;
  return r.token;
}

engine::engine(const std::filesystem::path& model, const engine_options& options) try
    : impl_(std::make_unique<impl>(model, options)) {
} catch (const octo::error&) {
  throw;
} catch (const std::exception& e) {  // out of memory, a library's exception: still one line naming the file
  const auto name = model.filename().empty() ? model.parent_path().filename() : model.filename();
  throw octo::error("octo: " + name.string() + ": cannot load: " +
                    (dynamic_cast<const std::bad_alloc*>(&e) ? std::string("out of memory") : octo::library_text(e.what())));
}
engine::~engine() = default;
engine::engine(engine&&) noexcept = default;
engine& engine::operator=(engine&&) noexcept = default;

const model_source& engine::model() const { return *impl_->src; }
const residency_plan& engine::plan() const { return impl_->plan; }
std::string engine::device_name() const {
  std::string r;
  for (const auto* p : impl_->parts()) r += (r.empty() ? "" : " | ") + p->vm->device_name();
  return r;
}
std::vector<std::pair<std::int64_t, std::int64_t>> engine::stage_layers() const {
  std::vector<std::pair<std::int64_t, std::int64_t>> r;
  for (const auto* p : impl_->parts()) r.emplace_back(p->part.first_layer, p->part.end_layer);
  return r;
}
std::int64_t engine::context() const { return impl_->cfg.max_ctx; }
std::int64_t engine::position() const { return impl_->pos; }
std::uint64_t engine::streamed_bytes_per_token() const {
  std::uint64_t n = 0;
  for (const auto* p : impl_->parts()) n += p->plan.streamed_bytes_per_pass;
  return n;
}
void engine::reset() { impl_->pos = 0; }
std::uint64_t engine::validation_messages() const {
  std::uint64_t n = 0;
  for (const auto* p : impl_->parts()) n += p->vm->validation_messages();
  return n;
}
const engine::timing& engine::last_timing() const { return impl_->last; }
const streaming_stats& engine::stats() const {
  if (impl_->pipe) {  // the stages' counters summed
    auto& sum = impl_->st;
    sum = {};
    for (const auto* p : impl_->parts()) {
      const auto& s = p->st;
      sum.passes = std::max(sum.passes, s.passes);
      sum.layer_uploads += s.layer_uploads;
      sum.bytes_uploaded += s.bytes_uploaded;
      sum.ram_hits += s.ram_hits;
      sum.ram_misses += s.ram_misses;
      sum.ram_evictions += s.ram_evictions;
      sum.ram_resizes += s.ram_resizes;
      sum.bytes_from_source += s.bytes_from_source;
      sum.source_ms += s.source_ms;
      sum.fetch_wait_ms += s.fetch_wait_ms;
      sum.upload_wait_ms += s.upload_wait_ms;
      sum.compute_wait_ms += s.compute_wait_ms;
    }
  }
  return impl_->st;
}
void engine::reset_stats() {
  for (auto* p : impl_->parts()) {
    p->st = {};
    if (p->tier) p->evictions_before = p->tier->stats().evictions;
    p->source_ns = 0;
    p->source_bytes = 0;
  }
  impl_->st = {};
}
void engine::set_ram_budget(std::optional<std::uint64_t> bytes) {
  if (impl_->broken) throw octo::error("octo: the engine failed earlier and cannot continue");
  impl_->options.ram_budget = bytes;
  for (auto* p : impl_->parts()) {  // each stage of a pipeline has a tier of its own, with this budget
    if (p->broken) throw octo::error("octo: the engine failed earlier and cannot continue");
    p->options.ram_budget = bytes;
    if (!p->tier) continue;  // nothing streams there
    try {
      if (const auto target = p->tier_target()) p->resize_tier(*target);
      p->last_memory_check = clock_type::now();
      p->st.ram_evictions = p->tier->stats().evictions - p->evictions_before;
    } catch (...) {
      p->broken = true;
      throw;
    }
  }
}

ram_tier_state engine::tier_state() const {
  ram_tier_state r;
  r.automatic = !impl_->options.ram_budget.has_value();
  for (const auto* p : impl_->parts()) {  // a pipeline's stages summed
    if (!p->tier) continue;
    const auto slots = std::uint64_t(p->tier->capacity());
    r.budget += p->tier_budget;
    r.slots += slots;
    r.slot_bytes = std::max(r.slot_bytes, p->plan.slot_bytes);
    r.bytes += slots * p->plan.slot_bytes;
    r.wanted += p->tier_wanted();
    for (const auto k : p->tier->eviction_order()) r.layers.push_back(std::int64_t(k));
  }
  return r;
}

void engine::prepare_prefill(std::int64_t n) {
  if (n > 0 && n <= context())
    for (auto* p : impl_->parts()) (void)p->prefill_programs(n);
}

std::vector<float> engine::prefill(std::span<const std::int32_t> ids) { return impl_->prefill(ids); }

std::vector<float> engine::decode(std::int32_t id) { return impl_->decode_logits(id); }

std::int32_t engine::decode_greedy(std::int32_t id) { return impl_->decode_token(id); }

std::vector<std::int32_t> engine::generate(std::span<const std::int32_t> prompt, std::int64_t n, const sampling_params& s,
                                           const std::function<bool(std::int32_t)>& on_token,
                                           std::vector<float>* prompt_logits) {
  if (n < 0) throw octo::error("octo: the number of tokens to generate must be >= 0");
  // The prefill programs, outside the timed prefill (one more token of a sequence is a decode step).
  if (impl_->pos == 0 || prompt.size() > 1) prepare_prefill(static_cast<std::int64_t>(prompt.size()));
  const auto ms_since_t = [](clock_type::time_point t0) { return ms_since(t0); };
  auto& last = impl_->last;
  sampler smp(s);
  last = {};
  std::vector<std::int32_t> history(prompt.begin(), prompt.end()), out;
  const auto t0 = clock_type::now();
  std::vector<float> logits = prefill(prompt);
  last.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  last.prefill_ms = ms_since_t(t0);
  if (prompt_logits) *prompt_logits = logits;
  if (n == 0) return out;
  // Greedy sampling asks the device for the argmax instead of reading the logits back.
  const bool greedy = s.is_greedy();
  std::int32_t next = smp.sample(logits, history);
  const auto t1 = clock_type::now();
  if (greedy && impl_->whole && impl_->options.decode_in_flight > 0) {
    last.token_loop_on_device = true;
    impl_->greedy_on_device(next, n, on_token, out);
    last.decode_ms = ms_since_t(t1);
    return out;
  }
  for (;;) {
    out.push_back(next);
    history.push_back(next);
    if (on_token && !on_token(next)) break;
    if (static_cast<std::int64_t>(out.size()) >= n || position() >= context()) break;
    if (greedy) {
      next = decode_greedy(next);
    } else {
      logits = decode(next);
      next = smp.sample(logits, history);
    }
    ++last.decode_tokens;
    last.most_in_flight = 1;
  }
  last.decode_ms = ms_since_t(t1);
  return out;
}

vm::vulkan_stats engine::decode_stats() const {
  vm::vulkan_stats sum;
  bool first = true;
  for (const auto* p : impl_->parts())
  for (const auto id : p->decode_set->programs) {
    const auto s = p->vm->stats(id);
    if (first) sum = s;
    else {
      sum.dispatches += s.dispatches;
      sum.task_dispatches += s.task_dispatches;
      sum.exclusive_dispatches += s.exclusive_dispatches;
      sum.indirect_dispatches += s.indirect_dispatches;
      sum.barriers += s.barriers;
      sum.recordings += s.recordings;
      sum.submits += s.submits;
    }
    first = false;
  }
  return sum;
}

void engine::set_skipped_layers(std::span<const std::int64_t> layers) {
  impl_->check_layers(layers, "set_skipped_layers");
  for (auto* part : impl_->parts()) part->skip(layers);
  impl_->options.skip_layers.assign(layers.begin(), layers.end());
}

std::vector<std::int64_t> engine::skipped_layers() const { return impl_->options.skip_layers; }

void engine::set_precision(vm::matmul_precision p) {
  for (auto* part : impl_->parts()) {
    if (part->options.vm == backend::vulkan && !part->options.vulkan.control_words)
      throw octo::error("octo: set_precision needs the control words recorded (vulkan.control_words)");
    part->vm->set_precision(p);
  }
}

std::vector<vm::layer_stats> engine::layer_statistics() const {
  std::vector<vm::layer_stats> out;
  for (const auto* part : impl_->parts()) out.insert(out.end(), part->pass_stats.begin(), part->pass_stats.end());
  return out;
}

std::vector<vm::task_profile> engine::profile() const {
  std::vector<vm::task_profile> out;
  for (const auto* part : impl_->parts()) {
    if (!part->last_ran) continue;
    for (const auto id : part->last_ran->programs) {
      auto p = part->vm->profile(id);
      out.insert(out.end(), p.begin(), p.end());
    }
  }
  return out;
}

}  // namespace octo::runtime
