// The one header users include: the IR, the typed graph DSL, the models, the VMs, model files, streaming
// and the runtime engine. Every public header under octo/ is reachable from here but two kinds: the
// per-opcode reference semantics (octo/semantics/, what the reference VM runs; include one to call it)
// and the details only the compiled core uses (octo/detail/ quant blocks, element conversion, buddy
// allocator).
#pragma once

#include "octo/error.hpp"
#include "octo/version.hpp"

#include "octo/ir/enums.hpp"
#include "octo/ir/gpu_target.hpp"
#include "octo/ir/op_registry.hpp"
#include "octo/ir/param_fields.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"
#include "octo/ir/dependency_graph.hpp"
#include "octo/ir/json.hpp"
#include "octo/ir/page_allocator.hpp"
#include "octo/ir/simulate.hpp"
#include "octo/ir/sm_assignment.hpp"
#include "octo/ir/static_check.hpp"
#include "octo/ir/validate.hpp"
#include "octo/ir/version.hpp"

#include "octo/graph/freeze.hpp"
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

#include "octo/vm/reference_vm.hpp"
#include "octo/vm/vulkan_vm.hpp"

#include "octo/model_file/gguf.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/model_file/chat_template.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/model_file/safetensors.hpp"
#include "octo/model_file/hf_to_gguf.hpp"
#include "octo/stream/decompose.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"
#include "octo/stream/prefetcher.hpp"
#include "octo/stream/ram_tier.hpp"

#include "octo/runtime/engine.hpp"
#include "octo/runtime/decomposed.hpp"
#include "octo/runtime/model_source.hpp"
#include "octo/runtime/npy.hpp"
#include "octo/runtime/residency_plan.hpp"
#include "octo/runtime/sampler.hpp"
