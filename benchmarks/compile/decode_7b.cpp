// Compile-time benchmark: the full Qwen2.5-7B decode step (or -DOCTO_MODEL=another built-in config) built,
// lowered (pages included) and validated inside one static_assert.
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

#ifndef OCTO_MODEL
#define OCTO_MODEL qwen2_5_7b
#endif

static_assert(octo::validate(octo::models::decoder_step(octo::models::OCTO_MODEL)).ok);
