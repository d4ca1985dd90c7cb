/*
 * Two or four floats to global memory as one 8- or 16-byte store (y 8- or 16-byte aligned), for the kernels' output
 * stores. Written as an assignment of a float2 or float4, nvcc 13.0 sometimes emits two or four 4-byte st.global.f32
 * instead (seen in PTX, session 59: conv_wino.cu's first-layer rows, version 13's rows of four in conv_direct.cu,
 * conv_tc.cu's conv_tcc_kernel), which makes a warp's store several requests, each touching the sectors again; 2017's
 * first layer alone took 0.851 ms on floats that way, 0.341 whole (H200, B 10000). bench/ab/split_stores.py lists the
 * kernels whose PTX still has such runs. Use these only where the PTX shows the split: where nvcc already stores the
 * assignment whole, the asm only constrains its scheduling (conv_tc.cu's conv_tc_kernel moved by -5% to +7% with it,
 * so it keeps its assignment: tc_store's ST2).
 *
 * volatile so that nvcc neither drops nor merges them; no "memory" clobber, since no kernel reads back what it stores
 * through these (the values are inputs, so the order against what computes them holds). CUDA sources only.
 */
#ifndef NC_ST_GLOBAL_CUH
#define NC_ST_GLOBAL_CUH

__device__ __forceinline__ void nc_st_global2(float *y, float v0, float v1) {
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(__cvta_generic_to_global(y)), "f"(v0), "f"(v1));
}

__device__ __forceinline__ void nc_st_global4(float *y, float v0, float v1, float v2, float v3) {
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(y)), "f"(v0), "f"(v1),
                 "f"(v2), "f"(v3));
}

#endif
