#!/usr/bin/env python3
"""Run strata_bench and print a markdown table of medians and ratios.

    python3 bench/ratios.py BUILD/bench/strata_bench [--repetitions N] [--filter REGEX]
                            [--min-time SECONDS] [--json-out FILE] [-- MORE BENCHMARK FLAGS]
    python3 bench/ratios.py --json-in FILE          # tabulate a saved run instead of running

For each benchmark `CONTENDER/SEQUENCE` the table shows the median nanoseconds per allocation over
N repetitions (from the median aggregate of items_per_second, one item = one allocation), the
coefficient of variation across repetitions, the ratio to the raw bump pointer on the same sequence
(time / raw time: 1.00 is the physical limit) and the speedup over std::pmr::monotonic_buffer_resource
(pmr time / time). Rows matching --targets (default: the plain arena) get PASS/FAIL against the
two goals: at most 1.05x the raw bump, at least 2x faster than pmr monotonic.

Standard library only. Exit status: 0, or 1 with --check when a target row FAILs (2 on errors).
"""
import argparse
import json
import re
import subprocess
import sys

RAW_LIMIT = 1.05  # arena time / raw bump time must not exceed this
PMR_SPEEDUP = 2.0  # pmr monotonic time / arena time must reach this


def run_benchmarks(args):
    cmd = [
        args.binary,
        "--benchmark_format=json",
        f"--benchmark_repetitions={args.repetitions}",
        "--benchmark_report_aggregates_only=true",
    ]
    if args.filter:
        cmd.append(f"--benchmark_filter={args.filter}")
    if args.min_time:
        cmd.append(f"--benchmark_min_time={args.min_time}")
    if args.interleave:
        cmd.append("--benchmark_enable_random_interleaving=true")
    cmd += args.extra
    print(f"running: {' '.join(cmd)}", file=sys.stderr)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"ratios.py: {args.binary} exited with status {proc.returncode}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            f.write(proc.stdout)
    return json.loads(proc.stdout)


def collect(report):
    """Returns {run_name: {"ns": median ns/alloc, "cv": cv fraction or None, "reps": n}}, errors."""
    rows, errors = {}, {}
    for b in report.get("benchmarks", []):
        name = b.get("run_name", b.get("name", "?"))
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        if b.get("run_type") != "aggregate":
            continue
        agg = b.get("aggregate_name")
        row = rows.setdefault(name, {"ns": None, "cv": None, "reps": b.get("repetitions")})
        ips = b.get("items_per_second")
        if ips is None:
            continue
        if agg == "median" and ips > 0:
            row["ns"] = 1e9 / ips
        elif agg == "cv":
            row["cv"] = ips  # a fraction: stddev / mean of items_per_second
    return {k: v for k, v in rows.items() if v["ns"] is not None}, errors


def split(name):
    contender, _, sequence = name.partition("/")
    return contender, sequence


def table(rows, errors, args, context):
    targets = re.compile(args.targets)
    out = []
    reps = sorted({r["reps"] for r in rows.values() if r["reps"]})
    cpu = context.get("num_cpus"), context.get("mhz_per_cpu")
    out.append(
        f"repetitions: {', '.join(map(str, reps)) or '?'} (medians), cpus: {cpu[0]} @ {cpu[1]} MHz (nominal), "
        f"library build: {context.get('library_build_type', '?')}, date: {context.get('date', '?')}"
    )
    out.append("")
    out.append(
        f"| benchmark | median ns/alloc | cv | × {args.raw} (time ratio) | speedup vs {args.pmr} "
        f"| ≤ {RAW_LIMIT:.2f}× raw | ≥ {PMR_SPEEDUP:.0f}× pmr |"
    )
    out.append("|---|---:|---:|---:|---:|:---:|:---:|")
    failed = False
    for seq in sorted({split(name)[1] for name in rows}):
        raw = rows.get(f"{args.raw}/{seq}")
        pmr = rows.get(f"{args.pmr}/{seq}")
        # The limit first, then the contenders by name (the order in the report depends on
        # random interleaving).
        names = sorted((n for n in rows if split(n)[1] == seq), key=lambda n: (split(n)[0] != args.raw, n))
        for name in names:
            r = rows[name]
            ns = r["ns"]
            cv = f"{100 * r['cv']:.1f}%" if r["cv"] is not None else "-"
            vs_raw = ns / raw["ns"] if raw else None
            vs_pmr = pmr["ns"] / ns if pmr else None
            ok_raw = ok_pmr = ""
            if targets.search(name):
                # A missing comparison row is a failure too (the run lost the row it is judged by).
                ok_raw = "FAIL (no raw row)" if vs_raw is None else ("PASS" if vs_raw <= RAW_LIMIT else "FAIL")
                ok_pmr = "FAIL (no pmr row)" if vs_pmr is None else ("PASS" if vs_pmr >= PMR_SPEEDUP else "FAIL")
                failed = failed or ok_raw.startswith("FAIL") or ok_pmr.startswith("FAIL")
            out.append(
                f"| {name} | {ns:.3f} | {cv} | "
                f"{'-' if vs_raw is None else f'{vs_raw:.3f}'} | "
                f"{'-' if vs_pmr is None else f'{vs_pmr:.2f}'} | {ok_raw} | {ok_pmr} |"
            )
    for name, msg in errors.items():
        out.append(f"| {name} | error: {msg} | | | | | |")
        # A target that could not run has not met its target: --check must not pass it.
        failed = failed or bool(targets.search(name))
    return "\n".join(out), failed


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", nargs="?", help="path to strata_bench")
    p.add_argument("--repetitions", "-n", type=int, default=9)
    p.add_argument("--filter", help="--benchmark_filter regex (default: all)")
    p.add_argument("--min-time", help="--benchmark_min_time per repetition (e.g. 0.2)")
    p.add_argument("--no-interleave", dest="interleave", action="store_false",
                   help="do not pass --benchmark_enable_random_interleaving=true")
    p.add_argument("--json-in", help="tabulate this saved JSON report instead of running")
    p.add_argument("--json-out", help="also save the raw JSON report here")
    p.add_argument("--raw", default="raw_bump", help="contender that is the physical limit")
    p.add_argument("--pmr", default="pmr_monotonic", help="contender for the pmr comparison")
    p.add_argument("--targets", default=r"^arena/", help="regex of rows judged PASS/FAIL")
    p.add_argument("--check", action="store_true", help="exit 1 when a target row fails")
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:  # everything after -- goes to the benchmark binary unchanged
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    args = p.parse_args(argv)
    args.extra = extra

    if args.json_in:
        with open(args.json_in, encoding="utf-8") as f:
            report = json.load(f)
    elif args.binary:
        report = run_benchmarks(args)
    else:
        p.error("give the strata_bench binary, or --json-in FILE")
    rows, errors = collect(report)
    if not rows:
        sys.exit("ratios.py: no median aggregates in the report (did the filter match anything?)")
    text, failed = table(rows, errors, args, report.get("context", {}))
    print(text)
    return 1 if (args.check and failed) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print(f"ratios.py: {e}", file=sys.stderr)
        sys.exit(2)
