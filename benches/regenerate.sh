#!/usr/bin/env bash
# Regenerates the README's benchmark table and benches/ratios.svg from fresh measurements:
# numpy's rows (if numpy is installed), then every criterion workload with one and with two
# threads. Takes about ten minutes; run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if python3 -c "import numpy" 2>/dev/null; then
    python3 benches/numpy_workloads.py
fi
for threads in 1 2; do
    RAYON_NUM_THREADS=$threads cargo bench --locked -p tensor-dsl-benches --bench workloads
    rm -rf "target/bench-$threads"
    cp -r target/criterion "target/bench-$threads"
done
python3 benches/report.py target/bench-1 target/bench-2 --readme README.md --svg benches/ratios.svg
