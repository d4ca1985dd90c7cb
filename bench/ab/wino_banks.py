#!/usr/bin/env python3
"""Counts the shared-memory wavefronts of version 15's 2-D kernel (src/cuda/conv_wino.cu, conv_wino_kernel) for one
item (an image's row of tiles), phase by phase, from the addresses its warps' lanes touch: a model of the kernel's
index arithmetic, to try a layout before building it. The counts conv_wino.cu's comments cite come from here.

    python3 bench/ab/wino_banks.py               (the zoo's K = 5 second layers, alone and the two fused, as laid out)
    python3 bench/ab/wino_banks.py --before      (and as before 53de28b: A's rows JN apart, V unswizzled, O unpadded)
    python3 bench/ab/wino_banks.py --no-rows     (and without the ROWS layout of 2019 spring's layer, as before
                                                  2026-11-28 21:00)

The model: a warp instruction's lanes split into groups by access size (32 lanes of 4 bytes, 16 of 8, 8 of 16);
each group costs as many wavefronts as the most distinct 4-byte words any one bank holds among its lanes'. That is
the hardware's rule for a quarter warp's 16-byte loads (bench/ab/sm_rates.cu with ncu, 2026-11-28) and an upper
bound elsewhere. ncu's totals for the whole kernel (bench/ab/run.sh NCU=1) are the measure; this says which phase
they come from. The input copies (cp.async) are left out.
"""
import argparse


def wavefronts(lanes):
    """lanes: (lane, word address, words) of one warp instruction's active lanes."""
    if not lanes:
        return 0
    group = {1: 32, 2: 16, 3: 8, 4: 8}[lanes[0][2]]
    total = 0
    for g0 in range(0, 32, group):
        banks = {}
        for lane, a, n in lanes:
            if g0 <= lane < g0 + group:
                for w in range(a, a + n):
                    banks.setdefault(w % 32, set()).add(w)
        total += max((len(s) for s in banks.values()), default=0)
    return total


