// streaming_engine: the chain of segment programs in one VM, the residency plan, and the pipeline that
// keeps streamed layers flowing: reader thread -> pinned staging (or the warm RAM tier) -> upload into a
// ring slot (after the compute that last used the slot) -> the layer's submit (after its upload).
#include "octo/runtime/streaming_engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <thread>

#include "generate_loop.hpp"
#include "octo/error.hpp"
#include "octo/ir/validate.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/models/decoder.hpp"
#include "octo/stream/ram_tier.hpp"
#include "stream_vm.hpp"
#include "weight_source.hpp"

namespace octo::runtime {

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

constexpr std::uint64_t buffer_alignment = 256;  // placements inside regions
std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

/// One background thread running read jobs in submission order.
class reader_thread {
 public:
  reader_thread() : thread_([this] { run(); }) {}
  ~reader_thread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  reader_thread(const reader_thread&) = delete;
  reader_thread& operator=(const reader_thread&) = delete;

  std::future<void> post(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    auto f = task.get_future();
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return f;
  }

 private:
  void run() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stop, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();  // exceptions land in the future
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: started after the members it uses
};

/// The programs of one pass length T: embedding, one per layer, head.
struct program_set {
  std::int64_t T = 0;
  std::uint32_t embed = 0, head = 0;
  std::vector<std::uint32_t> layers;
};

std::string slot_region(std::uint32_t s) { return "slot" + std::to_string(s); }

}  // namespace

