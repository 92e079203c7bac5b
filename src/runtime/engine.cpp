// engine: the decode loop and chunked prefill over either VM, behind one small runner interface.
#include "octo/runtime/engine.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <set>
#include <string>

#include "generate_loop.hpp"
#include "octo/error.hpp"
#include "octo/vm/reference_vm.hpp"

namespace octo::runtime {

namespace {

// Which program of the model a call is about.
enum class pass : std::uint8_t { decode, prefill };

// What the engine needs of a VM: the decode program, and a prefill program for T tokens beside it.
struct runner {
  virtual ~runner() = default;
  /// (Re)builds the prefill program; weights it shares with the decode program are not written again.
  virtual void set_prefill(const gguf_model& model, const ir::program& p) = 0;
  virtual void write_i32(pass which, std::string_view name, std::span<const std::int32_t> v) = 0;
  virtual void set_position(std::int64_t pos, std::int64_t n_tokens) = 0;
  virtual void run(pass which) = 0;
  /// After the prompt: the decode program must see the KV cache the prefill program wrote.
  virtual void after_prefill(const std::vector<std::string>& kv_names) = 0;
  virtual std::vector<float> read_f32(pass which, std::string_view name) = 0;
  /// `count` floats of an F32 buffer from float `first` on (the last prompt row of a prefill's logits:
  /// reading all T rows cost more than the prefill pass itself).
  virtual std::vector<float> read_f32_range(pass which, std::string_view name, std::size_t first, std::size_t count) {
    auto all = read_f32(which, name);
    if (first > all.size() || count > all.size() - first)
      throw octo::error("octo: buffer '" + std::string(name) + "' is shorter than asked");
    return {all.begin() + static_cast<std::ptrdiff_t>(first), all.begin() + static_cast<std::ptrdiff_t>(first + count)};
  }
  virtual std::int32_t read_first_i32(pass which, std::string_view name) = 0;
};

// The reference VM holds one program: prefill runs on a second one, whose KV cache is copied over.
struct reference_runner final : runner {
  vm::reference_vm decoder;
  std::unique_ptr<vm::reference_vm> prefiller;
  reference_runner(const gguf_model& model, ir::program p) : decoder(std::move(p)) {
    model.for_each_weight(decoder.program(), [&](std::string_view n, std::span<const std::byte> b) { decoder.write_bytes(n, b); });
  }
  vm::reference_vm& of(pass which) {
    if (which == pass::decode) return decoder;
    if (!prefiller) throw octo::error("octo: internal: no prefill program");
    return *prefiller;
  }
  void set_prefill(const gguf_model& model, const ir::program& p) override {
    prefiller.reset();  // one at a time: its weights are a second copy
    prefiller = std::make_unique<vm::reference_vm>(p);
    model.for_each_weight(p, [&](std::string_view n, std::span<const std::byte> b) { prefiller->write_bytes(n, b); });
  }
  void write_i32(pass w, std::string_view n, std::span<const std::int32_t> v) override { of(w).write_i32(n, v); }
  void set_position(std::int64_t pos, std::int64_t) override {
    decoder.set_position(pos);
    if (prefiller) prefiller->set_position(pos);
  }
  void run(pass w) override { of(w).run(); }
  void after_prefill(const std::vector<std::string>& kv_names) override {
    for (const auto& kv : kv_names) {
      const auto b = prefiller->bytes(prefiller->buffer_id(kv));
      decoder.write_bytes(kv, b);
    }
  }
  std::vector<float> read_f32(pass w, std::string_view n) override { return of(w).read_f32(n); }
  std::int32_t read_first_i32(pass w, std::string_view n) override {
    const auto b = of(w).bytes(of(w).buffer_id(n));
    if (b.size() < 4) throw octo::error("octo: buffer '" + std::string(n) + "' is empty");
    std::int32_t r = 0;
    std::memcpy(&r, b.data(), 4);
    return r;
  }
};

// One Vulkan VM holds both programs: they share the weights and the KV caches by name, so there is one
// copy of each and nothing to copy after the prompt.
struct vulkan_runner final : runner {
  vm::vulkan_vm vm;
  vm::program_id decode_id = 0;
  std::optional<vm::program_id> prefill_id;
  std::set<std::string, std::less<>> decode_weights;
  vulkan_runner(const gguf_model& model, const ir::program& p, const vm::vulkan_options& o) : vm(o) {
    vm.load(p);
    decode_id = 0;
    model.for_each_weight(p, [&](std::string_view n, std::span<const std::byte> b) {
      vm.write_bytes(decode_id, n, b);
      decode_weights.emplace(n);
    });
  }
  vm::program_id of(pass which) const {
    if (which == pass::decode) return decode_id;
    if (!prefill_id) throw octo::error("octo: internal: no prefill program");
    return *prefill_id;
  }
  void set_prefill(const gguf_model& model, const ir::program& p) override {
    if (prefill_id) vm.remove_program(*prefill_id);
    prefill_id.reset();
    prefill_id = vm.add_program(p);
    model.for_each_weight(p, [&](std::string_view n, std::span<const std::byte> b) {
      if (!decode_weights.count(n)) vm.write_bytes(*prefill_id, n, b);  // shared ones hold their data already
    });
  }
  void write_i32(pass w, std::string_view n, std::span<const std::int32_t> v) override {
    vm.write_bytes(of(w), n, std::as_bytes(v));
  }
  void set_position(std::int64_t pos, std::int64_t n) override {
    vm.set_position(static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(n));
  }
  void run(pass w) override { vm.execute(of(w)); }
  void after_prefill(const std::vector<std::string>&) override {}  // the KV caches are the same buffers
  std::vector<float> read_f32(pass w, std::string_view n) override { return vm.read_f32(of(w), n); }
  std::vector<float> read_f32_range(pass w, std::string_view n, std::size_t first, std::size_t count) override {
    std::vector<float> out(count);
    vm.read_into(of(w), n, std::as_writable_bytes(std::span<float>(out)), std::uint64_t{first} * 4);
    return out;
  }
  std::int32_t read_first_i32(pass w, std::string_view n) override {
    std::int32_t r = 0;
    vm.read_into(of(w), n, std::as_writable_bytes(std::span<std::int32_t>(&r, 1)));
    return r;
  }
};

}  // namespace

struct engine::impl {
  engine_options options;
  gguf_model model;
  ir::program decode_prog;
  std::unique_ptr<runner> vms;
  std::int64_t prefill_T = 0;  // tokens of the prefill program built (0: none yet)
  std::optional<pass> last_ran;  // whose profile() is the last pass's
  std::vector<std::string> kv_names;
  std::int64_t pos = 0;
  std::int64_t vocab = 0;
  timing last;

