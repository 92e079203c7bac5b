// The random-weight Qwen2 / Qwen3 models of tests/data/ref_models (made with transformers, float64
// forward passes) converted to F32 and F16 GGUF and run through the Vulkan VM: last-position logits
// within relative L2 1e-4 (F32) / 2e-3 (F16) of transformers', greedy continuations identical.
#include <doctest/doctest.h>

#include "../support/hf_reference.hpp"
#include "../support/test_data.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <octo/ir/enums.hpp>
#include <octo/model_file/hf_to_gguf.hpp>
#include <octo/runtime/engine.hpp>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace octo;
using json = nlohmann::json;

namespace {

void check_model(const std::string& kind, ir::dtype type, const std::string& key, double tolerance) {
  const json ref = test::hf_reference(kind);
  const fs::path out = test::hf_reference_gguf(kind, type, "gpu_hf_ref");
  runtime::engine_options eo;
  eo.vm = runtime::backend::vulkan;
  eo.ctx = 64;
  eo.kv_type = ir::dtype::f32;  // the weights' contract; the cache types have theirs (runtime_kv_types.cpp)
  eo.prefill_chunk = 4;  // the 11-token prompt goes in overlapping windows
  eo.vulkan.pipeline_cache_dir.push_back('-');
  runtime::engine e(out, eo);
  fs::remove(out);
  CHECK(e.model().architecture() == kind);

  const auto prompts = ref["prompts"].get<std::vector<std::vector<std::int32_t>>>();
  REQUIRE(prompts.size() == 3);
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    CAPTURE(kind);
    CAPTURE(key);
    CAPTURE(p);
    e.reset();
    std::vector<float> logits;
    const auto greedy = ref[key]["greedy"][p].get<std::vector<std::int32_t>>();
    runtime::sampling_params g;
    const auto got = e.generate(prompts[p], std::int64_t(greedy.size()), g, {}, &logits);  // device argmax
    const auto want = ref[key]["logits"][p].get<std::vector<float>>();
    const double err = test::rel_l2(logits, want);
    MESSAGE(kind << " " << key << " prompt " << p << ": relative L2 " << err);
    CHECK(err < tolerance);
    CHECK(got == greedy);
  }
  CHECK(e.validation_messages() == 0);
}

}  // namespace

TEST_CASE("Vulkan: qwen2 reference model, F32 and F16 GGUF, match transformers") {
  check_model("qwen2", ir::dtype::f32, "f32", 1e-4);
  check_model("qwen2", ir::dtype::f16, "f16", 2e-3);
}
TEST_CASE("Vulkan: qwen3 reference model, F32 and F16 GGUF, match transformers") {
  check_model("qwen3", ir::dtype::f32, "f32", 1e-4);
  check_model("qwen3", ir::dtype::f16, "f16", 2e-3);
}

