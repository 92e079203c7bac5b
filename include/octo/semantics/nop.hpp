// NOP (opcode 0): does nothing; the task still signals its counter. Lets a schedule express a pure join.
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

namespace octo::semantics {

/// NOP has no data effect.
inline void nop() {}

}  // namespace octo::semantics
