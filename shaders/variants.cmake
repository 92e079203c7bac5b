# The shader matrix (read by src/vulkan/CMakeLists.txt): one GEMV/GEMM module per weight dtype, each
# with a subgroup-arithmetic variant and a shared-memory fallback ("_nosg").
# The block formats with their own chunk loop (shaders/common/gemv_chunks.glsl) get GEMV_BLOCK = their
# IR dtype code.
set(octo_gemv_block_q8_0 10)
set(octo_gemv_block_q4_0 11)
set(octo_gemv_block_q4_1 12)
set(octo_gemv_block_q5_0 13)
set(octo_gemv_block_q5_1 14)
set(octo_gemv_block_q2_k 15)
set(octo_gemv_block_q3_k 16)
set(octo_gemv_block_q4_k 17)
set(octo_gemv_block_q5_k 18)
set(octo_gemv_block_q6_k 19)
set(octo_gemv_block_iq4_nl 20)
set(octo_gemv_block_iq4_xs 21)
foreach(dt f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs)
  set(gemv_defs WUNIT=wunit_${dt} WELEM=welem_${dt})
  if(DEFINED octo_gemv_block_${dt})
    list(APPEND gemv_defs GEMV_BLOCK=${octo_gemv_block_${dt}})
  endif()
  octo_shader_variant(gemv_${dt} gemv.comp DEFINES ${gemv_defs} OCTO_SUBGROUP)
  octo_shader_variant(gemv_${dt}_nosg gemv.comp DEFINES ${gemv_defs})
  # RMSNORM_GEMV_QKV's one launch over the q, k and v grids (GEMV_QKV: its own push block; subgroup
  # reduction only, elsewhere the three projections run as three launches: kernels/gemv.cpp plan_qkv).
  octo_shader_variant(gemv_${dt}_qkv gemv.comp DEFINES ${gemv_defs} OCTO_SUBGROUP GEMV_QKV)
endforeach()
# Decode GEMVs on packed 8-bit integer dot products (GEMV_IDOT; the `fast` precision, where the device
# accelerates them): the formats with an integer chunk loop (shaders/common/gemv_idot.glsl), subgroup
# reduction only.
foreach(dt q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k)
  octo_shader_variant(gemv_idot_${dt} gemv.comp
                      DEFINES WUNIT=wunit_${dt} WELEM=welem_${dt} GEMV_BLOCK=${octo_gemv_block_${dt}} OCTO_SUBGROUP GEMV_IDOT)
  octo_shader_variant(gemv_idot_${dt}_qkv gemv.comp
                      DEFINES WUNIT=wunit_${dt} WELEM=welem_${dt} GEMV_BLOCK=${octo_gemv_block_${dt}} OCTO_SUBGROUP GEMV_IDOT
                              GEMV_QKV)
endforeach()
# x rounded once into int8 runs ahead of those GEMVs (OCTO_GEMV_X8; kernels/gemv.cpp, its `before` launch).
octo_shader_variant(gemv_quantize_x gemv_quantize_x.comp)
# Attention: each subgroup takes a share of the keys (subgroup max/sum); _nosg runs the workgroup as one group.
octo_shader_variant(attention attention.comp DEFINES OCTO_SUBGROUP)
octo_shader_variant(attention_nosg attention.comp)
# Decode attention: flash-decoding over (KV head, chunk of keys), chunks merged in the same dispatch.
octo_shader_variant(attention_decode attention_decode.comp)
# Prefill attention: a block of query rows per workgroup shares each K/V tile (no subgroup operations).
octo_shader_variant(attention_rows attention_rows.comp)
# Prefill attention on tensor cores (NV cooperative matrices, 16-bit caches, the `fast` precision).
octo_shader_variant(attention_coop attention_coop.comp)
# Tiled GEMM for many rows (prefill), one per weight dtype.
foreach(dt f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs)
  octo_shader_variant(gemm_${dt} gemm.comp DEFINES WUNIT=wunit_${dt})
endforeach()
# Register-blocked SIMT GEMM (prefill) and the cooperative-matrix one (tensor cores on NVIDIA; _coopf:
# plain f16 factors, _coop: f16 high + low parts), per weight dtype; weights_f16_<dt>: a quantized weight
# tile dequantized once to f16 for gemm_coopf_f16 (prefill sizes).
# No cooperative-matrix module for F32 weights: the planner keeps those on gemm_reg / gemm (can_coop in
# src/vulkan/kernels/gemm.cpp), and unit_vk_kernel_plans fails on a module no task reaches.
# rows_f16_f32: x's rows rounded once to f16 for the GEMMs' X16 mode (weights_f16.comp over f32 rows).
octo_shader_variant(rows_f16_f32 weights_f16.comp DEFINES WUNIT=wunit_f32)
foreach(dt f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs)
  octo_shader_variant(gemm_reg_${dt} gemm_reg.comp DEFINES WUNIT=wunit_${dt})
  if(NOT dt STREQUAL "f32")
    octo_shader_variant(gemm_coop_${dt} gemm_coop.comp DEFINES WUNIT=wunit_${dt} OCTO_COOP_SPLIT)
    if(dt STREQUAL "f16")
      octo_shader_variant(gemm_coopf_${dt} gemm_coop.comp DEFINES WUNIT=wunit_${dt} W_RAW)
      # The K split over workgroups (small grids over long rows), on f16 weight rows only.
      octo_shader_variant(gemm_coopf_${dt}_ksplit gemm_coop.comp DEFINES WUNIT=wunit_${dt} W_RAW OCTO_COOP_KSPLIT)
    elseif(dt STREQUAL "q8_0")
      octo_shader_variant(gemm_coopf_${dt} gemm_coop.comp DEFINES WUNIT=wunit_${dt} W16_Q8_0)
      octo_shader_variant(weights_f16_${dt} weights_f16.comp DEFINES WUNIT=wunit_${dt} W16_Q8_0)
    else()
      octo_shader_variant(gemm_coopf_${dt} gemm_coop.comp DEFINES WUNIT=wunit_${dt})
      octo_shader_variant(weights_f16_${dt} weights_f16.comp DEFINES WUNIT=wunit_${dt})
    endif()
  endif()
endforeach()
# RMSNORM / LAYERNORM, and the RMSNORM of a fused GEMM over many rows written as f16 rows (norm_f16).
octo_shader_variant(norm norm.comp)
octo_shader_variant(norm_f16 norm.comp DEFINES NORM_F16)
