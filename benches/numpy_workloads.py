#!/usr/bin/env python3
"""The benchmark workloads in numpy, one BLAS thread, f32: what a user leaving numpy would
compare against. Writes benches/numpy.json (group → implementation → rate) for
benches/report.py, which adds these rows to the README's table. Numbers come from a separate
process, so their ratios are noisier than those measured within one criterion run.

    python3 -m pip install numpy
    python3 benches/numpy_workloads.py
"""

import json
import os
import pathlib
import statistics
import time

# One BLAS thread, as the table's "1 thread" column; set before numpy loads its BLAS.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import numpy as np  # noqa: E402


def data(shape, seed, dtype=np.float32):
    count = int(np.prod(shape))
    t = np.arange(count, dtype=np.int64)
    values = ((t * 7919 + (seed + 1) * 104_729) % 1009) / 1009.0 - 0.5
    return values.reshape(shape).astype(dtype)


def median_seconds(run, budget=2.0):
    run()  # warm up: BLAS initialisation, einsum path search caches
    times = []
    start = time.perf_counter()
    while len(times) < 10 or (time.perf_counter() - start < budget and len(times) < 1000):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main():
    results = {}

    def record(group, name, run, amount, unit):
        seconds = median_seconds(run)
        results.setdefault(group, {})[name] = [amount / seconds / 1e9, unit]
        print(f"{group} / {name}: {amount / seconds / 1e9:.1f} {unit}")

    n = 1024
    a, b = data((n, n), 0), data((n, n), 1)
    record("gemm 1024³", "numpy matmul", lambda: a @ b, 2 * n**3, "GFLOP/s")
    # Complex as the Rust benchmark makes it: operand p plus i times operand p + 64.
    za = (data((n, n), 0) + 1j * data((n, n), 64)).astype(np.complex64)
    zb = (data((n, n), 1) + 1j * data((n, n), 65)).astype(np.complex64)
    record("complex gemm 1024³, c32", "numpy matmul", lambda: za @ zb, 8 * n**3, "GFLOP/s")

    ni, nj, nk, nl = 256, 256, 64, 32
    a, b = data((ni, nk, nl), 0), data((nk, nj, nl), 1)
    record("seed c[i,j] = a[i,k,l] b[k,j,l]", "numpy einsum (optimize=True)",
           lambda: np.einsum("ikl,kjl->ij", a, b, optimize=True), 2 * ni * nj * nk * nl, "GFLOP/s")

    nb, n = 64, 64
    a, b = data((nb, n, n), 0), data((nb, n, n), 1)
    record("batched matmul 64 × 64³", "numpy matmul", lambda: a @ b, 2 * nb * n**3, "GFLOP/s")

    n = 32
    c, g = data((n, n), 0), data((n, n, n, n), 1)
    path = np.einsum_path("pa,qb,re,sf,abef->pqrs", c, c, c, c, g, optimize="optimal")[0]
    record("4-index transform n = 32", "numpy einsum (optimal path)",
           lambda: np.einsum("pa,qb,re,sf,abef->pqrs", c, c, c, c, g, optimize=path),
           4 * 2 * n**5, "GFLOP/s")

    n = 4096
    a, b, cc, e = (data((n, n), s) for s in range(4))
    record("fused r = a + b*c + 2*e, 4096²", "numpy operators",
           lambda: a + b * cc + 2 * e, 5 * 4 * n * n, "GB/s")

    a, b, cc = data((1000, 10), 0), data((10, 1000), 1), data((1000, 10), 2)
    record("chain 1000×10 · 10×1000 · 1000×10", "numpy multi_dot",
           lambda: np.linalg.multi_dot([a, b, cc]), 2 * 2 * 10 * 1000 * 10, "GFLOP/s")

    n = 256
    a = data((n, n, n), 0)
    record("permutation kji = ijk, 256³", "numpy ascontiguousarray(transpose)",
           lambda: np.ascontiguousarray(a.transpose(2, 1, 0)), 2 * 4 * n**3, "GB/s")

    n = 4096
    a, b = data((n, n), 0), data((n, n), 1)
    record("row sums over 4096²", "numpy sum(axis=1)", lambda: a.sum(axis=1), 4 * n * n, "GB/s")
    record("dot product over 4096²", "numpy vdot", lambda: np.vdot(a, b), 2 * 4 * n * n, "GB/s")

    out = pathlib.Path(__file__).with_name("numpy.json")
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