TEST_CASE("Vulkan vs reference VM on quantized GGUFs (Q8_0; Q4_K, Q6_K for tiny-qwen): same logits") {
  // The reference models' rows (64, 128) are too short for K-quant blocks, tiny-qwen's (256, 512) are not.
  const fs::path tiny = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen";
  const std::vector<std::pair<fs::path, ir::dtype>> cases{{test::hf_reference_dir("qwen2"), ir::dtype::q8_0},
                                                          {test::hf_reference_dir("qwen3"), ir::dtype::q8_0},
                                                          {tiny, ir::dtype::q4_k},
                                                          {tiny, ir::dtype::q6_k}};
  int n = 0;
  for (const auto& [folder, type] : cases) {
    CAPTURE(folder.string());
    CAPTURE(std::string(ir::name(type)));
    const fs::path out = fs::temp_directory_path() / ("octo_gpu_hf_q_" + std::to_string(::getpid()) + "_" +
                                                      std::to_string(n++) + ".gguf");
    model_file::hf_convert_options o;
    o.type = type;
    model_file::convert_hf_to_gguf(folder, out, o);
    runtime::engine_options eo;
    eo.ctx = 32;
    // An F32 cache: the weight formats are the subject here. With F16 a last-bit difference in a key
    // can round to different halves on the two VMs (runtime_kv_types.cpp holds the cache types' bounds).
    eo.kv_type = ir::dtype::f32;
    eo.prefill_chunk = 4;
    eo.vulkan.pipeline_cache_dir.push_back('-');
    // f32 arithmetic: the `fast` precision's decode GEMVs round x to 8 bits on devices that accelerate
    // integer dot products (docs/precision.md item 4; gpu_fused_decode tests that contract).
    eo.vulkan.precision = vm::matmul_precision::accurate;
    runtime::engine gpu(out, eo);
    eo.vm = runtime::backend::reference;
    runtime::engine ref(out, eo);
    fs::remove(out);
    if (folder == tiny) CHECK(gpu.model().config().weight_dtype == type);
    const std::vector<std::int32_t> prompt{1, 400, 17, 17, 250, 631, 42, 9, 300, 120, 77};
    const auto a = gpu.prefill(prompt), b = ref.prefill(prompt);
    MESSAGE(folder.filename().string() << " " << ir::name(type) << ": prompt logits relative L2 " << test::rel_l2(a, b));
    CHECK(test::rel_l2(a, b) < 1e-4);
    for (std::int32_t next : {5, 300, 631, 0}) {  // the same tokens fed to both (teacher forcing)
      const auto da = gpu.decode(next), db = ref.decode(next);
      CHECK(test::rel_l2(da, db) < 1e-4);
    }
    CHECK(gpu.validation_messages() == 0);
  }
}

