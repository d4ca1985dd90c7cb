#!/usr/bin/env python3
"""Lists the kernels whose global stores nvcc split: for each src/cuda/*.cu (or the PTX files given), compiled to PTX
as the build compiles it for sm_90, every kernel with runs of 4-byte `st.global.f32` to one base register at byte
offsets 8k and 8k + 4, which is what a float2 or float4 assignment looks like when it comes out split, beside the
kernel's counts of 8- and 16-byte stores. A run is not always a split store (a kernel may store neighbours one at a
time on purpose, where it cannot know their alignment); read the source at the kernel's stores to tell.

    python3 bench/ab/split_stores.py                  (every file of src/cuda; needs nvcc)
    python3 bench/ab/split_stores.py a.ptx b.ptx      (PTX files already made: nvcc -ptx ...)

In session 59 (2026-11-28) this is how conv_wino.cu's first-layer kernels were found storing their float2 and float4
outputs 4 bytes at a time (2017's first layer alone 0.851 -> 0.341 ms once they stored whole words); in session 60
conv_tc.cu's conv_tcc_kernel (its float2 pairs) and conv_direct.cu's version 13 rows of four (its float4s) took the
same fix, src/cuda/st_global.cuh. What it lists since are runs meant as single floats: conv_direct.cu's max-pooled
kernels (TP: two pooled outputs a thread, Yw odd or even), conv_wino.cu's 2-D kernels of 2019 fall's second layer
(Yw 29, odd), and dense_tc.cu's odd-OUT branch beside its float2 stores (as many v2 as pairs).
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STORE = re.compile(r"st\.global\.f32\s+\[(%rd\d+)(?:\+(\d+))?\]")


def ptx_of(cu, out):
    cmd = ["nvcc", "-ptx", "-O3", "-std=c++17", "-arch=sm_90", "-I", os.path.join(ROOT, "src"), "-I",
           os.path.join(ROOT, "include"), "-o", out, cu]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{os.path.basename(cu)}: nvcc failed: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return out


def kernels(ptx):
    """(name, body) of each kernel entry of a PTX file."""
    s = open(ptx).read()
    for m in re.finditer(r"\.entry (\S+)\(", s):
        end = s.find("\n}\n", m.start())
        yield m.group(1), s[m.start():end]


def runs(body):
    """Pairs of consecutive 4-byte stores to one base at offsets 8k and 8k + 4."""
    lines, n = body.split("\n"), 0
    for a, b in zip(lines, lines[1:]):
        ma, mb = STORE.search(a), STORE.search(b)
        if ma and mb and ma.group(1) == mb.group(1):
            off_a, off_b = int(ma.group(2) or 0), int(mb.group(2) or 0)
            n += off_a % 8 == 0 and off_b == off_a + 4
    return n


def main(argv):
    with tempfile.TemporaryDirectory() as tmp:
        if argv:
            files = argv
        else:
            files = [p for cu in sorted(glob.glob(os.path.join(ROOT, "src", "cuda", "*.cu")))
                     if (p := ptx_of(cu, os.path.join(tmp, os.path.basename(cu) + ".ptx")))]
        found = 0
        for ptx in files:
            for name, body in kernels(ptx):
                n = runs(body)
                if n == 0:
                    continue
                c = collections.Counter(re.findall(r"\bst\.global\.(v2|v4)\.", body))
                print(f"{os.path.basename(ptx):24s} {n:4d} pairs  v2 {c['v2']:3d}  v4 {c['v4']:3d}  {name}")
                found += 1
        print(f"{found} kernels with pairs of 4-byte stores", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
