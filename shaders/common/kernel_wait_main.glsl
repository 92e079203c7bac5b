// The entry point of a kernel that may be built with in-kernel waits (common/kernel_wait.glsl): included
// at the end of the kernel's source, after its `void kernel_main()`; `pc` is its push-constant block,
// which has the globals record's address (`globals`) and ends with OCTO_KW_PUSH. A kernel may define OCTO_KW_PREFETCH (a function name) to load what does
// not depend on the kernels it waits on (its weights) before the wait.
#ifdef OCTO_KERNEL_WAITS
kw_words kw_state() {
  globals_buf g = globals_buf(pc.globals);
  return kw_words(uvec2(g.kw_state_lo, g.kw_state_hi));
}

void kw_wait() {
  uint word = pc.kw_a & 0xffffu, count = pc.kw_b & 0xffffu;
  if (count == 0u) return;  // the first group after a barrier
  if (gl_LocalInvocationIndex == 0u) {
    kw_words s = kw_state();
    // Rounds of polls: no loop runs more than KW_POLLS times (lavapipe ends any loop after 65535
    // iterations, so a single loop's own bound would never be reached there).
    bool done = s.d[word] >= count;
    for (uint r = 0u; r < KW_ROUNDS && !done; ++r) {
      for (uint n = 0u; n < KW_POLLS && !done; ++n) done = s.d[word] >= count || s.d[0] != 0u;
    }
    if (!done) {  // given up
      atomicMax(s.d[0], 1u);
      u32_buf(uvec2(s.d[1], s.d[2])).d[0] = 1u;
    }
    memoryBarrierBuffer();
  }
  barrier();
  memoryBarrierBuffer();  // acquire: the awaited kernels' writes, not stale cached lines
}

void kw_signal() {
  memoryBarrierBuffer();  // release: this invocation's writes before the workgroup's count
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    kw_words s = kw_state();
    uint total = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
    if (atomicAdd(s.d[pc.kw_b >> 16], 1u) + 1u == total) {
      memoryBarrierBuffer();
      atomicAdd(s.d[pc.kw_a >> 16], 1u);
    }
  }
}
#endif

void main() {
#ifdef OCTO_KERNEL_WAITS
#ifdef OCTO_KW_PREFETCH
  OCTO_KW_PREFETCH();
#endif
  kw_wait();
  // Never true (no state has 2^16 - 1 words, so no launch waits on that word); it keeps the prefetch's loads.
  if (kw_sink == 0x9e3779b9u && pc.kw_a == 0xffffffffu) kw_state().d[0] = 2u;
#endif
  kernel_main();
#ifdef OCTO_KERNEL_WAITS
  kw_signal();
#endif
}
