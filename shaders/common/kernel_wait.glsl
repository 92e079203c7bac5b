// In-kernel waits (docs/vulkan.md "In-kernel waits"): the `_kw` variant of a kernel (built with
// OCTO_KERNEL_WAITS) is recorded without a pipeline barrier before it. Its workgroups may start while the
// kernels it depends on still run; each waits in the kernel until they are done, and says when it is done
// itself. A decode step is a chain of short dependent kernels: with barriers, each one drains the GPU and
// the next ramps up again; with waits, the next kernel's workgroups are already resident and have their
// weights in flight when the data they need arrives.
//
// The state words (32-bit, one buffer per VM, its address in the globals record: kw_state_lo / _hi; the
// VM zeroes a program's words at the start of each of its runs):
//   word 0: the error word, set when a wait gave up; words 1-2: the address of a host-visible word the
//   wait that gives up sets too (the VM reports it: no hang);
//   a "done" word per group of kernels that a barrier would have separated: how many of its tasks have
//   finished (a task's last workgroup to finish adds one; of a task's alternative launches exactly one
//   runs);
//   a "slot" word per launch: how many of its workgroups have finished.
// A kernel waits on the done word of the group before its own, so a group starts its real work only after
// the whole group before it finished (and, by induction, every earlier group): a barrier's semantics.
// The host packs the words' indices and the count to reach into the last 8 bytes of the 128 every device
// has for push constants (kw_a: wait word | done word << 16, kw_b: count | slot word << 16); the kernel's
// own push constants end at most at offset 120 and include the globals record's address.
//
// Forward progress: Vulkan does not promise that a waiting workgroup lets the kernels it waits on run.
// The waits rely on the device launching dispatches in order (the kernels waited on are all resident or
// done by the time a later kernel's workgroups run); a wait gives up after a bound of polls, sets the
// error word and every later wait then gives up at once (a wait also stops polling when the error word is set), so a device that breaks the assumption gets an
// error from the VM, not a hang.
#ifndef OCTO_KERNEL_WAIT_GLSL
#define OCTO_KERNEL_WAIT_GLSL

#ifdef OCTO_KERNEL_WAITS
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer kw_words { uint d[]; };
// The fields a kernel's push-constant block ends with (the VM writes them at offset 232).
#define OCTO_KW_PUSH \
  layout(offset = 120) uint kw_a; \
  uint kw_b;
// A wait gives up after KW_ROUNDS x KW_POLLS polls of its word (about a second on an H100, far longer
// than any kernel of a decode step runs).
const uint KW_ROUNDS = 256u, KW_POLLS = 4096u;
// A prefetch's loaded words are folded here and tested after the wait, so the loads are not dropped.
uint kw_sink = 0u;
#else
#define OCTO_KW_PUSH
#endif

#endif
