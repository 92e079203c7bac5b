// The engine's VM seam emulated over CPU reference VMs (one per program): regions and pinned memory are
// host arrays, placed and shared buffers are copied in before a program runs and out after it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <new>
#include <set>

#include "octo/error.hpp"
#include "octo/vm/reference_vm.hpp"
#include "engine_vm.hpp"

namespace octo::runtime::detail {

namespace {

struct aligned_bytes {
  std::byte* p = nullptr;
  std::uint64_t n = 0;
  explicit aligned_bytes(std::uint64_t bytes) : n(bytes) {
    p = static_cast<std::byte*>(::operator new(std::size_t(bytes == 0 ? 1 : bytes), std::align_val_t{4096}));
    std::memset(p, 0, std::size_t(bytes));
  }
  ~aligned_bytes() { ::operator delete(p, std::align_val_t{4096}); }
  aligned_bytes(const aligned_bytes&) = delete;
  aligned_bytes& operator=(const aligned_bytes&) = delete;
};

struct region {
  std::vector<std::byte> bytes;
  std::uint64_t version = 1;  // bumped by every write into it
};

struct shared_buffer {
  std::vector<std::byte> bytes;
  std::uint64_t version = 1;
};

struct placed {
  std::int32_t id = 0;
  std::string region;
  std::uint64_t offset = 0, bytes = 0;
  bool written = false;          // the program writes it (copied back out after a run)
  std::uint64_t seen = 0;        // region version last copied in
};

struct shared_use {
  std::int32_t id = 0;
  std::string name;
  bool written = false;
  std::uint64_t seen = 0;        // shared version last copied in
};

struct program_state {
  std::unique_ptr<vm::reference_vm> vm;
  std::vector<placed> placements;
  std::vector<shared_use> shared;
  std::vector<ir::layer_output> layers;                          // observed after every run
  std::map<std::uint32_t, std::vector<vm::layer_stats>> stats;   // by position % vm::layer_stats_slots
  std::uint32_t ring_slots = 0;                                  // token loop: 0 when not enabled
  std::deque<std::pair<std::uint64_t, std::int32_t>> unread;     // token loop: (compute value, token)
};

class reference_engine_vm final : public engine_vm {
 public:
  std::string device_name() const override { return "reference VM (CPU)"; }

  void create_region(std::string_view name, std::uint64_t bytes) override {
    auto& r = regions_[std::string(name)];
    r.bytes.assign(std::size_t(bytes), std::byte{0});
    ++r.version;
  }

  std::uint32_t add_program(const ir::program& p, std::span<const placement> pl) override {
    program_state s;
    s.vm = std::make_unique<vm::reference_vm>(p);
    const auto& prog = s.vm->program();
    s.layers = ir::layer_outputs(prog);
    for (const auto l : skipped_) skip_in(s, l, true);
    std::vector<bool> is_written(prog.buffers.size(), false);
    for (const auto& t : prog.tasks)
      for (auto o : t.outputs) is_written[std::size_t(o)] = true;
    std::vector<bool> is_placed(prog.buffers.size(), false);
    for (const auto& x : pl) {
      const std::int32_t id = s.vm->buffer_id(x.buffer);
      const auto it = regions_.find(x.region);
      if (it == regions_.end()) throw octo::error("octo: placement of '" + x.buffer + "' into unknown region '" + x.region + "'");
      const auto nb = static_cast<std::uint64_t>(prog.buffers[std::size_t(id)].nbytes());
      if (x.offset + nb > it->second.bytes.size())
        throw octo::error("octo: placement of '" + x.buffer + "' runs past the end of region '" + x.region + "'");
      s.placements.push_back({id, x.region, x.offset, nb, is_written[std::size_t(id)], 0});
      is_placed[std::size_t(id)] = true;
    }
    for (const auto& b : prog.buffers) {
      const auto id = static_cast<std::int32_t>(&b - prog.buffers.data());
      if (is_placed[std::size_t(id)]) continue;
      if (b.kind != ir::buffer_kind::weight && b.kind != ir::buffer_kind::constant && b.kind != ir::buffer_kind::kv_cache)
        continue;
      auto [it, fresh] = shared_.try_emplace(b.name.str());
      if (fresh) it->second.bytes.assign(std::size_t(b.nbytes()), std::byte{0});
      else if (it->second.bytes.size() != std::size_t(b.nbytes()))
        throw octo::error("octo: shared buffer '" + b.name.str() + "' has another size in an earlier program");
      s.shared.push_back({id, b.name.str(), is_written[std::size_t(id)], 0});
    }
    programs_.push_back(std::move(s));
    return static_cast<std::uint32_t>(programs_.size() - 1);
  }

