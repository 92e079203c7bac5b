// engine: the decode loop and chunked prefill over either VM, behind one small runner interface.
#include "octo/runtime/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "octo/error.hpp"
#include "octo/vm/reference_vm.hpp"

namespace octo::runtime {

namespace {

// What the engine needs of a VM holding one program.
struct runner {
  virtual ~runner() = default;
  virtual void write_i32(std::string_view name, std::span<const std::int32_t> v) = 0;
  virtual void write_bytes(std::string_view name, std::span<const std::byte> b) = 0;
  virtual void set_position(std::int64_t pos, std::int64_t n_tokens) = 0;
  virtual void run() = 0;
  virtual std::vector<float> read_f32(std::string_view name) = 0;
  virtual std::vector<std::byte> read_bytes(std::string_view name) = 0;
  std::int32_t read_first_i32(std::string_view name) {
    const auto b = read_bytes(name);
    if (b.size() < 4) throw octo::error("octo: buffer '" + std::string(name) + "' is empty");
    std::int32_t r = 0;
    std::memcpy(&r, b.data(), 4);
    return r;
  }
};

struct reference_runner final : runner {
  vm::reference_vm vm;
  explicit reference_runner(ir::program p) : vm(std::move(p)) {}
  void write_i32(std::string_view n, std::span<const std::int32_t> v) override { vm.write_i32(n, v); }
  void write_bytes(std::string_view n, std::span<const std::byte> b) override { vm.write_bytes(n, b); }
  void set_position(std::int64_t pos, std::int64_t) override { vm.set_position(pos); }
  void run() override { vm.run(); }
  std::vector<float> read_f32(std::string_view n) override { return vm.read_f32(n); }
  std::vector<std::byte> read_bytes(std::string_view n) override {
    const auto s = vm.bytes(vm.buffer_id(n));
    return {s.begin(), s.end()};
  }
};

struct vulkan_runner final : runner {
  vm::vulkan_vm vm;
  vulkan_runner(const ir::program& p, const vm::vulkan_options& o) : vm(o) { vm.load(p); }
  void write_i32(std::string_view n, std::span<const std::int32_t> v) override { vm.write_bytes(n, std::as_bytes(v)); }
  void write_bytes(std::string_view n, std::span<const std::byte> b) override { vm.write_bytes(n, b); }
  void set_position(std::int64_t pos, std::int64_t n) override {
    vm.set_position(static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(n));
  }
  void run() override { vm.execute(); }
  std::vector<float> read_f32(std::string_view n) override { return vm.read_f32(n); }
  std::vector<std::byte> read_bytes(std::string_view n) override { return vm.read_bytes(n); }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct engine::impl {
  engine_options options;
  gguf_model model;
  ir::program decode_prog;
  std::unique_ptr<runner> decoder;
  std::unique_ptr<runner> prefiller;  // for prefill_T prompt tokens; rebuilt when another T is needed
  std::int64_t prefill_T = 0;
  runner* last_ran = nullptr;  // whose profile() is the last pass's
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
    decoder = make_runner(decode_prog);
  }

  std::unique_ptr<runner> make_runner(const ir::program& p) const {
    std::unique_ptr<runner> r;
    if (options.vm == backend::reference) r = std::make_unique<reference_runner>(p);
    else r = std::make_unique<vulkan_runner>(p, options.vulkan);
    model.for_each_weight(p, [&](std::string_view name, std::span<const std::byte> bytes) { r->write_bytes(name, bytes); });
    return r;
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
    decoder->write_i32("tokens", t);
    decoder->write_i32("pos", p);
    decoder->set_position(pos, 1);
    decoder->run();
    last_ran = decoder.get();
    ++pos;
  }

