// Compiling is the test: the Qwen3 graphs (decode steps and a prefill) proven valid inside static_assert.
// They need more constexpr operations than g++'s default (Qwen3-8B's step ~48M against 33.5M, see
// docs/compile-time.md), so tests/CMakeLists.txt raises -fconstexpr-ops-limit for this file only.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

namespace m = octo::models;

static_assert(octo::validate(m::decoder_step(m::qwen3_0_6b)).ok);
static_assert(octo::validate(m::decoder_step(m::qwen3_8b)).ok);
static_assert(octo::validate(m::prefill(m::qwen3_0_6b, 32)).ok);