  impl(const std::filesystem::path& path, const engine_options& o) : options(o), model(path, o.ctx) {
    if (options.prefill_chunk <= 0) throw octo::error("octo: the prefill chunk must be positive");
    vocab = model.config().vocab;
    decode_prog = model.decode_program(true);
    for (const auto& b : decode_prog.buffers)
      if (b.kind == ir::buffer_kind::kv_cache) kv_names.push_back(b.name.str());
    if (options.vm == backend::reference) vms = std::make_unique<reference_runner>(model, decode_prog);
    else vms = std::make_unique<vulkan_runner>(model, decode_prog, options.vulkan);
  }

  vulkan_runner* vulkan() const {
    return options.vm == backend::vulkan ? static_cast<vulkan_runner*>(vms.get()) : nullptr;
  }

  void check_token(std::int32_t id) const {
    if (id < 0 || id >= vocab)
      throw octo::error("octo: token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab));
  }

  void step(std::int32_t id) {
    check_token(id);
    if (pos >= model.config().max_ctx)
      throw octo::error("octo: the context of " + std::to_string(model.config().max_ctx) + " tokens is full");
    const std::int32_t t[1] = {id}, p[1] = {static_cast<std::int32_t>(pos)};
    vms->write_i32(pass::decode, "tokens", t);
    vms->write_i32(pass::decode, "pos", p);
    vms->set_position(pos, 1);
    vms->run(pass::decode);
    last_ran = pass::decode;
    ++pos;
  }

  // The prefill VM for a prompt of n tokens (built, uploaded and recorded here, outside the timed pass).
  std::int64_t prepare_prefill(std::int64_t n) {
    const std::int64_t T = std::min(n, options.prefill_chunk);
    if (prefill_T != T) {
      if (last_ran == pass::prefill) last_ran.reset();
      prefill_T = 0;
      vms->set_prefill(model, model.prefill_program(T));
      prefill_T = T;
    }
    return T;
  }

  std::vector<float> batched_prefill(std::span<const std::int32_t> ids) {
    const auto n = static_cast<std::int64_t>(ids.size());
    const std::int64_t T = prepare_prefill(n);
    // Windows of T tokens; the last one ends at the prompt's end and may overlap the one before: the
    // overlapped positions are recomputed to the same keys and values.
    std::vector<std::int32_t> pos_ids(static_cast<std::size_t>(T));
    std::int64_t start = 0;
    for (;;) {
      const bool last = start + T >= n;
      if (last) start = n - T;
      for (std::int64_t t = 0; t < T; ++t) pos_ids[std::size_t(t)] = static_cast<std::int32_t>(start + t);
      vms->write_i32(pass::prefill, "tokens", ids.subspan(std::size_t(start), std::size_t(T)));
      vms->write_i32(pass::prefill, "pos", pos_ids);
      vms->set_position(start, T);
      vms->run(pass::prefill);
      last_ran = pass::prefill;
      if (last) break;
      start += T;
    }
    vms->after_prefill(kv_names);
    pos = n;
    return vms->read_f32_range(pass::prefill, "logits", static_cast<std::size_t>((T - 1) * vocab),
                               static_cast<std::size_t>(vocab));
  }

  std::vector<float> prefill(std::span<const std::int32_t> ids) {
    if (ids.empty()) throw octo::error("octo: the prompt is empty");
    for (auto id : ids) check_token(id);
    const auto ctx = model.config().max_ctx;
    if (pos + static_cast<std::int64_t>(ids.size()) > ctx)
      throw octo::error("octo: the prompt has " + std::to_string(ids.size()) + " tokens but the context holds " +
                        std::to_string(ctx - pos) + " more (raise --ctx)");
    if (pos == 0) return batched_prefill(ids);
    for (auto id : ids) step(id);
    return vms->read_f32(pass::decode, "logits");
  }
};

engine::engine(const std::filesystem::path& gguf, const engine_options& options) try
    : impl_(std::make_unique<impl>(gguf, options)) {
} catch (const octo::error&) {
  throw;
} catch (const std::exception& e) {  // out of memory, a library's exception: still one line naming the file
  throw octo::error("octo: " + gguf.filename().string() + ": cannot load: " +
                    (dynamic_cast<const std::bad_alloc*>(&e) ? std::string("out of memory") : octo::library_text(e.what())));
}
engine::~engine() = default;
engine::engine(engine&&) noexcept = default;
engine& engine::operator=(engine&&) noexcept = default;

const gguf_model& engine::model() const { return impl_->model; }
std::string engine::device_name() const {
  if (impl_->options.vm == backend::reference) return "reference VM (CPU)";
  return impl_->vulkan()->vm.device().name;
}
std::int64_t engine::context() const { return impl_->model.config().max_ctx; }
std::int64_t engine::position() const { return impl_->pos; }
void engine::reset() { impl_->pos = 0; }

std::vector<float> engine::prefill(std::span<const std::int32_t> ids) { return impl_->prefill(ids); }

std::vector<float> engine::decode(std::int32_t id) {
  impl_->step(id);
  return impl_->vms->read_f32(pass::decode, "logits");
}

std::int32_t engine::decode_greedy(std::int32_t id) {
  impl_->step(id);
  return impl_->vms->read_first_i32(pass::decode, "next_token");
}

std::vector<std::int32_t> engine::generate(std::span<const std::int32_t> prompt, std::int64_t n,
                                           const sampling_params& s, const std::function<bool(std::int32_t)>& on_token,
                                           std::vector<float>* prompt_logits) {
  if (n < 0) throw octo::error("octo: the number of tokens to generate must be >= 0");
  const auto n_prompt = static_cast<std::int64_t>(prompt.size());
  // built and recorded outside the timed prefill
  if (impl_->pos == 0 && n_prompt > 0 && n_prompt <= context()) impl_->prepare_prefill(n_prompt);
  return detail::generate_loop(*this, impl_->last, prompt, n, s, on_token, prompt_logits);
}

const engine::timing& engine::last_timing() const { return impl_->last; }

vm::vulkan_stats engine::decode_stats() const {
  if (impl_->options.vm != backend::vulkan) return {};
  return impl_->vulkan()->vm.stats(impl_->vulkan()->decode_id);
}

std::uint64_t engine::validation_messages() const {
  if (impl_->options.vm != backend::vulkan) return 0;
  std::uint64_t n = impl_->vulkan()->vm.stats().validation_messages;
  return n;
}

std::vector<vm::task_profile> engine::profile() const {
  auto* v = impl_->vulkan();
  if (!v || !impl_->last_ran) return {};
  return v->vm.profile(v->of(*impl_->last_ran));
}

}  // namespace octo::runtime
