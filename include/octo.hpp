// The one header users include: the IR, the typed graph DSL, the models and the VMs.
// Everything else under octo/ is reachable from here.
#pragma once

#include "octo/error.hpp"
#include "octo/version.hpp"

#include "octo/ir/enums.hpp"
#include "octo/ir/gpu_target.hpp"
#include "octo/ir/op_registry.hpp"
#include "octo/ir/param_fields.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"
#include "octo/ir/version.hpp"
