// Compiling is the test: the Qwen3 graphs that need more constexpr operations than g++'s default: the
// unfused decode steps (Qwen3-8B's ~48M against 33.5M; the fused one fits the default, see
// models_validate.cpp) and a prefill. tests/CMakeLists.txt raises -fconstexpr-ops-limit for this file only.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

namespace m = octo::models;

constexpr octo::ir::schedule_config unfused{};
static_assert(octo::validate(m::decoder_step(m::qwen3_0_6b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen3_8b, {.schedule = &unfused})).ok);
static_assert(octo::validate(m::prefill(m::qwen3_0_6b, 32)).ok);
