// Compiling is the test: every built-in model's decode step and prefill, built, lowered (pages
// included) and proven valid inside static_assert. These graphs need more than g++'s default
// -fconstexpr-ops-limit (Qwen2.5-7B's step takes ~67M operations against a default of 33.5M, see
// docs/compile-time.md), so tests/CMakeLists.txt raises the limit for this file only.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

namespace m = octo::models;

static_assert(octo::validate(m::decoder_step(m::qwen2_5_0_5b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen2_5_1_5b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen2_5_7b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen3_0_6b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen3_8b)).ok);
static_assert(octo::validate(m::decoder_step(m::stories260k, {.argmax = true})).ok);

static_assert(octo::validate(m::prefill(m::qwen2_5_0_5b, 32)).ok);
static_assert(octo::validate(m::prefill(m::qwen3_0_6b, 32)).ok);
