/*
 * The activations of the fused epilogues (versions 6 to 10), on n values at once: one uniform branch on the
 * activation for all of them. Switching on it for each value cost about a dozen instructions an output in the
 * tensor-core kernel (2017 layer, ncu, 2026-11-22) and made the direct kernel's code several times larger.
 * The exact versions take tanh from nc_tanhf (below; the unfused tanh layer too, src/cuda/layers.cu) and the sigmoid
 * from expf, so that they stay exact; NC_TANH_APPROX (the reduced-precision tensor-core versions 7, 9 and 10 only)
 * takes tanh from the multi-function unit instead (tanh.approx.f32, sm_75 and up: one MUFU.TANH for nc_tanhf's 13
 * or 16 instructions). Its relative error, at most 1.09e-5 (2^-16.5) over 15,360 values from 1e-4 to 9 on an H100
 * (tests/gpu/test_conv_tc.c, which holds it to 2^-15), is 40 times below fp16's and tf32's rounding of the weights
 * (2^-11).
 */
#ifndef NC_CONV_ACT_CUH
#define NC_CONV_ACT_CUH

#include "core/model.h"

__device__ __forceinline__ float nc_tanh_approx(float v) {
    float r;
    asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

/* Which tanh an epilogue takes (nc_act_n's first argument):
 * - NC_TANH_EXACT: nc_tanhf below, its exponential by exp2f;
 * - NC_TANH_EXACT_EX2: nc_tanhf with the same bits at every float (test_gpu_layers asserts it at all 2^32), its
 *   exponential by inline ex2.approx.ftz: 13 instructions on sm_90 to 16, exp2f's fix-up for tiny results (a compare,
 *   two predicated multiplies) gone, as the argument is never negative. Versions 15 (conv_wino.cu) and 8 (conv_tc.cu)
 *   take it: their first layers fused with tanh ran 1-3% faster with it than with NC_TANH_EXACT, every other row the
 *   same within 1% (session 72, bench/results/gpu-2026-11-29-s72-ab.log). Version 14's kernels (conv_direct.cu) do
 *   not: with it nvcc gave them about 140 registers where they have 110-127, one block an SM where they have two, and
 *   they ran 10-32% slower (session 71, bench/results/gpu-2026-11-29-s71-ab.log);
 * - NC_TANH_APPROX: the multi-function unit's tanh.approx.f32 (sm_75 and up: one MUFU.TANH), for the reduced-precision
 *   tensor-core versions 7, 9 and 10 only. */
enum nc_tanh_form { NC_TANH_EXACT, NC_TANH_EXACT_EX2, NC_TANH_APPROX };

/* tanh x within 2 ulp at every float, as CUDA's tanhf (whose documented bound it is; tanhf took the exact versions'
 * tanh until session 71), and, unlike tanhf, never decreasing. For |x| > 0.6, 1 - 2 / (e^(2|x|) + 1) with x's sign,
 * e^(2|x|) = 2^(2 log2(e) |x|) and the reciprocal from the multi-function unit; past |x| = 44.4 e is inf and the result
 * 1, exactly. tanhf's test for saturation (a compare and a select on every value) is left out: it changes no float's
 * result. For |x| <= 0.6, x + x^3 p(x^2), p's coefficients fitted by bench/ab/tanh_fit.py (at most 1.75 ulp in an fp32
 * simulation of these operations); fma(p, s, 0) rather than p * s keeps tanh(-0) = -0. Both are computed, one
 * selected. The branches meet between 0.6 and the next float; tanhf's meet below 0.6, where it decreases by a float's
 * step. EX2: the exponential by inline ex2.approx.ftz rather than exp2f (nc_tanh_form). 16 instructions on sm_90
 * (13 with EX2) to tanhf's 15 (cuobjdump). tests/gpu/test_gpu_layers.c runs both at all 2^32 floats against a double
 * tanh (nc_cuda_tanh_sweep): at most NC_TANHF_MAX_ULP (src/cuda/cuda_layers.h), in [-1, 1], odd bit for bit, never
 * decreasing (max pooling is taken before it), and the two the same bits. */
template <bool EX2 = false> __device__ __forceinline__ float nc_tanhf(float x) {
    const float a = fabsf(x), s = x * x, t = a * 2.88539004f; /* 2 log2(e), rounded */
    float e, r;
    if (EX2)
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t));
    else
        e = exp2f(t);
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(e + 1.0f));
    const float big = copysignf(fmaf(r, -2.0f, 1.0f), x);
    float p = fmaf(0.0156825148f, s, -0.0522585511f);
    p = fmaf(p, s, 0.133141249f);
    p = fmaf(p, s, -0.333326727f);
    const float small = fmaf(fmaf(p, s, 0.0f), x, x);
    return a > 0.6f ? big : small;
}

template <nc_tanh_form TANH = NC_TANH_EXACT, int N> __device__ __forceinline__ void nc_act_n(int act, float (&v)[N]) {
    if (act == NC_TANH) {
#pragma unroll
        for (int i = 0; i < N; i++)
            v[i] = TANH == NC_TANH_APPROX ? nc_tanh_approx(v[i]) : nc_tanhf<TANH == NC_TANH_EXACT_EX2>(v[i]);
    } else if (act == NC_RELU) {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
    } else if (act == NC_SIGMOID) {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = 1.0f / (1.0f + expf(-v[i]));
    }
}

#endif
