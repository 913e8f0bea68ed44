#!/usr/bin/env python3
"""Turns criterion results into the README's table: each workload's implementations with
their rate (GFLOP/s for contractions, GB/s for element-wise work), and tensor!'s ratio to each;
optionally writes the table into the README and an SVG bar chart of the ratios.

    benches/regenerate.sh            # runs everything below, then writes README and chart

    RAYON_NUM_THREADS=1 cargo bench -p tensor-dsl-benches --bench workloads && cp -r target/criterion /tmp/one
    RAYON_NUM_THREADS=2 cargo bench -p tensor-dsl-benches --bench workloads && cp -r target/criterion /tmp/two
    python3 benches/numpy_workloads.py           # optional: benches/numpy.json
    python3 benches/report.py /tmp/one /tmp/two [--readme README.md] [--svg benches/ratios.svg]
"""

import argparse
import json
import pathlib
from xml.sax.saxutils import escape

BEGIN, END = "<!-- benchmark table: benches/report.py -->", "<!-- end of benchmark table -->"
NUMPY = pathlib.Path(__file__).with_name("numpy.json")


def load(directory):
    results = {}
    for benchmark in pathlib.Path(directory).glob("*/*/new/benchmark.json"):
        meta = json.loads(benchmark.read_text())
        estimates = json.loads((benchmark.parent / "estimates.json").read_text())
        seconds = estimates["median"]["point_estimate"] * 1e-9
        throughput = meta.get("throughput") or {}
        if throughput.get("Elements") == 1:
            # A per-call workload (small statements): time per call, lower is better, kept
            # as calls per second internally so ratios read like the others.
            rate, unit = 1 / seconds, "calls/s"
        elif "Elements" in throughput:
            rate, unit = throughput["Elements"] / seconds / 1e9, "GFLOP/s"
        elif "Bytes" in throughput:
            rate, unit = throughput["Bytes"] / seconds / 1e9, "GB/s"
        else:
            continue
        results[(meta["group_id"], meta["function_id"])] = (rate, unit)
    return results


def load_numpy():
    """numpy's rates, from a separate process (benches/numpy_workloads.py), if recorded."""
    if not NUMPY.exists():
        return {}
    recorded = json.loads(NUMPY.read_text())
    return {
        (group, name + " ¹"): (rate, unit)
        for group, rows in recorded.items()
        for name, (rate, unit) in rows.items()
    }


def cell(rate):
    if not rate:
        return "–"
    if rate[1] == "calls/s":
        return f"{1e9 / rate[0]:.0f} ns per call"
    return f"{rate[0]:.1f} {rate[1]}"


def table(runs, numpy):
    labels = ["1 thread", "2 threads"][: len(runs)]
    lines = [
        "| workload | implementation | " + " | ".join(labels) + " | tensor! ÷ this (1 thread) |",
        "| --- | --- | " + " | ".join("---:" for _ in labels) + " | ---: |",
    ]
    first = {**runs[0], **numpy}
    groups = sorted({group for group, _ in first})
    for group in groups:
        functions = sorted({f for g, f in first if g == group}, key=lambda f: (f != "tensor!", f))
        ours = first.get((group, "tensor!"))
        for function in functions:
            cells = []
            for index, run in enumerate(runs):
                rate = (numpy if index == 0 else {}).get((group, function)) or run.get(
                    (group, function)
                )
                cells.append(cell(rate))
            mine = first[(group, function)]
            ratio = f"{ours[0] / mine[0]:.2f}×" if ours and function != "tensor!" else ""
            lines.append(f"| {group} | {function} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def ratios(run, numpy):
    """Per workload: tensor!'s ratio to the fastest other implementation in the same run, and
    to numpy (one BLAS thread) where recorded."""
    bars = []
    for group in sorted({group for group, _ in run}):
        ours = run.get((group, "tensor!"))
        # Other forms of a statement (`tensor! …`) are not comparators.
        others = [
            (rate, f)
            for (g, f), (rate, _) in run.items()
            if g == group and not f.startswith("tensor!")
        ]
        if not ours or not others:
            continue
        rate, best = max(others)
        bars.append((group, f"vs {best}", ours[0] / rate))
        for (g, f), (rate, _) in numpy.items():
            if g == group:
                bars.append((group, f"vs {f.rstrip(' ¹')}", ours[0] / rate))
    return bars


def svg(bars):
    """A horizontal bar chart of ratios, 1.0 marked: right of it, tensor! is faster."""
    left, width, row, top, limit = 520, 360, 22, 40, 3.0
    height = top + row * len(bars) + 30
    scale = width / limit
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<text x="10" y="20" font-size="14">tensor! speed ÷ comparator (one thread, f32 unless '
        f'noted; bars clipped at {limit:g}×)</text>',
    ]
    for index, (group, label, ratio) in enumerate(bars):
        y = top + index * row
        colour = "#3a7d44" if ratio >= 0.95 else "#c0392b"
        parts.append(
            f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">'
            f"{escape(group)} — {escape(label)}</text>"
        )
        parts.append(
            f'<rect x="{left}" y="{y + 3}" width="{min(ratio, limit) * scale:.1f}" '
            f'height="{row - 6}" fill="{colour}"/>'
        )
        parts.append(
            f'<text x="{left + min(ratio, limit) * scale + 4:.1f}" y="{y + 14}">{ratio:.2f}×</text>'
        )
    x = left + scale
    parts.append(
        f'<line x1="{x}" y1="{top - 4}" x2="{x}" y2="{height - 24}" stroke="black" '
        'stroke-dasharray="4 3"/>'
    )
    parts.append(f'<text x="{x}" y="{height - 8}" text-anchor="middle">1.0×</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="criterion directories: 1 thread, 2 threads")
    parser.add_argument("--readme", type=pathlib.Path, help="replace the table in this file")
    parser.add_argument("--svg", type=pathlib.Path, help="write the ratio chart here")
    args = parser.parse_args()
    runs = [load(directory) for directory in args.runs]
    numpy = load_numpy()
    lines = table(runs, numpy)
    print("\n".join(lines))
    if args.readme:
        text = args.readme.read_text()
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
        args.readme.write_text(text[:start] + "\n" + "\n".join(lines) + "\n" + text[end:])
    if args.svg:
        args.svg.write_text(svg(ratios(runs[0], numpy)))


if __name__ == "__main__":
    main()
