#!/usr/bin/env python3
"""Writes numpy's references for the corpus run in other element types: refs_complex.json
(every case over complex inputs, and every two-operand contraction with `conj` on each operand
in turn) and refs_integer.json (every case over integer inputs, exact). Needs numpy; the
committed files are what the tests read, so CI does not run this.

Integer runs skip the cases with a fractional coefficient (a compile error in an integer
statement). Complex operand number `p` is the real rule's operand `p` plus i times its operand `p + 64`;
integer operand `p` holds `((t·7919 + (p+1)·104729) mod 19) − 9` (tests/common/acceptance.rs
fills the tensors by the same rules). Results are computed in complex128 and int64 (wrapped to
int32 for the cases whose real dtype is f32, which run in i32).

    pip install numpy && python3 tests/acceptance/references.py
"""

import json
import pathlib

import numpy as np

from generate import two_operand_contraction, whole_coefficients

HERE = pathlib.Path(__file__).resolve().parent
FULL_LIMIT = 256
N_SAMPLES = 16
IMAGINARY_OFFSET = 64


def real_rule(shape, p):
    t = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    return (((t * 7919 + (p + 1) * 104729) % 1009) / 1009.0 - 0.5).reshape(shape)


def complex_rule(shape, p, single):
    re, im = real_rule(shape, p), real_rule(shape, p + IMAGINARY_OFFSET)
    if single:
        re, im = re.astype(np.float32), im.astype(np.float32)
    return re.astype(np.complex128) + 1j * im.astype(np.complex128)


def integer_rule(shape, p):
    t = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    return (((t * 7919 + (p + 1) * 104729) % 19) - 9).reshape(shape)


def evaluate(case, inputs, conj=None):
    """The case's value over `inputs` (name -> array), `conj` naming an operand to conjugate."""
    expr = case["expr"]
    value = lambda name: np.conj(inputs[name]) if name == conj else inputs[name]
    if isinstance(expr, str):
        names = case["operands"][: len(expr.split("->")[0].split(","))]
        result = np.einsum(expr, *[value(n) for n in names], optimize=False)
    else:
        result = 0
        for term in expr["terms"]:
            part = np.einsum(term["subscripts"], *[value(n) for n in term["operands"]], optimize=False)
            coef = float(term["coef"])
            result = result + (int(coef) if np.issubdtype(part.dtype, np.integer) else coef) * part
    if case["mode"] == "accumulate":
        result = inputs[case["accumulate_into"]] + result
    return np.asarray(result)


def summary(case_id, result, dtype):
    """The reference entry: every value, or samples plus sums for a large output."""
    flat = result.reshape(-1)
    entry = {"id": case_id, "dtype": dtype, "output_shape": list(result.shape), "n": int(flat.size)}
    if np.iscomplexobj(flat):
        entry["max_abs"] = float(np.abs(flat).max()) if flat.size else 0.0
        parts = {"re": flat.real, "im": flat.imag}
    else:
        parts = {"": flat}
    for suffix, values in parts.items():
        if values.dtype.kind == "i":
            values = values.astype(np.int64)
        key = (lambda name: f"{name}_{suffix}") if suffix else (lambda name: name)
        as_json = (lambda v: int(v)) if values.dtype.kind == "i" else (lambda v: float(v))
        if flat.size <= FULL_LIMIT:
            entry[key("values")] = [as_json(v) for v in values]
        else:
            positions = np.linspace(0, flat.size - 1, N_SAMPLES).astype(np.int64)
            entry[key("samples")] = [[int(i), as_json(values[i])] for i in positions]
            entry[key("sum")] = as_json(values.sum())
            entry[key("sum_sq")] = as_json((values * values).sum())
    return entry


def main():
    corpus = json.loads((HERE / "corpus.json").read_text())
    complex_cases, integer_cases = [], []
    for case in corpus:
        single = case["dtype"] == "f32"
        names, shapes = case["operands"], case["shapes"]
        inputs = {n: complex_rule(s, p, single) for p, (n, s) in enumerate(zip(names, shapes))}
        dtype = "c32" if single else "c64"
        complex_cases.append(summary(case["id"], evaluate(case, inputs), dtype))
        if two_operand_contraction(case):
            for position in range(2):
                conj = names[position]
                result = evaluate(case, inputs, conj)
                complex_cases.append(summary(f"{case['id']}.conj{position}", result, dtype))
        if not whole_coefficients(case):
            continue
        inputs = {n: integer_rule(s, p) for p, (n, s) in enumerate(zip(names, shapes))}
        result = evaluate(case, inputs)
        if single:
            result = result.astype(np.int32)
        integer_cases.append(summary(case["id"], result, "i32" if single else "i64"))
    header = {"generator": "tests/acceptance/references.py", "numpy": np.__version__}
    for name, cases in [("refs_complex.json", complex_cases), ("refs_integer.json", integer_cases)]:
        text = json.dumps({**header, "cases": cases}, separators=(",", ":"))
        (HERE / name).write_text(text + "\n")


if __name__ == "__main__":
    main()
