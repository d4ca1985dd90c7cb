#!/usr/bin/env python3
"""Summarises Nsight Compute's source page of one kernel: which instructions it executes and where its warps stall.

    ncu --set full -k regex:KERNEL --launch-skip S --launch-count 1 -o prof PROGRAM ...
    ncu -i prof.ncu-rep --page source --csv --print-source sass > prof.csv
    python3 bench/ncu_summary.py prof.csv [TOP]

Prints the executed instructions and stall samples in all, each opcode's share of both, the stall reasons' shares
of the samples, and the TOP lines (default 10) with the most samples, each with its largest stall reason.
"""
import collections
import csv
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = list(csv.reader(open(sys.argv[1], newline="")))
    top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    head = next(i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r)
    hdr, data = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    col = {name: i for i, name in enumerate(hdr)}
    executed, samples, source = col["Instructions Executed"], col["Warp Stall Sampling (All Samples)"], col["Source"]
    stalls = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    num = lambda r, i: int(r[i] or 0)  # noqa: E731
    total, sampled = sum(num(r, executed) for r in data), sum(num(r, samples) for r in data)
    print(f"instructions executed {total}, stall samples {sampled}, SASS lines {len(data)}")
    ops, op_samples = collections.Counter(), collections.Counter()
    for r in data:
        words = [w for w in r[source].split() if not w.startswith("@")]
        op = words[0].split(".")[0] if words else "?"
        ops[op] += num(r, executed)
        op_samples[op] += num(r, samples)
    share = lambda n, of: 100 * n / max(of, 1)  # noqa: E731
    for op, n in ops.most_common(20):
        print(f"  {op:10s} {share(n, total):5.1f}% of instructions  {share(op_samples[op], sampled):5.1f}% of samples")
    reasons = collections.Counter()
    for r in data:
        for i in stalls:
            reasons[hdr[i]] += num(r, i)
    print("stall reasons: " + ", ".join(f"{k[6:]} {share(v, sampled):.1f}%" for k, v in reasons.most_common(10)))
    for r in sorted(data, key=lambda r: -num(r, samples))[:top_n]:
        worst = max(stalls, key=lambda i: num(r, i))
        print(f"  {r[0][-6:]} samples {num(r, samples):6d} executed {num(r, executed):9d}  "
              f"{r[source].strip()[:60]:60s} {hdr[worst][6:]} {num(r, worst)}")


if __name__ == "__main__":
    main()
