#!/usr/bin/env python3
"""Turns criterion results into the README's table: each workload's implementations with
their rate (GFLOP/s for contractions, GB/s for element-wise work), and tensor!'s ratio to each.

    RAYON_NUM_THREADS=1 cargo bench --bench workloads && cp -r target/criterion /tmp/one
    RAYON_NUM_THREADS=2 cargo bench --bench workloads && cp -r target/criterion /tmp/two
    python3 benches/report.py /tmp/one /tmp/two
"""

import json
import pathlib
import sys


def load(directory):
    results = {}
    for benchmark in pathlib.Path(directory).glob("*/*/new/benchmark.json"):
        meta = json.loads(benchmark.read_text())
        estimates = json.loads((benchmark.parent / "estimates.json").read_text())
        seconds = estimates["median"]["point_estimate"] * 1e-9
        throughput = meta.get("throughput") or {}
        if "Elements" in throughput:
            rate, unit = throughput["Elements"] / seconds / 1e9, "GFLOP/s"
        elif "Bytes" in throughput:
            rate, unit = throughput["Bytes"] / seconds / 1e9, "GB/s"
        else:
            continue
        results[(meta["group_id"], meta["function_id"])] = (rate, unit)
    return results


def main():
    runs = [load(directory) for directory in sys.argv[1:]]
    if not runs:
        sys.exit(__doc__)
    labels = ["1 thread", "2 threads"][: len(runs)]
    print("| workload | implementation | " + " | ".join(labels) + " | tensor! ÷ this (1 thread) |")
    print("| --- | --- | " + " | ".join("---:" for _ in labels) + " | ---: |")
    groups = sorted({group for run in runs for group, _ in run})
    for group in groups:
        functions = sorted({f for g, f in runs[0] if g == group}, key=lambda f: (f != "tensor!", f))
        ours = runs[0].get((group, "tensor!"))
        for function in functions:
            cells = []
            for run in runs:
                rate = run.get((group, function))
                cells.append(f"{rate[0]:.1f} {rate[1]}" if rate else "–")
            mine = runs[0][(group, function)]
            ratio = f"{ours[0] / mine[0]:.2f}×" if ours and function != "tensor!" else ""
            print(f"| {group} | {function} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
