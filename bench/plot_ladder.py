#!/usr/bin/env python3
"""Plots the convolution ladder from `nanoconv bench --backend cuda --json` output (or `bench-gpu`'s, the same):
for each layer shape at the largest N, one bar per row of "layers" (every version 1..V, alone and fused, and
cuDNN fp32 / fp16), its time in ms on a log scale, coloured by precision (exact fp32, tf32 and 3xtf32, fp16 and
bf16, cuDNN), labelled with the version and, below fp32, its precision; the layer's unfused fp32 floor (bytes over
the copy bandwidth or FLOPs over the FFMA peak, whichever is larger) is the red line.

    python3 bench/plot_ladder.py bench/results/gpu.json docs/ladder.svg [docs/ladder.png]

The JSON may be gzipped (.gz: bench/results keeps the bench's JSON so).

The SVG is written by hand (no dependency); a .png is drawn with matplotlib where it is installed.
"""
import gzip
import json
import math
import sys
from collections import OrderedDict


# Bar colours: ours in exact fp32, ours on TF32 tensor cores (tf32, 3xtf32), ours in 16 bits (fp16, bf16), cuDNN.
COLOURS = {"fp32": "#4477aa", "tf32": "#66aa55", "3xtf32": "#66aa55", "fp16": "#aa4499", "bf16": "#aa4499"}
CUDNN_COLOUR = "#aa7744"
LEGEND = [("ours fp32", "#4477aa"), ("ours tf32 / 3xtf32", "#66aa55"), ("ours fp16 / bf16", "#aa4499"),
          ("cuDNN", CUDNN_COLOUR)]


def colour(version, prec):
    return CUDNN_COLOUR if version.startswith("cudnn") else COLOURS.get(prec, "#888888")


def label(version, prec):
    """The version, and its precision where that is below fp32 and the label does not say it already."""
    return version if prec == "fp32" or prec in version else f"{version} [{prec}]"


def ladder(doc):
    """{shape: (floor_ms, [(label, ms, precision, version)])} at each shape's largest N, and that N. The floor is the
    unfused fp32 one: a row that is neither fused nor reduced precision (older files lack "fused": any fp32 row)."""
    rows = doc.get("layers", [])
    if not rows:
        return OrderedDict(), 0
    n = max(r["N"] for r in rows)
    out = OrderedDict()
    for r in rows:
        if r["N"] != n:
            continue
        floor, bars = out.setdefault(r["shape"], [None, []])
        if floor is None and r["precision"] == "fp32" and not r.get("fused", False):
            out[r["shape"]][0] = r["floor_ms"]
        bars.append((label(r["version"], r["precision"]), r["ms"], r["precision"], r["version"]))
    for shape, (floor, bars) in out.items():
        if floor is None:  # no unfused fp32 row: the first row's floor
            out[shape][0] = next(r["floor_ms"] for r in rows if r["N"] == n and r["shape"] == shape)
    return out, n


def svg(data, n, title):
    bar_h, gap, left, width = 14, 26, 300, 560
    per = [len(bars) for _, bars in data.values()]
    height = 76 + sum(p * bar_h + gap for p in per)
    lo = min(min(min(ms for _, ms, _, _ in bars), floor) for floor, bars in data.values())
    hi = max(ms for _, bars in data.values() for _, ms, _, _ in bars)
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    if hi <= lo:
        hi = lo * 10

    def x(ms):
        return left + width * (math.log10(ms) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="18" font-size="14">{title} (N = {n}; ms, log scale; red line: the unfused fp32 floor)</text>']
    lx = 10
    for name, c in LEGEND:
        out.append(f'<rect x="{lx}" y="26" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{lx + 14}" y="35">{name}</text>')
        lx += 14 + 7 * len(name) + 16
    d = lo
    while d <= hi * 1.0001:
        out.append(f'<line x1="{x(d):.1f}" y1="44" x2="{x(d):.1f}" y2="{height - 10}" stroke="#ddd"/>')
        out.append(f'<text x="{x(d):.1f}" y="56" text-anchor="middle">{d:g}</text>')
        d *= 10
    y = 66
    for shape, (floor, bars) in data.items():
        out.append(f'<text x="10" y="{y + 10}" font-weight="bold">{shape}</text>')
        y += 14
        top = y
        for text, ms, prec, version in bars:
            out.append(f'<text x="{left - 6}" y="{y + 10}" text-anchor="end">{text}</text>')
            out.append(f'<rect x="{left}" y="{y + 1}" width="{max(x(ms) - left, 1):.1f}" height="{bar_h - 3}" '
                       f'fill="{colour(version, prec)}"/>')
            out.append(f'<text x="{x(ms) + 4:.1f}" y="{y + 10}">{ms:.3g}</text>')
            y += bar_h
        out.append(f'<line x1="{x(floor):.1f}" y1="{top}" x2="{x(floor):.1f}" y2="{y}" stroke="red"/>')
        y += gap - 14
    out.append("</svg>")
    return "\n".join(out)


def png(data, n, title, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    count = sum(len(bars) for _, bars in data.values())
    fig, ax = plt.subplots(figsize=(10, 0.25 * count + 1.5))
    labels, y = [], 0
    for shape, (floor, bars) in data.items():
        for text, ms, prec, version in bars:
            ax.barh(y, ms, color=colour(version, prec))
            labels.append(f"{shape} | {text}")
            y += 1
        ax.plot([floor] * 2, [y - len(bars) - 0.5, y - 0.5], color="red")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms (red: the unfused fp32 floor)")
    ax.set_title(f"{title} (N = {n})")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=name) for name, c in LEGEND], fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with (gzip.open(sys.argv[1], "rt") if sys.argv[1].endswith(".gz") else open(sys.argv[1])) as f:
        doc = json.load(f)
    data, n = ladder(doc)
    if not data:
        sys.exit(f"{sys.argv[1]}: no layer rows")
    dev = doc.get("device", {})
    title = f"nanoconv convolution ladder, {dev.get('gpu', '?')}, {dev.get('date', '')}"
    for path in sys.argv[2:]:
        if path.endswith(".svg"):
            with open(path, "w") as f:
                f.write(svg(data, n, title))
        else:
            try:
                png(data, n, title, path)
            except ImportError:
                print(f"{path}: matplotlib is not installed here; wrote the SVG only")
                continue
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
