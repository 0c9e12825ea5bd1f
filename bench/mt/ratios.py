#!/usr/bin/env python3
"""Markdown tables from strata-mt --jsonl output (bench/mt/peers.sh): per workload, ns per operation
with ratios to mimalloc and glibc, page faults per million operations, peak RSS with its ratio to
mimalloc; for phase, the RSS after growth, after the shrink and at the end; then a summary: per
workload, strata against the fastest peer and against mimalloc, and the geometric means over the
workloads of strata/mimalloc time and peak RSS.

When a (malloc, workload) pair has several lines (peers.sh ROUNDS=N), every figure is the median
over them, and the summary's ratios are medians of the per-round ratios (the k-th line of one malloc
against the k-th of the other: runs of one round are close in time, and this machine's speed drifts
between rounds).

    python3 bench/mt/ratios.py FILE.jsonl
"""
import json
import math
import statistics
import sys

FIGURES = ("ns_per_op", "ops_per_s", "faults_per_mop", "peak_rss_kib", "grown_rss_kib", "shrunk_rss_kib",
           "final_rss_kib")


def ratio(value, base):
    return f"{value / base:.2f}x" if base else "-"


def merged(rows):
    """One row per (workload, malloc), in first-seen order: medians over the rounds."""
    groups = {}
    for r in rows:
        groups.setdefault((r["workload"], r["malloc"]), []).append(r)
    out = []
    for rs in groups.values():
        m = dict(rs[0])
        m["rounds"] = len(rs)
        m["per_round"] = {f: [r[f] for r in rs] for f in ("ns_per_op", "peak_rss_kib") if f in rs[0]}
        for f in FIGURES:
            if f in m:
                m[f] = statistics.median(r[f] for r in rs)
        out.append(m)
    return out


def round_ratio(a, b, f):
    """Median over the rounds both have of a's figure f / b's (None when b has no such figure)."""
    if not a or not b:
        return None
    pairs = [(x, y) for x, y in zip(a["per_round"].get(f, []), b["per_round"].get(f, [])) if y]
    return statistics.median(x / y for x, y in pairs) if pairs else None


def fmt(r):
    return f"{r:.2f}x" if r is not None else "-"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(rows, workloads):
    if not any(r["malloc"] == "strata" for r in rows) or len({r["malloc"] for r in rows}) < 2:
        return  # nothing to compare strata with
    print("\n### summary: strata against the fastest peer and mimalloc (ratios: strata / peer; "
          "below 1x strata is faster or smaller)\n")
    print("| workload | strata ns/op | best peer | vs best peer | vs mimalloc | strata faults/1M ops "
          "| best peer's faults/1M ops | peak RSS vs mimalloc |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    times, rss = [], []
    for w in workloads:
        by = {r["malloc"]: r for r in rows if r["workload"] == w}
        st, mi = by.get("strata"), by.get("mimalloc")
        peers = [r for name, r in by.items() if name != "strata"]
        if not st or not peers:
            continue
        best = min(peers, key=lambda r: r["ns_per_op"])
        vs_best = round_ratio(st, best, "ns_per_op")
        vs_mi, rss_mi = round_ratio(st, mi, "ns_per_op"), round_ratio(st, mi, "peak_rss_kib")
        if vs_mi:
            times.append(vs_mi)
        if rss_mi:
            rss.append(rss_mi)
        print(f"| {w} | {st['ns_per_op']:.1f} | {best['malloc']} | {fmt(vs_best)} | {fmt(vs_mi)} "
              f"| {st['faults_per_mop']:.1f} | {best['faults_per_mop']:.1f} | {fmt(rss_mi)} |")
    gt, gr = geomean(times), geomean(rss)
    if gt is not None:
        print(f"\ngeometric mean over {len(times)} workloads: strata/mimalloc time {gt:.2f}x"
              + (f", peak RSS {gr:.2f}x ({len(rss)} workloads)" if gr is not None else ""))


def main() -> int:
    rows = merged([json.loads(line) for line in open(sys.argv[1]) if line.strip()])
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    for w in workloads:
        rs = [r for r in rows if r["workload"] == w]
        by = {r["malloc"]: r for r in rs}
        mi, gl = by.get("mimalloc"), by.get("glibc")
        t = rs[0]
        rounds = max(r["rounds"] for r in rs)
        over = f"median of {t['repeats']}" + (f", median over {rounds} rounds" if rounds > 1 else "")
        print(f"\n### {w}: {t['threads']} threads x {t['ops_per_thread']:,} ops, {over} "
              f"(ns/op: lower is better; ratios: this / peer)\n")
        print("| malloc | ns/op | vs mimalloc | vs glibc | Mops/s | faults/1M ops | peak RSS MiB | RSS vs mimalloc |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in sorted(rs, key=lambda r: r["ns_per_op"]):
            print(f"| {r['malloc']} | {r['ns_per_op']:.1f} | {ratio(r['ns_per_op'], mi and mi['ns_per_op'])} "
                  f"| {ratio(r['ns_per_op'], gl and gl['ns_per_op'])} | {r['ops_per_s'] / 1e6:.2f} "
                  f"| {r['faults_per_mop']:.1f} | {r['peak_rss_kib'] / 1024:.1f} "
                  f"| {ratio(r['peak_rss_kib'], mi and mi['peak_rss_kib'])} |")
        if "final_rss_kib" in t:
            print(f"\n{w}: RSS in MiB after growing to {t.get('phase_mib', '?')} MiB, after freeing 90%, and "
                  f"after the idle frames (end_frame: strata_malloc_end_frame was called each frame)\n")
            print("| malloc | grown | shrunk | final | final vs mimalloc | end_frame |")
            print("| --- | ---: | ---: | ---: | ---: | --- |")
            for r in sorted(rs, key=lambda r: r["final_rss_kib"]):
                print(f"| {r['malloc']} | {r['grown_rss_kib'] / 1024:.1f} | {r['shrunk_rss_kib'] / 1024:.1f} "
                      f"| {r['final_rss_kib'] / 1024:.1f} "
                      f"| {ratio(r['final_rss_kib'], mi and mi['final_rss_kib'])} "
                      f"| {'yes' if r.get('end_frame') else 'no'} |")
    summary(rows, workloads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
