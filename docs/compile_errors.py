#!/usr/bin/env python3
"""Writes docs/compile-errors.md, the crate documentation's catalogue of compile-time errors,
from the compile-fail tests: each case under tests/ui/ (and tests/ui_default/) with the program
and what rustc prints for it (the `.stderr` file, trimmed to the error, its underlined tokens
and tensor-dsl's own notes). The code blocks are `compile_fail` doctests, so every example
keeps failing to compile; `--check` fails if the committed page is stale (CI runs that).

    python3 docs/compile_errors.py [--check]
"""

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "compile-errors.md"
SECTIONS = [
    ("syntax", "Syntax"),
    ("integers", "Integer elements"),
    ("complex", "Complex elements"),
    ("names", "Names, scalars and element types"),
    ("indices", "Indices and positions"),
    ("functions", "Functions"),
    ("sums", "Sums"),
    ("shapes", "Ranks"),
    ("static_shapes", "Static shapes (nested arrays)"),
    ("targets", "Targets"),
    ("matrix", "Matrix statements"),
    ("recovery", "Several errors at once"),
    ("warnings", "Warnings: likely typos (denied here, so they show as errors)"),
]


def title(path):
    words = re.split(r"[-_]", path.stem)
    return " ".join(words).capitalize()


def trimmed(stderr, source_name):
    """The user-facing part of each error: header, location, underlined source and the notes
    tensor-dsl wrote; rustc's lists of implementing types and bound locations are dropped."""
    out = []
    skipping = False
    for line in stderr.replace(source_name, "src/main.rs").splitlines():
        if line.startswith("error"):
            skipping = False
        elif re.match(r"^(help|note):", line) or line.startswith("  = help:"):
            skipping = True
            continue
        elif line.startswith("  = note:"):
            skipping = "originates in the macro" in line or "required for" in line
            if skipping:
                continue
        elif skipping and (line.startswith(" ") or line.startswith("...")):
            continue
        elif skipping and line == "":
            skipping = False
        if not skipping:
            out.append(line)
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render():
    lines = [
        "# Compile-time errors",
        "",
        "Every mistake `tensor!` can see at compile time, with the message rustc prints for it",
        "(rustc 1.95). All errors of a block are reported in one build, each on the tokens at",
        "fault; the run-time shape errors are described on [`ShapeError`](crate::ShapeError).",
        "This page is generated from the compile-fail tests by `docs/compile_errors.py`.",
        "",
    ]
    for folder, heading in SECTIONS:
        # Cases whose messages list every operand type live under ui_default/ (they are
        # checked without optional features); they share the sections of ui/.
        cases = sorted(
            (ROOT / "tests" / "ui" / folder).glob("*.rs")
        ) + sorted((ROOT / "tests" / "ui_default" / folder).glob("*.rs"))
        if not cases:
            continue
        lines += [f"## {heading}", ""]
        for case in cases:
            source = case.read_text().strip()
            stderr = case.with_suffix(".stderr").read_text()
            relative = case.relative_to(ROOT).as_posix()
            lines += [
                f"### {title(case)}",
                "",
                "```compile_fail",
                source,
                "```",
                "",
                "```text",
                trimmed(stderr, relative).rstrip(),
                "```",
                "",
            ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            sys.exit(f"{OUTPUT.relative_to(ROOT)} is stale: run python3 docs/compile_errors.py")
        return
    OUTPUT.write_text(text)


if __name__ == "__main__":
    main()
