/*
 * The SIMD kernels of the cpu backend, written once over a vector type and
 * compiled per instruction set: conv_cpu_avx2.c and conv_cpu_avx512.c define
 * the vector macros below (vf, VL, vf_*), SFX(name) and the target pragma, then
 * include this file. Per lane, every instruction set does the same sequence of
 * floating-point operations, so AVX2 and AVX-512 give bitwise the same results.
 *
 * Macros the includer defines: vf (vector type), VL (its float lanes),
 * vf_zero(), vf_set1(f), vf_load(p), vf_store(p, v), vf_fmadd(a, b, c) = a*b+c,
 * vf_add, vf_sub, vf_mul, vf_div, vf_max, vf_min, vf_and, vf_or, vf_xor,
 * vf_round(v) (to nearest), vf_pow2(n) (2^n for integral n in -126..127),
 * SFX(name), and TILE_LIST(X) calling X(tm, tw) for each register tile the
 * instruction set has: those whose tm*tw accumulators, tm broadcast weights
 * and one input vector fit its vector registers.
 */
#include <stddef.h>

#include "core/model.h"
#include "cpu/conv_cpu.h"

/* ------------------------------------------------------------ activations */

/* e^x for x in [-87.3, 88.3] (clamped outside): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite, two-part ln2), e^r by
 * its Taylor polynomial to degree 7 (truncation below 2e-8 relative), times 2^n. Within 2 ulp of expf. */
static inline vf SFX(vexp)(vf x) {
    x = vf_min(vf_max(x, vf_set1(-87.3f)), vf_set1(88.3f));
    const vf n = vf_round(vf_mul(x, vf_set1(1.44269504088896341f)));
    vf r = vf_fmadd(n, vf_set1(-0.693145751953125f), x);
    r = vf_fmadd(n, vf_set1(-1.428606765330187e-06f), r);
    vf p = vf_set1(1.0f / 5040.0f);
    p = vf_fmadd(p, r, vf_set1(1.0f / 720.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f / 120.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f / 24.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f / 6.0f));
    p = vf_fmadd(p, r, vf_set1(0.5f));
    p = vf_fmadd(p, r, vf_set1(1.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f));
    return vf_mul(p, vf_pow2(n));
}

/* tanh x = sign(x) (1 - t) / (1 + t) with t = e^(-2|x|): absolute error below 3e-7 everywhere (relative error grows
 * for |x| < 1e-2, where 1 - t cancels; the networks only ever add tanh outputs, so the absolute error is what
 * matters). */
static inline vf SFX(vtanh)(vf x) {
    const vf sign = vf_set1(-0.0f);
    const vf a = vf_xor(x, vf_and(x, sign)); /* |x| */
    const vf t = SFX(vexp)(vf_mul(a, vf_set1(-2.0f)));
    const vf one = vf_set1(1.0f);
    const vf y = vf_div(vf_sub(one, t), vf_add(one, t));
    return vf_or(y, vf_and(x, sign));
}

static inline vf SFX(vact)(int kind, vf x) {
    switch (kind) {
    case NC_TANH: return SFX(vtanh)(x);
    case NC_RELU: return vf_max(x, vf_zero());
    case NC_SIGMOID: return vf_div(vf_set1(1.0f), vf_add(vf_set1(1.0f), SFX(vexp)(vf_sub(vf_zero(), x))));
    default: return x;
    }
}

void SFX(nc_act)(int kind, float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i += VL) vf_store(y + i, SFX(vact)(kind, vf_load(x + i)));
}

/* ------------------------------------------------------- register tiles */

/* A tile computes out (tw, tm, VL) = sum over the taps of x(tap, column j) * w(tap, t): TM*TW accumulators in
 * registers. x points at (row h, column w0) of channel 0 of the (C, H, W, VL) input; kp at the tile's packed weights
 * (C*K*K, TM). The direct family walks the taps as nested loops (cs: channel stride, rs: row stride, in floats); the
 * implicit-GEMM family as one flat loop over the tap offsets. */
typedef void (*SFX(tile_direct_fn))(const float *x, size_t cs, size_t rs, const float *kp, int C, int K, float *out);
typedef void (*SFX(tile_igemm_fn))(const float *x, const int *taps, int T, const float *kp, float *out);

#define TILE_BODY_(TM, TW, XPTR)                                                                                       \
    {                                                                                                                  \
        vf w_[TM];                                                                                                     \
        _Pragma("GCC unroll 8") for (int t_ = 0; t_ < TM; t_++) w_[t_] = vf_set1(kp[t_]);                              \
        _Pragma("GCC unroll 12") for (int j_ = 0; j_ < TW; j_++) {                                                     \
            const vf xv_ = vf_load((XPTR) + (size_t)j_ * VL);                                                          \
            _Pragma("GCC unroll 8") for (int t_ = 0; t_ < TM; t_++) acc[j_][t_] = vf_fmadd(xv_, w_[t_], acc[j_][t_]);  \
        }                                                                                                              \
        kp += TM;                                                                                                      \
    }

