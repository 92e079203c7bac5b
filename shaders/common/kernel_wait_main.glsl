// The entry point of a kernel that may be built with in-kernel waits (common/kernel_wait.glsl): included
// at the end of the kernel's source, after its `void kernel_main()`; `pc` is its push-constant block,
// which has the globals record's address (`globals`) and ends with OCTO_KW_PUSH. A kernel may define
// OCTO_KW_PREFETCH (a function name) to load what does not depend on the kernels it waits on (its
// weights) before the wait; bit 31 of kw_a turns it off.
#ifdef OCTO_KERNEL_WAITS
kw_words kw_s;  // the state words (their address is in the globals record; loaded once, first)

void kw_wait() {
  uint count = pc.kw_b;  // tasks of the group waited on; 0: none (the first group after a barrier)
  if (count == 0u) return;
  if (gl_LocalInvocationIndex == 0u) {
    uint word = KW_DONE_BASE + (pc.kw_a & 0x3fffu), target = count << KW_TASK_SHIFT;
    uint backoff = (pc.kw_a >> 28) & 3u;
    uint spins = backoff == 0u ? 0u : 16u << (2u * backoff);  // 64, 256, 1024 dependent ALU steps
    // Rounds of polls: no loop runs more than KW_POLLS times (lavapipe ends any loop after 65535
    // iterations, so a single loop's own bound would never be reached there).
    bool done = kw_s.d[word] >= target;
    float sink = float(word);
    for (uint r = 0u; r < KW_ROUNDS && !done; ++r) {
      for (uint n = 0u; n < KW_POLLS && !done; ++n) {
        for (uint i = 0u; i < spins; ++i) sink = sink * 0.999 + 1.0;
        done = kw_s.d[word] >= target;
      }
      done = done || kw_s.d[0] != 0u;  // a wait elsewhere gave up: the run is already an error, finish it
    }
    if (!done) {  // given up
      atomicMax(kw_s.d[0], 1u);
      u32_buf(uvec2(kw_s.d[1], kw_s.d[2])).d[0] = 1u;
    }
    if (sink == -1.0) kw_s.d[0] = 3u;  // never: keeps the backoff's arithmetic
    memoryBarrierBuffer();  // acquire (device scope): the awaited kernels' writes, not stale cached lines
  }
  barrier();
}

// A task adds exactly 1 << KW_TASK_SHIFT to its group's done word, whatever its workgroup count (an
// indirect dispatch's varies): every workgroup adds 1, the first also the rest. No workgroup needs an
// atomic's result, so the adds do not wait on the memory system.
void kw_signal() {
  groupMemoryBarrier();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    uint total = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
    bool first = gl_WorkGroupID.x == 0u && gl_WorkGroupID.y == 0u && gl_WorkGroupID.z == 0u;
    memoryBarrierBuffer();  // release (device scope), cumulative over the workgroup's writes
    atomicAdd(kw_s.d[KW_DONE_BASE + ((pc.kw_a >> 14) & 0x3fffu)], first ? (1u << KW_TASK_SHIFT) - (total - 1u) : 1u);
  }
}
#endif

void main() {
#ifdef OCTO_KERNEL_WAITS
  globals_buf kw_g = globals_buf(pc.globals);
  kw_s = kw_words(uvec2(kw_g.kw_state_lo, kw_g.kw_state_hi));
#ifdef OCTO_KW_PREFETCH
  if ((pc.kw_a >> 31) == 0u) OCTO_KW_PREFETCH();
#endif
  kw_wait();
#endif
  kernel_main();
#ifdef OCTO_KERNEL_WAITS
  kw_signal();
  // Never true (no launch waits for 2^32 - 1 tasks); it keeps the prefetch's loads (issued before the
  // wait, they are only waited for here, at the end).
  if (kw_sink == 0x9e3779b9u && pc.kw_b == 0xffffffffu) kw_s.d[0] = 2u;
#endif
}
