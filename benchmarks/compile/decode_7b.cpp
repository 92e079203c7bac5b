// Compile-time benchmark: the full Qwen2.5-7B decode step built, lowered (pages included) and validated
// inside one static_assert.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

static_assert(octo::validate(octo::models::decoder_step(octo::models::qwen2_5_7b)).ok);