#define TILE_ZERO_STORE_(TM, TW, WHAT)                                                                                 \
    vf acc[TW][TM];                                                                                                    \
    _Pragma("GCC unroll 12") for (int j_ = 0; j_ < TW; j_++) _Pragma("GCC unroll 8") for (int t_ = 0; t_ < TM; t_++)   \
        acc[j_][t_] = vf_zero();                                                                                       \
    WHAT;                                                                                                              \
    _Pragma("GCC unroll 12") for (int j_ = 0; j_ < TW; j_++) _Pragma("GCC unroll 8") for (int t_ = 0; t_ < TM; t_++)   \
        vf_store(out + (size_t)(j_ * TM + t_) * VL, acc[j_][t_]);

#define DEFINE_TILES_(TM, TW)                                                                                          \
    static void SFX(tile_direct_##TM##x##TW)(const float *x, size_t cs, size_t rs, const float *kp, int C, int K,      \
                                             float *out) {                                                             \
        TILE_ZERO_STORE_(                                                                                              \
            TM, TW, for (int c = 0; c < C; c++) for (int p = 0; p < K; p++) {                                          \
                const float *xr = x + (size_t)c * cs + (size_t)p * rs;                                                 \
                for (int q = 0; q < K; q++) TILE_BODY_(TM, TW, xr + (size_t)q * VL)                                    \
            })                                                                                                         \
    }                                                                                                                  \
    static void SFX(tile_igemm_##TM##x##TW)(const float *x, const int *taps, int T, const float *kp, float *out) {     \
        TILE_ZERO_STORE_(TM, TW, for (int i = 0; i < T; i++) TILE_BODY_(TM, TW, x + taps[i]))                          \
    }

TILE_LIST(DEFINE_TILES_)

/* The variants by [tm][tw] (tm up to 8, tw up to 12); NULL where the instruction set has none. */
#define DIRECT_ENTRY_(TM, TW) [TM][TW] = SFX(tile_direct_##TM##x##TW),
#define IGEMM_ENTRY_(TM, TW) [TM][TW] = SFX(tile_igemm_##TM##x##TW),
static const SFX(tile_direct_fn) SFX(direct_tiles)[9][13] = {TILE_LIST(DIRECT_ENTRY_)};
static const SFX(tile_igemm_fn) SFX(igemm_tiles)[9][13] = {TILE_LIST(IGEMM_ENTRY_)};

int SFX(nc_conv_tile_ok)(int tm, int tw) {
    return tm >= 1 && tm <= 8 && tw >= 1 && tw <= 12 && SFX(direct_tiles)[tm][tw] != NULL;
}

/* ------------------------------------------------------------ the layer */

/* Pools (or passes through) the band of conv rows into one output row of tm channels, adding the bias and applying
 * the activation. band is (P, Wn, tm, VL); y is (M, Hp, Wp, VL). Max pooling takes the maximum before the bias and
 * the activation, which are monotone, so it evaluates the activation once per output instead of P*P times. ACT and
 * POOL are constants in each specialisation below (POOL2: max pooling 2/2 unrolled), so the loop has no branches. */
enum { POOL_NONE, POOL_MAX, POOL_MAX2, POOL_AVG };

static inline __attribute__((always_inline)) void SFX(epilogue_impl)(const nc_conv_desc *d, float *y, const float *band,
                                                                     int m0, int hp, const int ACT, const int POOL) {
    const int tm = d->tm, P = d->P, S = d->S, Wn = d->Wn;
    const size_t col = (size_t)tm * VL, row = (size_t)Wn * col; /* band strides of a column and a row */
    for (int t = 0; t < tm; t++) {
        const int m = m0 + t;
        const vf b = vf_set1(d->bias ? d->bias[m] : 0.0f);
        float *yr = y + ((size_t)m * d->Hp + hp) * d->Wp * VL; /* (Wp, VL) */
        const float *bt = band + (size_t)t * VL;
        for (int wp = 0; wp < d->Wp; wp++) {
            const float *bw = bt + (size_t)wp * S * col; /* the window's top-left */
            vf v;
            if (POOL == POOL_AVG) {
                v = vf_zero();
                for (int r = 0; r < P; r++)
                    for (int j = 0; j < P; j++)
                        v = vf_add(v, SFX(vact)(ACT, vf_add(vf_load(bw + r * row + j * col), b)));
                v = vf_div(v, vf_set1((float)(P * P)));
            } else {
                if (POOL == POOL_MAX2) {
                    v = vf_max(vf_max(vf_load(bw), vf_load(bw + col)),
                               vf_max(vf_load(bw + row), vf_load(bw + row + col)));
                } else {
                    v = vf_load(bw);
                    if (POOL == POOL_MAX)
                        for (int r = 0; r < P; r++)
                            for (int j = 0; j < P; j++) v = vf_max(v, vf_load(bw + r * row + j * col));
                }
                v = SFX(vact)(ACT, vf_add(v, b));
            }
            vf_store(yr + (size_t)wp * VL, v);
        }
    }
}

