#!/usr/bin/env python3
"""Plots the convolution ladder from `nanoconv bench-gpu --json` output: for each layer shape at the largest N,
one bar per version (and cuDNN fp32 / fp16), its time in ms on a log scale, with the layer's unfused fp32
floor (bytes over the copy bandwidth or FLOPs over the FFMA peak, whichever is larger) as a line.

    python3 bench/plot_ladder.py bench/results/gpu.json docs/ladder.svg [docs/ladder.png]

The SVG is written by hand (no dependency); a .png is drawn with matplotlib where it is installed.
"""
import json
import math
import sys
from collections import OrderedDict


def ladder(doc):
    """{shape: [(version, ms, floor_ms, precision)]} at each shape's largest N, and that N."""
    rows = doc.get("layers", [])
    if not rows:
        return OrderedDict(), 0
    n = max(r["N"] for r in rows)
    out = OrderedDict()
    for r in rows:
        if r["N"] == n:
            out.setdefault(r["shape"], []).append((r["version"], r["ms"], r["floor_ms"], r["precision"]))
    return out, n


def svg(data, n, title):
    bar_h, gap, left, width = 14, 26, 250, 560
    per = [len(v) for v in data.values()]
    height = 60 + sum(p * bar_h + gap for p in per)
    lo = min(min(ms, fl) for v in data.values() for _, ms, fl, _ in v)
    hi = max(ms for v in data.values() for _, ms, _, _ in v)
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))

    def x(ms):
        return left + width * (math.log10(ms) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="18" font-size="14">{title} (N = {n}; ms, log scale; red line: the unfused fp32 floor)</text>']
    d = lo
    while d <= hi * 1.0001:
        out.append(f'<line x1="{x(d):.1f}" y1="28" x2="{x(d):.1f}" y2="{height - 10}" stroke="#ddd"/>')
        out.append(f'<text x="{x(d):.1f}" y="40" text-anchor="middle">{d:g}</text>')
        d *= 10
    y = 50
    for shape, rows in data.items():
        out.append(f'<text x="10" y="{y + 10}" font-weight="bold">{shape}</text>')
        y += 14
        floor = rows[0][2]
        top = y
        for version, ms, fl, prec in rows:
            colour = "#4477aa" if prec == "fp32" and not version.startswith("cudnn") else (
                "#aa7744" if version.startswith("cudnn") else "#66aa55")
            out.append(f'<text x="{left - 6}" y="{y + 10}" text-anchor="end">{version}</text>')
            out.append(f'<rect x="{left}" y="{y + 1}" width="{max(x(ms) - left, 1):.1f}" height="{bar_h - 3}" '
                       f'fill="{colour}"/>')
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
    count = sum(len(v) for v in data.values())
    fig, ax = plt.subplots(figsize=(10, 0.25 * count + 1.5))
    labels, y = [], 0
    for shape, rows in data.items():
        for version, ms, fl, prec in rows:
            ax.barh(y, ms, color="#aa7744" if version.startswith("cudnn") else "#4477aa")
            labels.append(f"{shape} | {version}")
            y += 1
        ax.plot([rows[0][2]] * 2, [y - len(rows) - 0.5, y - 0.5], color="red")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms (red: the unfused fp32 floor)")
    ax.set_title(f"{title} (N = {n})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
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
