#!/usr/bin/env python3
"""Register-bank reads of the FFMA loops in a kernel's SASS: how many of each FFMA's source registers come from the
register file, and how often two of them come from the same bank.

    cuobjdump -sass FILE.cubin > FILE.sass        (nvcc -cubin -arch=sm_90 ...; cuobjdump from the CUDA toolkit, or
                                                    PyPI's nvidia-cuda-cuobjdump wheel on a machine without one)
    python3 bench/sass_banks.py FILE.sass [NAME_PART ...]

For each function whose mangled name holds every NAME_PART (all functions by default), each run of FFMA at most 24
instructions apart that holds at least 64 of them (a kernel's unrolled multiply-add loop; the epilogue's few are
left out) is printed as: its addresses, instructions, FFMA and their share, the FFMA by how many of their register
operands are read from the register file ("fresh"), and those whose fresh reads hit one bank twice or more.

The model, which NVIDIA does not document: two banks, register n in bank n % 2, one read a bank a cycle; a source
operand marked `.reuse` stays in a cache of one entry an operand slot and bank, so that the next read of that
register in that slot costs no bank read, and a read without the mark empties the entry (empty where a loop starts).
ptxas allocates by it: in the three main loops of the CUTLASS SIMT SGEMM that libcublas ships for sm_90, 5 of the
1,585 FFMA with two fresh reads have both in one bank, against about half by chance (docs/PERFORMANCE-LOG.md,
2026-11-26).
"""
import collections
import re
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);")
REG = re.compile(r"-?\|?R(\d+)(\.reuse)?")


def instructions(body):
    """(address, opcode, operand list) for each instruction of a function's SASS text."""
    return [(int(m.group(1), 16), m.group(2), [a.strip() for a in m.group(3).split(",")])
            for m in INSN.finditer(body)]


def loops(ins, gap=24, least=64):
    """The runs of FFMA at most `gap` instructions apart holding at least `least` of them: (first, last) indices."""
    at = [i for i, x in enumerate(ins) if x[1].startswith("FFMA")]
    runs, start = [], None
    for k, i in enumerate(at):
        if start is None:
            start = i
        if k + 1 == len(at) or at[k + 1] - i > gap:
            if sum(1 for j in range(start, i + 1) if ins[j][1].startswith("FFMA")) >= least:
                runs.append((start, i))
            start = None
    return runs


def bank_reads(ins, first, last):
    """Counts over ins[first..last]: instructions, FFMA, FFMA by fresh reads, and FFMA with a bank read twice."""
    cache, fresh_hist, twice, ffma = {}, collections.Counter(), 0, 0
    for _, op, args in ins[first:last + 1]:
        fresh = []
        for slot, a in enumerate(args[1:]):  # args[0] is the destination
            m = REG.match(a)
            if not m or m.group(1) == "255":  # RZ is not a register read
                continue
            reg = int(m.group(1))
            key = (slot, reg % 2)
            if cache.get(key) != reg:
                fresh.append(reg)
            if m.group(2):
                cache[key] = reg
            else:
                cache.pop(key, None)
        if op.startswith("FFMA"):
            ffma += 1
            fresh_hist[len(fresh)] += 1
            per_bank = collections.Counter(r % 2 for r in fresh)
            if per_bank and max(per_bank.values()) >= 2:
                twice += 1
    return last - first + 1, ffma, dict(sorted(fresh_hist.items())), twice


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    text = open(sys.argv[1]).read()
    parts = sys.argv[2:]
    for body in re.split(r"\n\s*Function : ", text)[1:]:
        name = body.split("\n", 1)[0].strip()
        if not all(p in name for p in parts):
            continue
        ins = instructions(body)
        print(name)
        for first, last in loops(ins):
            n, ffma, hist, twice = bank_reads(ins, first, last)
            print(f"  {ins[first][0]:x}-{ins[last][0]:x}: {n} instructions, FFMA {ffma} ({ffma / n:.1%}), "
                  f"FFMA by fresh reads {hist}, one bank read twice {twice} ({twice / ffma:.1%})")


if __name__ == "__main__":
    main()