  void write_bytes(std::uint32_t prog, std::string_view name, std::span<const std::byte> bytes) override {
    auto& s = at(prog);
    const std::int32_t id = s.vm->buffer_id(name);
    for (auto& x : s.placements)
      if (x.id == id) {
        check_size(name, x.bytes, bytes.size());
        auto& r = regions_.at(x.region);
        std::memcpy(r.bytes.data() + x.offset, bytes.data(), bytes.size());
        ++r.version;
        return;
      }
    for (auto& u : s.shared)
      if (u.id == id) {
        auto& sh = shared_.at(u.name);
        check_size(name, sh.bytes.size(), bytes.size());
        sh.bytes.assign(bytes.begin(), bytes.end());
        ++sh.version;
        return;
      }
    s.vm->write_bytes(id, bytes);
  }

  void remove_program(std::uint32_t prog) override { at(prog) = {}; }

  void read_into(std::uint32_t prog, std::string_view name, std::span<std::byte> dst, std::uint64_t offset) override {
    auto& s = at(prog);
    const std::int32_t id = s.vm->buffer_id(name);
    std::span<const std::byte> all;
    bool found = false;
    for (auto& x : s.placements)
      if (x.id == id) {
        all = std::span<const std::byte>(regions_.at(x.region).bytes).subspan(std::size_t(x.offset), std::size_t(x.bytes));
        found = true;
      }
    for (auto& u : s.shared)
      if (!found && u.id == id) {
        all = shared_.at(u.name).bytes;
        found = true;
      }
    if (!found) all = s.vm->bytes(id);
    if (offset > all.size() || dst.size() > all.size() - offset)
      throw octo::error("octo: read_into: buffer '" + std::string(name) + "' holds " + std::to_string(all.size()) +
                        " bytes, " + std::to_string(dst.size()) + " asked for from byte " + std::to_string(offset));
    std::memcpy(dst.data(), all.data() + offset, dst.size());
  }

  void run(std::uint32_t prog) override { wait_compute(submit(prog, upload_)); }

  void set_position(std::int64_t pos, std::int64_t) override { pos_ = pos; }

  // The token loop emulated on the host, step by step as the device's tail does it: the step runs at
  // once, then its argmax becomes the next input, the position advances and the token waits to be read.
  void enable_token_loop(std::uint32_t prog, std::uint32_t ring_slots) override {
    auto& s = at(prog);
    for (const char* name : {"tokens", "pos", "next_token"}) {
      const auto& b = s.vm->program().buffers[std::size_t(s.vm->buffer_id(name))];
      if (b.dtype != ir::dtype::i32 || b.numel() != 1)
        throw octo::error(std::string("octo: enable_token_loop: the program's '") + name + "' is not one I32 element");
    }
    if (ring_slots == 0) throw octo::error("octo: enable_token_loop: the ring needs at least one slot");
    s.ring_slots = ring_slots;
  }
  std::uint64_t submit_token_step(std::uint32_t prog) override {
    auto& s = at(prog);
    if (s.ring_slots == 0) throw octo::error("octo: submit_token_step: program " + std::to_string(prog) + " has no token loop");
    if (s.unread.size() >= s.ring_slots)
      throw octo::error("octo: submit_token_step: " + std::to_string(s.unread.size()) + " steps unread, as many as the ring's slots");
    const std::uint64_t v = submit(prog, upload_);
    std::int32_t t = 0;
    read_into(prog, "next_token", std::as_writable_bytes(std::span<std::int32_t>(&t, 1)), 0);
    const std::int32_t next_pos = static_cast<std::int32_t>(pos_ + 1);
    write_bytes(prog, "tokens", std::as_bytes(std::span<const std::int32_t>(&t, 1)));
    write_bytes(prog, "pos", std::as_bytes(std::span<const std::int32_t>(&next_pos, 1)));
    ++pos_;
    s.unread.push_back({v, t});
    return v;
  }
  std::int32_t token_step_result(std::uint32_t prog, std::uint64_t value) override {
    auto& s = at(prog);
    if (s.unread.empty() || s.unread.front().first != value)
      throw octo::error("octo: token_step_result(" + std::to_string(value) + "): not the oldest unread step");
    const std::int32_t t = s.unread.front().second;
    s.unread.pop_front();
    return t;
  }

