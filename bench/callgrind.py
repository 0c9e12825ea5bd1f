#!/usr/bin/env python3
"""Count instructions per allocation with valgrind --tool=callgrind.

    python3 bench/callgrind.py BUILD/bench/strata_bench [NAME ...] [--fills A B]

Uses strata_bench's count mode (`--strata_count=NAME --strata_fills=K`, see bench/main.cpp), which
runs exactly the loop the timed benchmark runs, K buffer fills, outside Google Benchmark. Two
numbers per benchmark, both in instructions (callgrind's Ir) per allocation:

  loop     Ir collected only inside the measured loop functions (--toggle-collect on alloc_loop,
           malloc_loop and free_loop, callees included: pmr's virtual do_allocate, malloc, free),
           for K=A fills, divided by A * allocations-per-fill.
  program  whole-process Ir for K=B fills minus Ir for K=A fills, divided by the extra allocations:
           start-up and set-up cancel out, the per-fill reset (arena::reset, release(), free) stays
           in, amortized, exactly as in the timed benchmark.

Default NAMEs: raw_bump, arena and pmr_monotonic on both request sequences. `--strata_list` on the
binary lists every name. Standard library only; needs valgrind on PATH.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

DEFAULT_NAMES = [
    "raw_bump/const32_a16",
    "arena/const32_a16",
    "pmr_monotonic/const32_a16",
    "raw_bump/var8-256_a8-16-64",
    "arena/var8-256_a8-16-64",
    "pmr_monotonic/var8-256_a8-16-64",
]
LOOP_FUNCTIONS = ["*alloc_loop<*", "*malloc_loop<*", "*free_loop*"]


def callgrind(binary, name, fills, loop_only, workdir):
    """Returns (Ir, allocations) for one run of the count mode."""
    out = os.path.join(workdir, "callgrind.out")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if loop_only:
        cmd += [f"--toggle-collect={f}" for f in LOOP_FUNCTIONS]
    cmd += [binary, f"--strata_count={name}", f"--strata_fills={fills}"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"callgrind.py: {' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    m = re.search(r"allocations=(\d+)", proc.stdout)
    if not m:
        sys.exit(f"callgrind.py: no allocation count in the output of {name}: {proc.stdout!r}")
    with open(out, encoding="utf-8") as f:
        text = f.read()
    t = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.MULTILINE)
    if not t:
        sys.exit(f"callgrind.py: no totals in {out}")
    os.remove(out)
    return int(t.group(1)), int(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", help="path to strata_bench")
    p.add_argument("names", nargs="*", help="benchmark names (default: raw_bump, arena, pmr_monotonic)")
    p.add_argument("--fills", nargs=2, type=int, default=[10, 30], metavar=("A", "B"),
                   help="buffer fills of the short and the long run (default 10 30)")
    args = p.parse_args()
    a, b = args.fills
    if not 0 < a < b:
        p.error("--fills needs 0 < A < B")

    print(f"instructions (callgrind Ir) per allocation; loop: {a} fills; program: ({b} - {a}) fills\n")
    print("| benchmark | allocations per fill | loop Ir/alloc | program Ir/alloc |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.names or DEFAULT_NAMES:
            loop_ir, loop_allocs = callgrind(args.binary, name, a, True, workdir)
            short_ir, short_allocs = callgrind(args.binary, name, a, False, workdir)
            long_ir, long_allocs = callgrind(args.binary, name, b, False, workdir)
            # From the difference of the two runs: a count mode may add a warm-up (the heap
            # kernels run 100,000 pairs first), which dividing one run by its fills would count.
            per_fill = (long_allocs - short_allocs) // (b - a)
            # A kernel with no function matching LOOP_FUNCTIONS collects nothing: say so, not 0.00.
            loop = f"{loop_ir / loop_allocs:.2f}" if loop_ir > 0 and loop_allocs > 0 else "-"
            program = (long_ir - short_ir) / (long_allocs - short_allocs)
            print(f"| {name} | {per_fill} | {loop} | {program:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
