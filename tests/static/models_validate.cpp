// Compiling is the test: built-in models' decode steps and a prefill, built, lowered (pages included)
// and proven valid inside static_assert with g++'s DEFAULT constexpr limits (Qwen2.5-7B's step takes
// ~33M operations of the default 33.5M, see docs/compile-time.md). The Qwen3 graphs cost more (per-head
// q/k norms, 36 layers for 8B) and live in models_validate_qwen3.cpp with a raised limit.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

namespace m = octo::models;

static_assert(octo::validate(m::decoder_step(m::qwen2_5_0_5b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen2_5_1_5b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen2_5_7b)).ok);
static_assert(octo::validate(m::decoder_step(m::stories260k, {.argmax = true})).ok);

static_assert(octo::validate(m::prefill(m::qwen2_5_0_5b, 32)).ok);
