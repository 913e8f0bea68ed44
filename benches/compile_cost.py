#!/usr/bin/env python3
"""Compile cost of `tensor!`: the seconds a debug build of 100 statements adds.

Writes a crate under target/compile-cost/ with 100 functions, each holding one statement of
the kinds users write most (element-wise, contractions, sums, transposes, chains, scalars,
statements on nested arrays), builds it once with the statements and once with the same
functions empty, and prints the difference per 100 statements (best of three clean builds of
the crate alone, dependencies built beforehand). The budget is one second per 100
statements. Run it on a quiet machine:

    python3 benches/compile_cost.py [--statements N] [--release] [--json FILE]

Seconds on a shared host vary by a tenth or more between runs. `--instructions` counts
instead the instructions rustc executes to build the crate (valgrind's callgrind; one build
each, about 50 times slower): the same count every run, so a change of a few percent shows.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = ROOT / "target" / "compile-cost"

# One statement per function: its parameters and its body. `{n}` numbers the function so no
# two are the same tokens.
KINDS = [
    ("a: &Tensor<f64>, b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ c[i, j] = a[i, k] * b[k, j]; }}"),
    ("a: &Tensor<f64>, b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ c[i, j] = a[i, j] + {n}.0 * b[i, j]; }}"),
    ("a: &Tensor<f64>, _b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ let s[j] = a[i, j]; }} c.as_mut_slice()[0] = s.as_slice()[0];"),
    ("a: &Tensor<f64>, _b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ c[i, j] = a[j, i]; }}"),
    ("a: &Tensor<f64>, b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ let d = a[i, j] * b[i, j]; }} c.as_mut_slice()[0] = d;"),
    ("a: &Tensor<f64>, b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ c[i, j] += a[i, k] * b[k, l] * a[l, j]; }}"),
    ("a: &Tensor<f64>, b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ c[i, j] = exp(a[i, j] - b[i, j]) * {n}.5; }}"),
    ("a: &Tensor<f64>, _b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ let t = a[i, i]; }} c.as_mut_slice()[0] = t;"),
    ("a: &[[f64; 3]; 3], b: &[[f64; 3]; 3], c: &mut [[f64; 3]; 3]",
     "tensor! {{ c[i, j] = a[i, k] * b[k, j]; }}"),
    ("a: &Tensor<f64>, b: &Tensor<f64>, c: &mut Tensor<f64>",
     "tensor! {{ c[i, j] = a[i, j] * b[j, i] - a[i, k] * b[j, k]; }}"),
]


def write_crate(statements: int, empty: bool) -> None:
    (DIR / "src").mkdir(parents=True, exist_ok=True)
    (DIR / "Cargo.toml").write_text(
        '[package]\nname = "compile-cost"\nversion = "0.0.0"\nedition = "2021"\n'
        f'[dependencies]\ntensor-dsl = {{ path = "{ROOT}" }}\n[workspace]\n'
    )
    lines = ["#![allow(unused_variables, clippy::all)]", "use tensor_dsl::{tensor, Tensor};"]
    for n in range(statements):
        params, body = KINDS[n % len(KINDS)]
        body = "" if empty else body.format(n=n)
        lines.append(f"pub fn statement_{n}({params}) {{ {body} }}")
    (DIR / "src" / "lib.rs").write_text("\n".join(lines) + "\n")


# Runs rustc, under callgrind when it compiles this crate (`--instructions`), which then
# leaves its count of instructions in `callgrind.log`.
WRAPPER = """#!/bin/sh
case " $* " in
  *" --crate-name compile_cost "*)
    exec valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$(dirname "$0")/callgrind.log" "$@" ;;
  *) exec "$@" ;;
esac
"""


def build(release: bool, instructions: bool = False) -> float:
    """Seconds of a build of the crate alone (its dependencies already built), or with
    `instructions`, the billions of instructions rustc executed for it."""
    profile = ["--release"] if release else []
    # Cargo's own defaults (incremental, full debug info in debug), as a user's build has them.
    env = {k: v for k, v in os.environ.items()
           if k != "CARGO_INCREMENTAL" and not k.startswith("CARGO_PROFILE_")}
    if instructions:
        wrapper = DIR / "callgrind-rustc.sh"
        wrapper.write_text(WRAPPER)
        wrapper.chmod(0o755)
        env["RUSTC_WRAPPER"] = str(wrapper)
    subprocess.run(["cargo", "clean", "-q", "-p", "compile-cost", *profile], cwd=DIR, env=env,
                   check=True)
    start = time.perf_counter()
    subprocess.run(["cargo", "build", "-q", *profile], cwd=DIR, env=env, check=True)
    seconds = time.perf_counter() - start
    if not instructions:
        return seconds
    log = (DIR / "callgrind.log").read_text()
    return int(re.search(r"Collected : (\d+)", log).group(1)) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--statements", type=int, default=100)
    parser.add_argument("--release", action="store_true")
    parser.add_argument("--json", type=pathlib.Path)
    parser.add_argument("--instructions", action="store_true",
                        help="count rustc's instructions (valgrind) instead of seconds")
    args = parser.parse_args()
    if DIR.exists():
        shutil.rmtree(DIR / "src", ignore_errors=True)
    times = {}
    for variant in ["empty", "statements"]:
        write_crate(args.statements, variant == "empty")
        build(args.release)  # dependencies, and a first build to warm the caches
        if args.instructions:
            times[variant] = build(args.release, instructions=True)
        else:
            times[variant] = min(build(args.release) for _ in range(3))
    added = times["statements"] - times["empty"]
    per_100 = added * 100 / args.statements
    profile = "release" if args.release else "debug"
    if args.instructions:
        print(f"{profile} build of {args.statements} functions: rustc executes "
              f"{times['empty']:.3f} G instructions empty, {times['statements']:.3f} G with "
              f"one statement each: tensor! adds {per_100:.3f} G per 100 statements")
        return
    print(f"{profile} build of {args.statements} functions: empty {times['empty']:.2f} s, "
          f"with one statement each {times['statements']:.2f} s")
    print(f"tensor! adds {per_100:.2f} s per 100 statements (budget 1 s in debug)")
    if args.json:
        args.json.write_text(json.dumps({
            "profile": profile, "statements": args.statements,
            "empty_s": round(times["empty"], 3), "statements_s": round(times["statements"], 3),
            "per_100_statements_s": round(per_100, 3),
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