  pinned_block allocate_pinned(std::uint64_t bytes) override {
    pinned_.push_back(std::make_unique<aligned_bytes>(bytes));
    return {static_cast<std::uint32_t>(pinned_.size()), pinned_.back()->p, bytes};
  }

  void free_pinned(std::uint32_t id) override {  // ids stay unique: the entry is emptied, not erased
    if (id == 0 || id > pinned_.size() || !pinned_[id - 1])
      throw octo::error("octo: free_pinned: no pinned memory with id " + std::to_string(id));
    pinned_[id - 1].reset();
  }

  std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region_name,
                             std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) override {
    if (after_compute > compute_)
      throw octo::error("octo: upload waits for compute " + std::to_string(after_compute) + ", never submitted");
    if (src == 0 || src > pinned_.size() || !pinned_[src - 1] || src_offset + bytes > pinned_[src - 1]->n)
      throw octo::error("octo: upload from a bad pinned range");
    const auto it = regions_.find(std::string(region_name));
    if (it == regions_.end() || dst_offset + bytes > it->second.bytes.size())
      throw octo::error("octo: upload into a bad range of region '" + std::string(region_name) + "'");
    std::memcpy(it->second.bytes.data() + dst_offset, pinned_[src - 1]->p + src_offset, std::size_t(bytes));
    ++it->second.version;
    return ++upload_;
  }

  std::uint64_t submit(std::uint32_t prog, std::uint64_t after_upload) override {
    if (after_upload > upload_)
      throw octo::error("octo: submit waits for upload " + std::to_string(after_upload) + ", never issued");
    auto& s = at(prog);
    for (auto& u : s.shared) {
      const auto& sh = shared_.at(u.name);
      if (u.seen != sh.version) {
        s.vm->write_bytes(u.id, sh.bytes);
        u.seen = sh.version;
      }
    }
    for (auto& x : s.placements) {
      const auto& r = regions_.at(x.region);
      if (x.written || x.seen != r.version) {  // unchanged weights keep the VM's converted copy
        s.vm->write_bytes(x.id, std::span(r.bytes).subspan(std::size_t(x.offset), std::size_t(x.bytes)));
        x.seen = r.version;
      }
    }
    s.vm->set_position(pos_);
    s.vm->run();
    observe(s);
    for (auto& u : s.shared)
      if (u.written) {
        auto& sh = shared_.at(u.name);
        const auto b = s.vm->bytes(u.id);
        sh.bytes.assign(b.begin(), b.end());
        u.seen = ++sh.version;
      }
    for (auto& x : s.placements)
      if (x.written) {
        auto& r = regions_.at(x.region);
        const auto b = s.vm->bytes(x.id);
        std::memcpy(r.bytes.data() + x.offset, b.data(), b.size());
        ++r.version;
      }
    return ++compute_;
  }

