#!/usr/bin/env python3
"""Reads ThreadSanitizer output and fails on the data races that matter to this project.

The nightly toolchain has no rust-src, so the standard library is not instrumented: its
futex-based Mutex, Once, Condvar and thread spawning create happens-before edges ThreadSanitizer
cannot see, and rayon's and crossbeam's start-up and sleep paths are reported as races. Rather
than suppress whole libraries, this keeps a report when *every* access in it has its innermost
frame in the code under test (the kernels, matrixmultiply, the canary): a race between two
accesses of a loop nest or GEMM, which is what a wrong thread split or a missed overlap makes,
unless it is on a stack slot the later thread reused (`STACK_REUSE`).

    python3 .ci/tsan_filter.py LOG [--expect-race]

Prints each kept report; exits 1 if any (or, with --expect-race, if none) was kept.
"""

import re
import sys

# The function a frame is in (`#0 <function> <module> (<binary>+<offset>)`), matched at its
# start, so a rayon frame monomorphised over a kernel closure does not count as the kernel.
# The engines live in `tensor_dsl_runtime::exec`, and the point-wise loops they share between
# threads in `operand::dense`; their own unit tests (`exec::…::tests::`) are
# the callers that hand work to the pool, not code under test.
WATCHED = re.compile(
    r"^#0 <?(tensor_dsl_runtime::(exec::(loop_nest|gemm|network|step|transpose|parallel"
    r"|pointwise)|operand::dense)(?!::tests::)|matrixmultiply::|tsan_canary)"
)
# A report on a stack slot of the thread that made the later access: a worker read the
# caller's stack during a parallel call (its extents and strides) and the caller, after the
# call returned, reused the slot. Rayon's join orders the two through the standard library's
# uninstrumented futexes; safe code cannot make a worker outlive the call it serves.
STACK_REUSE = re.compile(r"^  Location is stack of (main thread|thread T\d+)")
LATER = re.compile(
    r"^  (?:Atomic )?(?:Read|Write|read|write) of size \d+ at \S+ by (main thread|thread T\d+)"
)
ACCESS = re.compile(r"^  (Previous )?(Atomic )?(read|write|Read|Write) of size")


def reports(text):
    current = None
    for line in text.splitlines():
        if "WARNING: ThreadSanitizer:" in line:
            current = [line]
        elif current is not None:
            current.append(line)
            if line.startswith("SUMMARY: ThreadSanitizer"):
                yield current
                current = None


def innermost_frames(report):
    frames = []
    for k, line in enumerate(report):
        if ACCESS.match(line) and k + 1 < len(report):
            frames.append(report[k + 1].strip())
    return frames


def first_match(pattern, report):
    return next(filter(None, map(pattern.match, report)), None)


def reused_stack(report):
    later, owner = first_match(LATER, report), first_match(STACK_REUSE, report)
    return later is not None and owner is not None and later.group(1) == owner.group(1)


def main():
    path = sys.argv[1]
    expect_race = "--expect-race" in sys.argv[2:]
    with open(path, encoding="utf-8", errors="replace") as log:
        text = log.read()
    total = kept = 0
    for report in reports(text):
        total += 1
        frames = innermost_frames(report)
        if frames and all(WATCHED.search(frame) for frame in frames) and not reused_stack(report):
            kept += 1
            print("\n".join(report))
    print(f"tsan_filter: {total} reports, {kept} in watched frames ({path})")
    if expect_race:
        sys.exit(0 if kept else 1)
    sys.exit(1 if kept else 0)


if __name__ == "__main__":
    main()
