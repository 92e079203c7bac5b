# The shader matrix (read by src/vulkan/CMakeLists.txt): one GEMV/GEMM module per weight dtype, each
# with a subgroup-arithmetic variant and a shared-memory fallback ("_nosg").
foreach(dt f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k)
  octo_shader_variant(gemv_${dt} gemv.comp DEFINES WUNIT=wunit_${dt} WELEM=welem_${dt} OCTO_SUBGROUP)
  octo_shader_variant(gemv_${dt}_nosg gemv.comp DEFINES WUNIT=wunit_${dt} WELEM=welem_${dt})
endforeach()
# Attention reduces twice per chunk of keys: subgroup arithmetic where the device has it.
octo_shader_variant(attention attention.comp DEFINES OCTO_SUBGROUP)
octo_shader_variant(attention_nosg attention.comp)
# Tiled GEMM for many rows (prefill), one per weight dtype.
foreach(dt f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k)
  octo_shader_variant(gemm_${dt} gemm.comp DEFINES WUNIT=wunit_${dt})
endforeach()