struct streaming_engine::impl {
  streaming_options options;
  std::unique_ptr<detail::weight_source> src;
  models::model_config cfg;
  std::int64_t chunk = 1;           // prefill T upper bound
  std::uint64_t hidden_half = 0;    // bytes of one half of the hidden ping-pong region
  std::uint64_t scratch_bytes = 0;  // the shared activation region
  residency_plan plan;
  std::vector<std::int64_t> streamed;  // streamed layers in order
  std::vector<std::int64_t> slot_of;   // per layer: ring slot, -1 when resident
  std::unique_ptr<detail::stream_vm> vm;
  std::set<std::string, std::less<>> weights_written;
  std::optional<program_set> decode_set, prefill_set;

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
    std::future<void> ready;  // valid while a read is pending
  };
  struct release {
    std::uint64_t upload = 0;
    int staging = -1;
    std::int64_t tier_layer = -1;
  };
  std::vector<host_buffer> staging;
  std::vector<detail::pinned_block> tier_blocks;
  std::unique_ptr<stream::ram_tier> tier;
  std::deque<fetch> fetches;       // items [next_upload, next_fetch)
  std::deque<release> releases;    // uploads whose source memory is still held
  std::int64_t next_fetch = 0, next_upload = 0, next_compute = 0;  // items: the cyclic sequence of streamed layers
  std::vector<std::uint64_t> slot_compute;  // per slot: compute value of its last user
  std::vector<std::uint64_t> slot_upload;   // per slot: the pending upload's value
  std::vector<bool> slot_pending;           // per slot: uploaded, compute not yet submitted
  std::atomic<std::uint64_t> source_ns{0}, source_bytes{0};
  bool broken = false;                      // a read or upload failed mid-pipeline

  std::int64_t pos = 0;
  engine::timing last;
  streaming_stats st;
  std::unique_ptr<reader_thread> reader;  // last: joined first, while the memory it writes still exists

  impl(const std::filesystem::path& path, const streaming_options& o) : options(o) {
    if (options.prefill_chunk <= 0) throw octo::error("octo: the prefill chunk must be positive");
    if (options.ring_depth == 0) throw octo::error("octo: the ring depth must be at least 1");
    if (std::filesystem::is_directory(path)) src = detail::open_directory_source(path, options.ctx);
    else if (std::filesystem::exists(path)) src = detail::open_gguf_source(path, options.ctx);
    else throw octo::error("octo: no such model file or directory '" + path.string() + "'");
    cfg = src->config();
    chunk = std::min(options.prefill_chunk, cfg.max_ctx);

    // Programs first (their buffers size the plan), then the plan, then the VM.
    const auto probe_decode = build_set_programs(1);
    const auto probe_prefill = build_set_programs(chunk);
    hidden_half = align_up(std::uint64_t(chunk * cfg.hidden * 4), buffer_alignment);
    residency_inputs in;
    in.ring_depth = options.ring_depth;
    in.vram_budget = options.vram_budget;
    for (std::int64_t l = 0; l < cfg.layers; ++l) in.layer_bytes.push_back(src->layer_blob_bytes(l));
    std::uint64_t own_io = 0;
    for (const auto* set : {&probe_decode, &probe_prefill})
      for (const auto& p : *set) {
        scratch_bytes = std::max(scratch_bytes, scratch_layout(p, nullptr));
        for (const auto& b : p.buffers)
          if ((b.kind == ir::buffer_kind::io_input || b.kind == ir::buffer_kind::io_output) && b.name.view() != "pos" &&
              b.name.view() != "hidden_in" && b.name.view() != "hidden_out")
            own_io += align_up(std::uint64_t(b.nbytes()), buffer_alignment);
      }
    for (const auto& b : probe_decode.front().buffers)
      if (b.kind == ir::buffer_kind::weight) in.embed_bytes += std::uint64_t(b.nbytes());
    for (const auto& b : probe_decode.back().buffers)
      if (b.kind == ir::buffer_kind::weight && b.name.view() != "token_embd.weight") in.head_bytes += std::uint64_t(b.nbytes());
    for (std::size_t i = 1; i + 1 < probe_decode.size(); ++i)
      for (const auto& b : probe_decode[i].buffers)
        if (b.kind == ir::buffer_kind::kv_cache) in.kv_bytes += std::uint64_t(b.nbytes());
    in.activation_bytes = scratch_bytes + 2 * hidden_half + align_up(std::uint64_t(chunk) * 4, buffer_alignment) + own_io;
    if (options.resident_layers >= 0) plan = plan_with_resident_count(in, options.resident_layers);
    else if (options.vram_budget == 0) plan = plan_with_resident_count(in, cfg.layers);
    else plan = plan_residency(in);
    say(plan.describe());

    slot_of.assign(std::size_t(cfg.layers), -1);
    for (std::int64_t l = 0; l < cfg.layers; ++l)
      if (!plan.resident[std::size_t(l)]) {
        slot_of[std::size_t(l)] = std::int64_t(streamed.size() % plan.ring_depth);
        streamed.push_back(l);
      }

    vm = options.vm == backend::reference ? detail::make_reference_stream_vm()
                                          : detail::make_vulkan_stream_vm(options.vulkan);
    vm->create_region("hidden", 2 * hidden_half);
    vm->create_region("io", align_up(std::uint64_t(chunk) * 4, buffer_alignment));
    if (scratch_bytes > 0) vm->create_region("scratch", scratch_bytes);
    for (std::uint32_t s = 0; s < plan.ring_depth; ++s) vm->create_region(slot_region(s), plan.slot_bytes);
    slot_compute.assign(plan.ring_depth, 0);
    slot_upload.assign(plan.ring_depth, 0);
    slot_pending.assign(plan.ring_depth, false);
    setup_host_memory();
    reader = std::make_unique<reader_thread>();

    decode_set = add_set(1, probe_decode);  // prefill programs are added for the first prompt (the plan counts them)
    say("ready: " + std::to_string(plan.resident_layers) + " resident layers, " + std::to_string(streamed.size()) +
        " streamed through " + std::to_string(plan.ring_depth) + " slots; device " + vm->device_name());
  }

  ~impl() {
    // Let queued reads finish before the memory they write goes away.
    reader.reset();
  }

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  // ---- programs -----------------------------------------------------------------------------------------

  /// Weight dtypes and shapes from the source (as gguf_model::finish does), then validation.
  ir::program finish(ir::program p) const {
    for (auto& b : p.buffers) {
      if (b.kind != ir::buffer_kind::weight) continue;
      const std::string key = b.source.str().empty() ? b.name.str() : b.source.str();
      const auto* t = src->find(key);
      if (!t) throw octo::error("octo: " + src->label() + ": missing tensor '" + key + "'");
      std::vector<std::int64_t> want(b.shape.rbegin(), b.shape.rend());
      if (t->dims != want) throw octo::error("octo: " + src->label() + ": tensor '" + key + "' has another shape than the model needs");
      const auto dt = model_file::to_dtype(t->ggml_type);
      if (!dt) throw octo::error("octo: " + src->label() + ": tensor '" + key + "' has an unsupported type");
      b.dtype = *dt;
      if (std::uint64_t(b.nbytes()) != t->bytes)
        throw octo::error("octo: " + src->label() + ": tensor '" + key + "' holds " + std::to_string(t->bytes) +
                          " bytes, expected " + std::to_string(b.nbytes()));
    }
    const auto r = ir::validate(p);
    if (!r.ok)
      throw octo::error("octo: " + src->label() + ": a segment program does not validate: " +
                        (r.errors.empty() ? std::string("(no detail)") : r.errors.front().str()));
    return p;
  }

  std::vector<ir::program> build_set_programs(std::int64_t T) const {
    std::vector<ir::program> r;
    const auto make = [&](models::segment seg, bool argmax) {
      models::build_options o;
      o.part = seg;
      o.argmax = argmax;
      return finish(T == 1 ? models::decoder_step(cfg, o) : models::prefill(cfg, T, o));
    };
    r.push_back(make(models::segment::embedding(), false));
    for (std::int64_t l = 0; l < cfg.layers; ++l) r.push_back(make(models::segment::layers(l, l + 1), false));
    r.push_back(make(models::segment::output_head(cfg.layers), true));
    return r;
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
    const std::size_t n = progs.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& p = progs[i];
      std::vector<detail::placement> pl;
      scratch_layout(p, &pl);
      const bool is_layer = i > 0 && i + 1 < n;
      const std::int64_t layer = is_layer ? std::int64_t(i) - 1 : -1;
      // hidden state ping-pong: the embedding writes half 0, layer l reads half l%2 and writes (l+1)%2
      const std::int64_t in_half = i == 0 ? -1 : (i - 1) % 2;
      for (const auto& b : p.buffers) {
        const auto name = b.name.view();
        if (name == "hidden_in") pl.push_back({"hidden_in", "hidden", std::uint64_t(in_half) * hidden_half});
        else if (name == "hidden_out") pl.push_back({"hidden_out", "hidden", std::uint64_t((in_half + 1) % 2) * hidden_half});
        else if (name == "pos") pl.push_back({"pos", "io", 0});
        else if (is_layer && b.kind == ir::buffer_kind::weight && slot_of[std::size_t(layer)] >= 0) {
          const auto* t = src->find(b.source.str().empty() ? b.name.view() : b.source.view());
          pl.push_back({b.name.str(), slot_region(std::uint32_t(slot_of[std::size_t(layer)])), t->offset});
        }
      }
      const std::uint32_t id = vm->add_program(p, pl);
      // resident weights: written once (programs share them by name)
      for (const auto& b : p.buffers) {
        if (b.kind != ir::buffer_kind::weight) continue;
        if (is_layer && slot_of[std::size_t(layer)] >= 0) continue;
        if (weights_written.count(b.name.view())) continue;
        const std::string key = b.source.str().empty() ? b.name.str() : b.source.str();
        src->with_tensor(key, [&](std::span<const std::byte> bytes) { vm->write_bytes(id, b.name.view(), bytes); });
        weights_written.insert(b.name.str());
      }
      if (i == 0) s.embed = id;
      else if (i + 1 == n) s.head = id;
      else s.layers.push_back(id);
      if (T == 1 && (i % 8 == 0 || i + 1 == n))
        say("loading: " + std::to_string(i + 1) + " of " + std::to_string(n) + " programs, " +
            format_bytes(vm->memory_in_use()) + " of device memory");
    }
    return s;
  }

  // ---- host memory: staging buffers and the warm tier ---------------------------------------------

  void setup_host_memory() {
    if (streamed.empty()) return;
    const std::uint64_t slot = plan.slot_bytes;
    std::uint64_t tier_slots = options.ram_budget / slot;
    tier_slots = std::min<std::uint64_t>(tier_slots, streamed.size());
    if (tier_slots > 0) {
      // pinned memory in blocks of at most ~1 GiB (a whole number of slots, at least one)
      const std::uint64_t per_block = std::max<std::uint64_t>(1, (std::uint64_t(1) << 30) / slot);
      std::vector<std::span<std::byte>> regions;
      for (std::uint64_t done = 0; done < tier_slots;) {
        const std::uint64_t k = std::min(per_block, tier_slots - done);
        tier_blocks.push_back(vm->allocate_pinned(k * slot));
        regions.emplace_back(tier_blocks.back().data, std::size_t(k * slot));
        done += k;
      }
      tier = std::make_unique<stream::ram_tier>(slot, regions);
    }
    // Staging only when the tier cannot hold every streamed layer: the ring plus one read ahead.
    const std::size_t n_staging = tier_slots >= streamed.size() ? 0 : plan.ring_depth + 1;
    for (std::size_t i = 0; i < n_staging; ++i) staging.push_back({vm->allocate_pinned(slot), false});
    say("host memory: " + std::to_string(tier_slots) + " of " + std::to_string(streamed.size()) +
        " streamed layers fit the RAM tier (" + format_bytes(tier_slots * slot) + "), " +
        std::to_string(n_staging) + " staging buffers of " + format_bytes(slot));
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

  std::future<void> read_async(std::int64_t layer, std::span<std::byte> dst) {
    return reader->post([this, layer, dst] {
      const auto t0 = clock_type::now();
      const std::uint64_t n = src->read_layer(layer, dst);
      source_ns += std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count());
      source_bytes += n;
    });
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
      if (tier) {
        if (auto blob = tier->lookup(key)) {  // warm: straight from pinned RAM
          tier->pin(key);
          std::tie(f.pinned_id, f.pinned_offset) = locate(blob->data());
          f.tier = true;
          ++st.ram_hits;
          fetches.push_back(std::move(f));
          ++next_fetch;
          continue;
        }
        ++st.ram_misses;
        // Fill free tier slots, never evict: the access pattern is cyclic, under which LRU would miss
        // every time, while a fixed subset hits on every pass.
        if (tier->resident_count() < tier->capacity()) {
          auto blob = tier->insert(key, bytes);
          if (blob) {
            tier->pin(key);
            std::tie(f.pinned_id, f.pinned_offset) = locate(blob->data());
            f.tier = true;
            f.ready = read_async(layer, *blob);
            fetches.push_back(std::move(f));
            ++next_fetch;
            continue;
          }
        }
      }
      int free_staging = -1;
      for (std::size_t i = 0; i < staging.size(); ++i)
        if (!staging[i].busy) {
          free_staging = int(i);
          break;
        }
      if (free_staging < 0) {
        if (tier) --st.ram_misses;  // looked up again when retried
        return;
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

  /// One pass of `ids` at positions start..: embed, every layer, head. Returns the head program.
  std::uint32_t run_pass(const program_set& s, std::span<const std::int32_t> ids, std::int64_t start) {
    if (broken) throw octo::error("octo: the streaming engine failed earlier and cannot continue");
    try {
      const auto T = static_cast<std::size_t>(s.T);
      std::vector<std::int32_t> pos_ids(T);
      for (std::size_t t = 0; t < T; ++t) pos_ids[t] = static_cast<std::int32_t>(start + std::int64_t(t));
      vm->set_position(start, s.T);
      vm->write_bytes(s.embed, "tokens", std::as_bytes(ids));
      vm->write_bytes(s.layers.front(), "pos", std::as_bytes(std::span<const std::int32_t>(pos_ids)));
      vm->submit(s.embed, 0);
      for (std::int64_t l = 0; l < cfg.layers; ++l) {
        const auto prog = s.layers[std::size_t(l)];
        const auto slot = slot_of[std::size_t(l)];
        if (slot < 0) {
          vm->submit(prog, 0);
          continue;
        }
        const std::uint64_t u = ensure_uploaded();
        slot_compute[std::size_t(slot)] = vm->submit(prog, u);
        slot_pending[std::size_t(slot)] = false;
        ++next_compute;
        pump();
      }
      const std::uint64_t done = vm->submit(s.head, 0);
      if (!streamed.empty()) pump();  // the next pass's first layers upload while the head computes
      const auto t0 = clock_type::now();
      vm->wait_compute(done);
      st.compute_wait_ms += ms_since(t0);
      ++st.passes;
      st.source_ms = double(source_ns.load()) / 1e6;
      st.bytes_from_source = source_bytes.load();
      return s.head;
    } catch (...) {
      broken = true;
      throw;
    }
  }

  const program_set& prefill_programs(std::int64_t n) {
    const std::int64_t T = std::min(n, chunk);
    if (T == 1) return *decode_set;
    if (!prefill_set || prefill_set->T != T) prefill_set = add_set(T, build_set_programs(T));
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

  std::vector<float> last_logits(std::uint32_t head, std::int64_t T) {
    return vm->read_f32_range(head, "logits", static_cast<std::size_t>((T - 1) * cfg.vocab),
                              static_cast<std::size_t>(cfg.vocab));
  }

  std::vector<float> prefill(std::span<const std::int32_t> ids) {
    if (ids.empty()) throw octo::error("octo: the prompt is empty");
    for (auto id : ids) check_token(id);
    if (pos + std::int64_t(ids.size()) > cfg.max_ctx)
      throw octo::error("octo: the prompt has " + std::to_string(ids.size()) + " tokens but the context holds " +
                        std::to_string(cfg.max_ctx - pos) + " more (raise --ctx)");
    if (pos != 0) {  // continuing a sequence: token by token, as the resident engine does
      std::uint32_t head = 0;
      for (auto id : ids) head = step(id);
      return last_logits(head, 1);
    }
    const auto n = static_cast<std::int64_t>(ids.size());
    const auto& s = prefill_programs(n);
    // Windows of T tokens; the last ends at the prompt's end and may overlap the one before (the
    // overlapped positions are recomputed to the same keys and values), as in octo::runtime::engine.
    std::int64_t start = 0;
    std::uint32_t head = 0;
    for (;;) {
      const bool last_window = start + s.T >= n;
      if (last_window) start = n - s.T;
      head = run_pass(s, ids.subspan(std::size_t(start), std::size_t(s.T)), start);
      if (last_window) break;
      start += s.T;
    }
    pos = n;
    return last_logits(head, s.T);
  }
};

streaming_engine::streaming_engine(const std::filesystem::path& model, const streaming_options& options) try
    : impl_(std::make_unique<impl>(model, options)) {
} catch (const octo::error&) {
  throw;
} catch (const std::exception& e) {  // out of memory, a library's exception: still one line naming the file
  throw octo::error("octo: " + model.filename().string() + ": cannot load: " +
                    (dynamic_cast<const std::bad_alloc*>(&e) ? std::string("out of memory") : octo::library_text(e.what())));
}
streaming_engine::~streaming_engine() = default;
streaming_engine::streaming_engine(streaming_engine&&) noexcept = default;
streaming_engine& streaming_engine::operator=(streaming_engine&&) noexcept = default;

const models::model_config& streaming_engine::config() const { return impl_->cfg; }
const model_file::tokenizer& streaming_engine::tokenizer() const { return impl_->src->tokenizer(); }
const std::string& streaming_engine::architecture() const { return impl_->src->architecture(); }
const residency_plan& streaming_engine::plan() const { return impl_->plan; }
std::string streaming_engine::device_name() const { return impl_->vm->device_name(); }
std::int64_t streaming_engine::context() const { return impl_->cfg.max_ctx; }
std::int64_t streaming_engine::position() const { return impl_->pos; }
std::uint64_t streaming_engine::streamed_bytes_per_token() const { return impl_->plan.streamed_bytes_per_pass; }
void streaming_engine::reset() { impl_->pos = 0; }
std::uint64_t streaming_engine::validation_messages() const { return impl_->vm->validation_messages(); }
const engine::timing& streaming_engine::last_timing() const { return impl_->last; }
const streaming_stats& streaming_engine::stats() const { return impl_->st; }
void streaming_engine::reset_stats() {
  impl_->st = {};
  impl_->source_ns = 0;
  impl_->source_bytes = 0;
}
void streaming_engine::prepare_prefill(std::int64_t n) {
  if (n > 0 && n <= context()) (void)impl_->prefill_programs(n);
}

std::vector<float> streaming_engine::prefill(std::span<const std::int32_t> ids) { return impl_->prefill(ids); }

std::vector<float> streaming_engine::decode(std::int32_t id) { return impl_->last_logits(impl_->step(id), 1); }

std::int32_t streaming_engine::decode_greedy(std::int32_t id) {
  const auto head = impl_->step(id);
  const auto b = impl_->vm->read_bytes(head, "next_token");
  if (b.size() < 4) throw octo::error("octo: buffer 'next_token' is empty");
  std::int32_t r = 0;
  std::memcpy(&r, b.data(), 4);
  return r;
}

std::vector<std::int32_t> streaming_engine::generate(std::span<const std::int32_t> prompt, std::int64_t n,
                                                     const sampling_params& s,
                                                     const std::function<bool(std::int32_t)>& on_token,
                                                     std::vector<float>* prompt_logits) {
  if (n < 0) throw octo::error("octo: the number of tokens to generate must be >= 0");
  if (impl_->pos == 0) prepare_prefill(static_cast<std::int64_t>(prompt.size()));
  return detail::generate_loop(*this, impl_->last, prompt, n, s, on_token, prompt_logits);
}

}  // namespace octo::runtime