TEST_CASE("Vulkan vs reference VM with Llama 3's RoPE scaling: every kernel that rotates takes the ramp") {
  // tinystories-656k (HF llama, head_dim 16) given Llama 3.1's "llama3" rope scaling: the converter
  // writes rope_freqs.weight, the config reads it as a ramp (unit_hf_to_gguf, unit_reference_ops check
  // both against Hugging Face's formula), and here the Vulkan VM's rotations follow the reference VM's:
  // a 260-token prompt in one pass (from 256 rows q and k rotate in the GEMMs' epilogue), the same prompt
  // in passes of 64 (ROPE tasks), and decode steps (q, k and v one task).
  const fs::path stories = fs::path(OCTO_SHARED_DATA_DIR) / "tinystories-656k";
  const fs::path dir = fs::temp_directory_path() / ("octo_gpu_llama3_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  test::tinystories_scaled(dir);
  const fs::path out = dir / "llama3.gguf", plain_out = dir / "plain.gguf";
  model_file::hf_convert_options o;
  o.type = ir::dtype::f16;
  model_file::convert_hf_to_gguf(dir, out, o);
  model_file::convert_hf_to_gguf(stories, plain_out, o);
  std::vector<std::int32_t> prompt;
  for (int i = 0; i < 260; ++i) prompt.push_back(std::int32_t(3 + (i * 37) % 2000));
  for (const std::int64_t chunk : {512, 64}) {
    CAPTURE(chunk);
    runtime::engine_options eo;
    eo.ctx = 272;
    eo.kv_type = ir::dtype::f32;
    eo.prefill_chunk = chunk;
    eo.vulkan.pipeline_cache_dir.push_back('-');
    eo.vulkan.precision = vm::matmul_precision::accurate;
    runtime::engine gpu(out, eo), gpu_plain(plain_out, eo);
    eo.vm = runtime::backend::reference;
    runtime::engine ref(out, eo);
    CHECK(gpu.model().config().rope_ramp.on());
    const auto a = gpu.prefill(prompt), b = ref.prefill(prompt), p = gpu_plain.prefill(prompt);
    MESSAGE("prefill in passes of " << chunk << ": relative L2 against the reference VM " << test::rel_l2(a, b)
                                    << ", against the unscaled model " << test::rel_l2(a, p));
    CHECK(test::rel_l2(a, b) < 1e-4);
    CHECK(test::rel_l2(a, p) > 1e-3);  // the scaling changed the answer
    for (std::int32_t next : {5, 300, 1999, 0}) {
      const auto da = gpu.decode(next), db = ref.decode(next);
      CHECK(test::rel_l2(da, db) < 1e-4);
    }
    CHECK(gpu.validation_messages() == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("IQ4_NL / IQ4_XS GGUFs: the Vulkan VM equals the reference VM; on trained weights the logits stay near F32's") {
  // tiny-qwen (random weights, rows of 256 and 512: every matrix IQ4_NL, or IQ4_XS) checks the kernels
  // against the reference VM on the same file: prompt logits and 24 greedy ids. tinystories-656k (real
  // trained weights; rows of 128 and 384, where --type iq4_xs falls back to IQ4_NL) also measures the
  // quantization itself: the prompt logits' distance from the F32 file's, through the reference VM, within
  // 0.25 and no further than Q4_0's (measured: IQ4_NL 0.167, Q4_0 0.174, Q4_1 0.185, Q5_0 0.097, Q8_0
  // 0.011). A random-weight model's logits amplify weight noise chaotically (tiny-qwen: Q4_0 0.44, Q4_K
  // 0.21, IQ4_XS 0.16, IQ4_NL 0.74 with every matrix's error below Q4_0's), so they measure nothing there.
  const fs::path tiny = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen";
  const fs::path stories = fs::path(OCTO_SHARED_DATA_DIR) / "tinystories-656k";
  REQUIRE_MESSAGE(fs::exists(stories / "model.safetensors"), "missing " << stories.string());
  struct item {
    fs::path folder;
    ir::dtype type;
    bool trained;
  };
  const item items[] = {{stories, ir::dtype::iq4_nl, true}, {tiny, ir::dtype::iq4_nl, false}, {tiny, ir::dtype::iq4_xs, false}};
  int n = 0;
  const auto convert = [&](const fs::path& folder, ir::dtype type) {
    const fs::path out = fs::temp_directory_path() / ("octo_gpu_iq4_" + std::to_string(::getpid()) + "_" +
                                                      std::to_string(n++) + ".gguf");
    model_file::hf_convert_options o;
    o.type = type;
    model_file::convert_hf_to_gguf(folder, out, o);
    return out;
  };
  for (const auto& it : items) {
    CAPTURE(it.folder.string());
    CAPTURE(std::string(ir::name(it.type)));
    const fs::path q = convert(it.folder, it.type);
    runtime::engine_options eo;
    eo.ctx = 48;
    eo.prefill_chunk = 4;
    eo.vulkan.pipeline_cache_dir.push_back('-');
    runtime::engine gpu(q, eo);
    eo.vm = runtime::backend::reference;
    runtime::engine ref(q, eo);
    fs::remove(q);
    CHECK(gpu.model().config().weight_dtype == it.type);

    const std::vector<std::int32_t> prompt{1, 400, 17, 17, 250, 631, 42, 9, 300, 120, 77};
    const auto a = gpu.prefill(prompt), b = ref.prefill(prompt);
    CHECK(test::rel_l2(a, b) < 1e-4);
    if (it.trained) {
      const fs::path f32 = convert(it.folder, ir::dtype::f32), q4 = convert(it.folder, ir::dtype::q4_0);
      runtime::engine ref_f32(f32, eo), ref_q4(q4, eo);
      fs::remove(f32);
      fs::remove(q4);
      const auto f = ref_f32.prefill(prompt), q4_0 = ref_q4.prefill(prompt);
      const double err = test::rel_l2(b, f), err_q4_0 = test::rel_l2(q4_0, f);
      MESSAGE(it.folder.filename().string() << " " << ir::name(it.type) << ": logits relative L2 to F32 " << err
                                            << " (Q4_0: " << err_q4_0 << ")");
      CHECK(err < 0.25);
      CHECK(err <= err_q4_0);
    }
    gpu.reset();
    ref.reset();
    runtime::sampling_params g;  // greedy
    const auto ids_gpu = gpu.generate(prompt, 24, g), ids_ref = ref.generate(prompt, 24, g);
    CHECK(ids_gpu.size() == 24);
    CHECK(ids_gpu == ids_ref);
    CHECK(gpu.validation_messages() == 0);
  }
}
