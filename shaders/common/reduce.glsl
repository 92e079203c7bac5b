// Workgroup-wide sum / max. With OCTO_SUBGROUP defined (the variant for devices with subgroup
// arithmetic) each subgroup reduces in registers and one value per subgroup goes through shared
// memory; otherwise a shared-memory tree (the workgroup size must be a power of two).
// Every invocation of the workgroup must call these (they contain barriers); all get the result.
#ifndef OCTO_REDUCE_GLSL
#define OCTO_REDUCE_GLSL

#ifdef OCTO_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float octo_red[gl_WorkGroupSize.x];

float wg_sum(float v) {
#ifdef OCTO_SUBGROUP
  v = subgroupAdd(v);
  if (subgroupElect()) octo_red[gl_SubgroupID] = v;
  barrier();
  float t = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) t += octo_red[i];
  barrier();
  return t;
#else
  uint tid = gl_LocalInvocationID.x;
  octo_red[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (tid < s) octo_red[tid] += octo_red[tid + s];
    barrier();
  }
  float t = octo_red[0];
  barrier();
  return t;
#endif
}

float wg_max(float v) {
#ifdef OCTO_SUBGROUP
  v = subgroupMax(v);
  if (subgroupElect()) octo_red[gl_SubgroupID] = v;
  barrier();
  float t = uintBitsToFloat(0xff800000u);
  for (uint i = 0u; i < gl_NumSubgroups; ++i) t = max(t, octo_red[i]);
  barrier();
  return t;
#else
  uint tid = gl_LocalInvocationID.x;
  octo_red[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (tid < s) octo_red[tid] = max(octo_red[tid], octo_red[tid + s]);
    barrier();
  }
  float t = octo_red[0];
  barrier();
  return t;
#endif
}

#endif