  // The prefill VM for a prompt of n tokens (built, uploaded and recorded here, outside the timed pass).
  std::int64_t prepare_prefill(std::int64_t n) {
    const std::int64_t T = std::min(n, options.prefill_chunk);
    if (!prefiller || prefill_T != T) {
      if (last_ran == prefiller.get()) last_ran = nullptr;
      prefiller.reset();  // one prefill VM at a time: its weights are a second copy
      prefiller = make_runner(model.prefill_program(T));
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
      prefiller->write_i32("tokens", ids.subspan(std::size_t(start), std::size_t(T)));
      prefiller->write_i32("pos", pos_ids);
      prefiller->set_position(start, T);
      prefiller->run();
      last_ran = prefiller.get();
      if (last) break;
      start += T;
    }
    for (const auto& kv : kv_names) decoder->write_bytes(kv, prefiller->read_bytes(kv));
    auto all = prefiller->read_f32("logits");
    pos = n;
    return {all.end() - vocab, all.end()};
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
    return decoder->read_f32("logits");
  }
};

engine::engine(const std::filesystem::path& gguf, const engine_options& options)
    : impl_(std::make_unique<impl>(gguf, options)) {}
engine::~engine() = default;
engine::engine(engine&&) noexcept = default;
engine& engine::operator=(engine&&) noexcept = default;

const gguf_model& engine::model() const { return impl_->model; }
std::string engine::device_name() const {
  if (impl_->options.vm == backend::reference) return "reference VM (CPU)";
  return static_cast<vulkan_runner&>(*impl_->decoder).vm.device().name;
}
std::int64_t engine::context() const { return impl_->model.config().max_ctx; }
std::int64_t engine::position() const { return impl_->pos; }
void engine::reset() { impl_->pos = 0; }

std::vector<float> engine::prefill(std::span<const std::int32_t> ids) { return impl_->prefill(ids); }

std::vector<float> engine::decode(std::int32_t id) {
  impl_->step(id);
  return impl_->decoder->read_f32("logits");
}

std::int32_t engine::decode_greedy(std::int32_t id) {
  impl_->step(id);
  return impl_->decoder->read_first_i32("next_token");
}

std::vector<std::int32_t> engine::generate(std::span<const std::int32_t> prompt, std::int64_t n,
                                           const sampling_params& s, const std::function<bool(std::int32_t)>& on_token,
                                           std::vector<float>* prompt_logits) {
  if (n < 0) throw octo::error("octo: the number of tokens to generate must be >= 0");
  sampler smp(s);
  impl_->last = {};
  std::vector<std::int32_t> history(prompt.begin(), prompt.end()), out;
  const auto n_prompt = static_cast<std::int64_t>(prompt.size());
  if (impl_->pos == 0 && n_prompt > 0 && n_prompt <= context()) impl_->prepare_prefill(n_prompt);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = prefill(prompt);
  impl_->last.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  impl_->last.prefill_ms = ms_since(t0);
  if (prompt_logits) *prompt_logits = logits;
  if (n == 0) return out;
  const bool greedy = s.is_greedy();
  std::int32_t next = smp.sample(logits, history);
  const auto t1 = std::chrono::steady_clock::now();
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
    ++impl_->last.decode_tokens;
  }
  impl_->last.decode_ms = ms_since(t1);
  return out;
}

const engine::timing& engine::last_timing() const { return impl_->last; }

vm::vulkan_stats engine::decode_stats() const {
  if (impl_->options.vm != backend::vulkan) return {};
  return static_cast<vulkan_runner&>(*impl_->decoder).vm.stats();
}

std::uint64_t engine::validation_messages() const {
  if (impl_->options.vm != backend::vulkan) return 0;
  std::uint64_t n = static_cast<vulkan_runner&>(*impl_->decoder).vm.stats().validation_messages;
  if (impl_->prefiller) n += static_cast<vulkan_runner&>(*impl_->prefiller).vm.stats().validation_messages;
  return n;
}

std::vector<vm::task_profile> engine::profile() const {
  if (impl_->options.vm != backend::vulkan || !impl_->last_ran) return {};
  return static_cast<vulkan_runner&>(*impl_->last_ran).vm.profile();
}

}  // namespace octo::runtime