#define EPILOGUE_FOR_ACT_(POOL)                                                                                        \
    switch (d->act) {                                                                                                  \
    case NC_TANH: SFX(epilogue_impl)(d, y, band, m0, hp, NC_TANH, POOL); return;                                       \
    case NC_RELU: SFX(epilogue_impl)(d, y, band, m0, hp, NC_RELU, POOL); return;                                       \
    case NC_SIGMOID: SFX(epilogue_impl)(d, y, band, m0, hp, NC_SIGMOID, POOL); return;                                 \
    default: SFX(epilogue_impl)(d, y, band, m0, hp, -1, POOL); return;                                                 \
    }

/* Without a bias, adding 0 leaves every value as it was (-0 + 0 aside, which the activations and the max treat
 * alike), so one code path serves both. */
static void SFX(epilogue)(const nc_conv_desc *d, float *y, const float *band, int m0, int hp) {
    if (d->pool == NC_AVGPOOL) EPILOGUE_FOR_ACT_(POOL_AVG)
    if (d->pool == NC_MAXPOOL && d->P == 2) EPILOGUE_FOR_ACT_(POOL_MAX2)
    if (d->pool == NC_MAXPOOL) EPILOGUE_FOR_ACT_(POOL_MAX)
    EPILOGUE_FOR_ACT_(POOL_NONE)
}

void SFX(nc_conv_group)(const nc_conv_desc *d, float *y, const float *x, float *band) {
    const int tm = d->tm, tw = d->tw, Wn = d->Wn, T = d->C * d->K * d->K;
    const size_t rs = (size_t)d->W * VL, cs = (size_t)d->H * rs;
    const SFX(tile_direct_fn) direct = SFX(direct_tiles)[tm][tw];
    const SFX(tile_igemm_fn) igemm = SFX(igemm_tiles)[tm][tw];
    const int mtiles = (d->M + tm - 1) / tm;
    /* Output rows outermost: the input rows of one output row stay in L1 while every channel tile uses them. */
    for (int hp = 0; hp < d->Hp; hp++) {
        for (int mt = 0; mt < mtiles; mt++) {
            /* The last tile is moved back to end at M (recomputing a few channels) rather than running a narrower
             * one; likewise the last column tile. */
            const int m0 = mt * tm + tm <= d->M ? mt * tm : d->M - tm;
            const float *kp = d->kp + (size_t)mt * T * tm;
            for (int r = 0; r < d->P; r++) {
                const float *xr = x + (size_t)(hp * d->S + r) * rs;
                for (int w0 = 0; w0 < Wn; w0 += tw) {
                    const int w = w0 + tw <= Wn ? w0 : Wn - tw;
                    float *out = band + ((size_t)r * Wn + w) * tm * VL;
                    if (d->family == NC_CONV_IGEMM)
                        igemm(xr + (size_t)w * VL, d->taps, T, kp, out);
                    else
                        direct(xr + (size_t)w * VL, cs, rs, kp, d->C, d->K, out);
                }
            }
            SFX(epilogue)(d, y, band, m0, hp);
        }
    }
}

/* --------------------------------------------------------- FMA peak loop */

/* 12 independent accumulator chains hide the FMA latency (4 cycles) on two FMA pipes, with registers to spare. */
double SFX(nc_fma_loop)(long calls) {
    vf a[12];
    for (int i = 0; i < 12; i++) a[i] = vf_set1((float)i);
    const vf m = vf_set1(0.999999f), c = vf_set1(1e-7f);
    for (long n = 0; n < calls; n++) {
        for (int k = 0; k < 64; k++) {
            _Pragma("GCC unroll 12") for (int i = 0; i < 12; i++) a[i] = vf_fmadd(a[i], m, c);
        }
    }
    vf s = a[0];
    for (int i = 1; i < 12; i++) s = vf_add(s, a[i]);
    float out[VL];
    vf_store(out, s);
    volatile float sink = out[0];
    (void)sink;
    return 64.0 * 12.0 * VL;
}
