// Compiling is the test: built-in models' decode steps and a prefill, built, lowered (pages included)
// and proven valid inside static_assert with g++'s DEFAULT constexpr limits (fused decode steps: Qwen2.5-7B
// ~19M operations, Llama-3.1-8B ~21M, Qwen3-8B ~25M of the default 33.5M, see docs/compile-time.md). The unfused Qwen3
// graphs and prefills cost more and live in models_validate_qwen3.cpp with a raised limit.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

namespace m = octo::models;

static_assert(octo::validate(m::decoder_step(m::qwen2_5_0_5b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen2_5_1_5b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen2_5_7b)).ok);
static_assert(octo::validate(m::decoder_step(m::stories260k, {.argmax = true})).ok);
// Llama 3.1 / 3.2, with their RoPE scaling in every task that rotates.
static_assert(octo::validate(m::decoder_step(m::llama3_2_1b)).ok);
static_assert(octo::validate(m::decoder_step(m::llama3_1_8b)).ok);
// Decode steps are fused by default (docs/ir.md 5.1): Qwen3-8B's fused step (~26M operations) fits the
// default limits; the plain ops stay selectable with a schedule without fusion_grouping.
static_assert(octo::validate(m::decoder_step(m::qwen3_8b)).ok);
constexpr octo::ir::schedule_config unfused{};
static_assert(octo::validate(m::decoder_step(m::qwen2_5_0_5b, {.schedule = &unfused})).ok);

static_assert(octo::validate(m::prefill(m::qwen2_5_0_5b, 32)).ok);
