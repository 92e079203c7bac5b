#version 450
// The greedy token loop's step tail (vulkan_vm::enable_token_loop), run after each loop step of a decode
// program: the step's argmax becomes the next step's input token, the position advances by one (the
// program's "pos" input, which RoPE reads, and globals.pos, which the KV append and attention add), and
// the token goes into the ring slot of the position it was computed at, for the host to read behind.
// One invocation: four words.
#include "common/octo.glsl"
layout(local_size_x = 1) in;

layout(push_constant) uniform params {
  uvec2 next_token, tokens, pos, globals, ring;
  uint ring_slots;
} pc;

void main() {
  globals_buf g = globals_buf(pc.globals);
  uint p = g.pos;
  int t = i32_buf(pc.next_token).d[0];
  i32_buf(pc.tokens).d[0] = t;
  i32_buf(pc.pos).d[0] = int(p + 1u);
  i32_buf(pc.ring).d[p % pc.ring_slots] = t;
  g.pos = p + 1u;
}