  void wait_compute(std::uint64_t v) override {
    if (v > compute_) throw octo::error("octo: waiting for compute " + std::to_string(v) + ", never submitted");
  }
  void wait_upload(std::uint64_t v) override {
    if (v > upload_) throw octo::error("octo: waiting for upload " + std::to_string(v) + ", never issued");
  }
  std::uint64_t completed_upload() const override { return upload_; }
  std::uint64_t validation_messages() const override { return 0; }
  vm::vulkan_stats stats(std::uint32_t) const override { return {}; }
  std::vector<vm::task_profile> profile(std::uint32_t) const override { return {}; }
  void set_layer_skipped(std::int32_t layer, bool skipped) override {
    for (auto& s : programs_)
      if (s.vm) skip_in(s, layer, skipped);
    if (skipped) skipped_.insert(layer);
    else skipped_.erase(layer);
  }
  void set_precision(vm::matmul_precision) override {}  // f32 throughout: both precisions are `accurate` here
  void keep_awake(bool) override {}  // no clock to keep up
  std::vector<vm::layer_stats> layer_statistics(std::uint32_t prog, std::int64_t position) const override {
    if (prog >= programs_.size() || !programs_[prog].vm) throw octo::error("octo: no program " + std::to_string(prog));
    const auto& st = programs_[prog].stats;
    const auto it = st.find(static_cast<std::uint32_t>(position % vm::layer_stats_slots));
    return it == st.end() ? std::vector<vm::layer_stats>{} : it->second;
  }
  std::uint64_t memory_budget() const override { return 0; }  // host memory: the context stays as asked
  std::uint64_t memory_in_use() const override {
    std::uint64_t n = 0;
    for (const auto& [k, r] : regions_) n += r.bytes.size();
    for (const auto& [k, b] : shared_) n += b.bytes.size();
    return n;
  }

 private:
  program_state& at(std::uint32_t prog) {
    if (prog >= programs_.size() || !programs_[prog].vm) throw octo::error("octo: no program " + std::to_string(prog));
    return programs_[prog];
  }
  // The Vulkan VM's observer (shaders/vm_observe.comp) on the host, in double: each layer output's RMS
  // and max |x| over its finite values, and the count of the others.
  void observe(program_state& s) {
    if (s.layers.empty()) return;
    std::vector<vm::layer_stats> out;
    for (const auto& lo : s.layers) {
      const auto v = s.vm->read_f32(lo.buffer);
      double sum = 0.0, mx = 0.0;
      std::uint32_t bad = 0;
      for (float x : v) {
        if (!std::isfinite(x)) {
          ++bad;
          continue;
        }
        sum += double(x) * x;
        mx = std::max(mx, double(std::fabs(x)));
      }
      const std::size_t finite = v.size() - bad;
      out.push_back({lo.layer, finite ? float(std::sqrt(sum / double(finite))) : 0.0f, float(mx), bad,
                     static_cast<std::uint32_t>(v.size())});
    }
    s.stats[static_cast<std::uint32_t>(pos_ % vm::layer_stats_slots)] = std::move(out);
  }
  // A program holding the layer skips it (the programs of a chain hold one layer each, or none).
  static void skip_in(program_state& s, std::int32_t layer, bool skipped) {
    for (const auto& lo : s.layers)
      if (lo.layer == layer) s.vm->set_layer_skipped(layer, skipped);
  }
  static void check_size(std::string_view name, std::uint64_t want, std::uint64_t got) {
    if (want != got)
      throw octo::error("octo: buffer '" + std::string(name) + "' holds " + std::to_string(want) + " bytes, got " +
                        std::to_string(got));
  }

  std::map<std::string, region, std::less<>> regions_;
  std::map<std::string, shared_buffer, std::less<>> shared_;
  std::vector<program_state> programs_;
  std::vector<std::unique_ptr<aligned_bytes>> pinned_;
  std::uint64_t compute_ = 0, upload_ = 0;
  std::int64_t pos_ = 0;
  std::set<std::int32_t> skipped_;  // layers skipped in every program, present and future
};

}  // namespace

std::unique_ptr<engine_vm> make_reference_vm() { return std::make_unique<reference_engine_vm>(); }

}  // namespace octo::runtime::detail