def count(C, M, MG, H, W, MINB, P=1, before=False, rows_off=False):
    # P = 2: pooled 2/2 (fused), the tiles cover the outputs that pooling keeps (wino_geom), and no O
    NT, TW = 64 * MG, ((W - 4) // 2 * 2 + 3) // 4 if P == 2 else (W - 4 + 3) // 4
    Yw = W - 4
    # ROWS (wino_layout): a row of tiles' (channel, tile) pairs fit in a warp
    ROWS = C * TW <= 32 and C % 2 == 0 and not before and not rows_off
    JN, CP = 4 * TW + 4, C if ROWS else (C + 3) // 4 * 4
    XCS = 8 * JN + JN % 32 if ROWS else 8 * JN
    if CP % 4 == 0:
        VSTR = TW * CP if TW * CP % 8 == 4 else TW * CP + 4
    else:
        VSTR = TW * CP if TW * CP % 4 == 2 else TW * CP + 2
    ARS = JN if before else (JN + 3) // 4 * 4 if ROWS else JN + 2
    ASTR = 8 * ARS + (4 * TW - 8 * ARS) % 32 if ROWS else 8 * ARS + 3
    PSTR = 68
    RS = Yw if before else 4 * TW
    CS = 4 * Yw if before else 4 * (RS + ((TW - RS) % 8 + 8) % 8)
    T8 = TW <= 8 and (C * 64 + NT - 1) // NT == (C * TW * 8 + NT - 1) // NT
    TP = 8 if T8 else TW
    out = {}

    def vslot(t, c):
        return c ^ (t & 4) if CP == 8 and not before and not ROWS else c

    def phase(name, N, unit, reverse=False):
        """Units 0..N-1 a thread at a time (wino_units); unit(q) gives the thread's accesses in program order, as
        (address, words), or (key, address, words) where a branch's paths are different instructions."""
        tot = 0
        for k in range((N + NT - 1) // NT):
            for w in range(NT // 32):
                instr = {}
                for lane in range(32):
                    tid = w * 32 + lane
                    q = (NT - 1 - tid if reverse else tid) + k * NT
                    if q < N:
                        for i, acc in enumerate(unit(q)):
                            key, a, n = acc if len(acc) == 3 else (i, *acc)
                            instr.setdefault(key, []).append((lane, a, n))
                tot += sum(wavefronts(v) for v in instr.values())
        out[name] = tot

    def p1b(q):
        c = q // 8 % C if T8 else q % C
        t = q % 8 if T8 else q // C % TW
        return c, t, q // (C * TP)

    phase('1a: X loads', C * JN, lambda q: [(q // JN * XCS + r * JN + q % JN, 1) for r in range(8)], True)
    phase('1a: A stores', C * JN, lambda q: [(q // JN * ASTR + r * ARS + q % JN, 1) for r in range(8)], True)
    if ROWS:  # a warp a row of A, its lanes (c, t), t first; A read 16 bytes at a time
        def p1b(q):
            e = q % 32
            return (e // TW, e % TW, q // 32) if e < C * TW else (0, TW, 0)
        N1b = 8 * 32
    else:
        N1b = C * TP * 8

    def a_loads(q):
        c, t, r = p1b(q)
        if t >= TW:
            return []
        if ROWS:
            return [(c * ASTR + r * ARS + 4 * t + 4 * h, 4) for h in range(2)]
        return [(c * ASTR + r * ARS + 4 * t + i, 1) for i in range(8)]

    def v_stores(q):
        c, t, r = p1b(q)
        return [] if t >= TW else [((r * 8 + i) * VSTR + t * CP + vslot(t, c), 1) for i in range(8)]
    phase('1b: A loads', N1b, a_loads)
    phase('1b: V stores', N1b, v_stores)
    # phase 2: thread (xi, mg) loads V[xi][t][.] 16 bytes at a time (8 where CP = 2 mod 4), stores P[m][t][xi]
    # (where C = 2 mod 4 and CP = C + 2 the last two channels as 8 bytes, as ptxas emits the loads of channels the
    # sums use)
    if CP % 4 == 0:
        phase('2: V loads', NT, lambda q: [((q & 63) * VSTR + t * CP + vslot(t, 4 * c4), min(4, C - 4 * c4))
                                           for t in range(TW) for c4 in range(CP // 4)])
    else:
        phase('2: V loads', NT, lambda q: [((q & 63) * VSTR + t * CP + 2 * c2, 2)
                                           for t in range(TW) for c2 in range(CP // 2)])
    MPT = M // MG
    phase('2: P stores', NT, lambda q: [(((q >> 6) * MPT * TW + j * TW + t) * PSTR + (q & 63), 1)
                                        for j in range(MPT) for t in range(TW)])
    phase('3: P loads', M * TW, lambda q: [(q * PSTR + 4 * k, 4) for k in range(16)])

    # Unpooled, O staged where the shared memory has room for MINB blocks an SM (wino_ostage), else each tile's
    # thread stores its outputs to y itself (no shared memory).
    smem = 4 * ((C * XCS + 3) // 4 * 4 + (C * ASTR + 3) // 4 * 4 + 64 * VSTR + M * TW * PSTR)
    if P == 2 or (smem + 4 * M * CS + 1024) * MINB > 228 * 1024:
        return out

    def o_stores(q):
        m, t = q // TW, q % TW
        if not before:
            return [(m * CS + i * RS + 4 * t, 4) for i in range(4)]
        if Yw % 2 == 0 and 4 * t + 4 <= Yw:
            return [(('pairs', i, h), m * CS + i * Yw + 4 * t + h, 2) for i in range(4) for h in (0, 2)]
        return [(('floats', i, j), m * CS + i * Yw + 4 * t + j, 1) for i in range(4) for j in range(4)
                if 4 * t + j < Yw]
    phase('3: O stores', M * TW, o_stores)
    # the stores to y: a warp a channel, before 16 bytes a lane in y's order; now float pairs in y's order
    if before:
        phase('flush: O loads', M * 32, lambda q: [] if q % 32 >= Yw else [(q // 32 * CS + 4 * (q % 32), 4)])
    else:
        PR = Yw // 2
        H2 = (4 * PR + 31) // 32
        phase('flush: O loads', M * 32,
              lambda q: [(q // 32 * CS + u // PR * RS + 2 * (u % PR), 2)
                         for u in (q % 32 + 32 * h for h in range(H2)) if u < 4 * PR])
    return out


# C, M, MG, H, W, MINB, P: as conv_wino.cu's wino_for builds them, unpooled (P = 1) or pooled 2/2 (the fused forms)
LAYERS = {"2018 spring's second layer": (6, 16, 2, 30, 30, 3, 1),
          "2019 spring's second layer alone": (6, 16, 2, 22, 22, 3, 1),
          "2019 spring's second layer fused": (6, 16, 2, 22, 22, 3, 2),
          "2019 fall's second layer alone": (12, 24, 2, 33, 33, 2, 1),
          "2019 fall's second layer fused": (12, 24, 2, 33, 33, 2, 2)}

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--before', action='store_true', help="also the layout before 53de28b")
    ap.add_argument('--no-rows', action='store_true', help="also the layout without ROWS")
    args = ap.parse_args()
    for name, shape in LAYERS.items():
        now = count(*shape)
        old = count(*shape, before=True) if args.before else count(*shape, rows_off=True) if args.no_rows else None
        print(f"{name} (C, M, MG, H, W, MINB, P = {shape}): wavefronts an item")
        for k in now:
            print(f"  {k:16s} {now[k]:5d}" + (f"   before {old[k]:5d}" if old else ""))
        print(f"  {'total':16s} {sum(now.values()):5d}" + (f"   before {sum(old.values()):5d}" if old else ""))
