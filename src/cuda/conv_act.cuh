/*
 * The activations of the fused epilogues (versions 6 to 10), on n values at once: one uniform branch on the
 * activation for all of them. Switching on it for each value cost about a dozen instructions an output in the
 * tensor-core kernel (2017 layer, ncu, 2026-11-22) and made the direct kernel's code several times larger.
 * tanhf and expf as the CPU reference uses them, so that exact-fp32 versions stay exact; FAST (the reduced-precision
 * tensor-core versions 7, 9 and 10 only) takes tanh from the multi-function unit instead (tanh.approx.f32, sm_75
 * and up: one MUFU.TANH for tanhf's ~17 instructions). Its relative error, at most 1.09e-5 (2^-16.5) over 15,360
 * values from 1e-4 to 9 on an H100 (tests/gpu/test_conv_tc.c, which holds it to 2^-15), is 40 times below fp16's
 * and tf32's rounding of the weights (2^-11).
 */
#ifndef NC_CONV_ACT_CUH
#define NC_CONV_ACT_CUH

#include "core/model.h"

__device__ __forceinline__ float nc_tanh_approx(float v) {
    float r;
    asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

template <bool FAST = false, int N> __device__ __forceinline__ void nc_act_n(int act, float (&v)[N]) {
    if (act == NC_TANH) {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = FAST ? nc_tanh_approx(v[i]) : tanhf(v[i]);
    } else if (act == NC_RELU) {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
    } else if (act == NC_SIGMOID) {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = 1.0f / (1.0f + expf(-v[i]));
    }
}

#endif
