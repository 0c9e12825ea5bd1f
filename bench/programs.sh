#!/usr/bin/env bash
# bench/programs.sh: wall time and peak RSS of real Debian programs (the tests/programs workloads:
# a sqlite3 script, a python3 workload, git on a generated repository, a g++ compile, Berkeley ABC
# synthesizing a multiplier, z3 solving a bit-vector puzzle, a bash script of short processes, a
# Ruby script and a Lua script) under glibc,
# mimalloc, tcmalloc, jemalloc, tbbmalloc and libstrata_malloc.so, with ratios to mimalloc.
#
#   bash bench/programs.sh [BUILD_DIR]      (default BUILD_DIR: build/release)
#
# Environment:
#   RUNS=5                     runs per (program, malloc); the median wall time is reported
#   STRATA_SCALE=2             input size multiplier handed to tests/programs/gen/workload.sh
#   PROGRAMS="sqlite3 python3 git gxx abc z3 shell ruby lua convert"   which workloads
#   MALLOCS="glibc mimalloc tcmalloc jemalloc tbbmalloc strata"   which mallocs
#   STRATA_MALLOC=path         libstrata_malloc.so (default: the first one under BUILD_DIR)
# Runs are interleaved (run 1 of every malloc, then run 2, ...) so a burst of load on a shared
# machine hits all mallocs alike. Wall time is the whole `workload.sh NAME run` (the program plus a
# bash wrapper of a few milliseconds); peak RSS is the largest ru_maxrss of any process in the run's
# tree (through /usr/bin/time, see below), i.e. of the program itself, not a sum. CPU time (user + sys of the whole tree) is
# printed too: on a loaded machine it moves less than wall time. Every run's output is compared with glibc's:
# a malloc that changes a program's output is reported as DIFF (the test suite's check, again).
# Targets: wall <= 1.05x mimalloc's, peak RSS <= 1.2x mimalloc's.
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." >/dev/null && pwd)"
build="${1:-$root/build/release}"
lib=/usr/lib/x86_64-linux-gnu
strata="${STRATA_MALLOC:-$(find "$build" -name 'libstrata_malloc.so*' -type f 2>/dev/null | sort | head -n 1)}"
[[ -z "$strata" ]] || strata="$(realpath "$strata")" # the programs run in their own directories
work="$(mktemp -d -t strata-programs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export STRATA_SCALE="${STRATA_SCALE:-2}"
source "$root/bench/preload.sh"

# A library ld.so cannot preload is ignored with a warning, and the program then runs on glibc
# under the peer's name: keep only the ones that really bind malloc (a missing one is reported
# below, by name).
peers=("glibc=")
for peer in "mimalloc=$lib/libmimalloc.so.2" "tcmalloc=$lib/libtcmalloc_minimal.so.4" \
    "jemalloc=$lib/libjemalloc.so.2" "tbbmalloc=$lib/libtbbmalloc_proxy.so.2" "strata=$strata"; do
    so="${peer#*=}"
    if [[ -n "$so" && -e "$so" ]] && ! strata_replaces_malloc "$so"; then
        echo "== ${peer%%=*}: $so does not replace malloc under LD_PRELOAD, skipped"
        continue
    fi
    peers+=("$peer")
done

/usr/bin/python3 - "$root/tests/programs/gen/workload.sh" "$work" "${RUNS:-5}" \
    "${PROGRAMS:-sqlite3 python3 git gxx abc z3 shell ruby lua convert}" "${MALLOCS:-glibc mimalloc tcmalloc jemalloc tbbmalloc strata}" \
    "${peers[@]}" <<'PY'
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time

script, work, runs, programs, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split()
paths = dict(arg.split("=", 1) for arg in sys.argv[6:])
mallocs = []
for name in wanted:
    so = paths.get(name)
    if so is None and name in ("glibc", "mimalloc", "tcmalloc", "jemalloc", "tbbmalloc", "strata"):
        continue  # did not bind: said above
    if so is None or (name != "glibc" and (not so or not os.path.exists(so))):
        print(f"== {name}: {so or 'not built'} missing, skipped")
        continue
    mallocs.append((name, so))

# The programs a workload runs (SQLITE3=... etc. override them, as in workload.sh): one that is not
# installed is skipped with a line saying so, rather than failing the whole run.
binary = {"sqlite3": os.environ.get("SQLITE3", "sqlite3"), "python3": os.environ.get("PYTHON3", "/usr/bin/python3"),
          "git": os.environ.get("GIT", "git"), "gxx": os.environ.get("GXX", "g++"),
          "abc": os.environ.get("ABC", "berkeley-abc"), "z3": os.environ.get("Z3", "z3"), "shell": "bash",
          "ruby": os.environ.get("RUBY", "ruby"), "lua": os.environ.get("LUA", "lua5.4"),
          "convert": os.environ.get("CONVERT", "/usr/bin/convert-im6.q16")}
present = []
for program in programs:
    if program in binary and shutil.which(binary[program]) is None:
        print(f"== {program}: {binary[program]} is not installed, skipped")
        continue
    present.append(program)
programs = present


# A forked child starts with its parent's peak RSS (Linux copies the high-water mark at fork and
# keeps it across exec), so wait4 on a child of this python process would report at least python's
# own ~15 MiB. GNU time, a small C program, sits in between and reports its child tree's peak.
gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(program, so, log):
    env = dict(os.environ, STRATA_PRELOAD=so)
    cmd = ["bash", script, program, "run", f"{work}/{program}"]
    if gnu_time:
        cmd = [gnu_time, "-f", "%M", "-o", f"{log}.rss"] + cmd
    with open(log, "wb") as out:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{program} under {so or 'glibc'} failed (wait status {status}); output in {log}")
    rss = usage.ru_maxrss
    if gnu_time:
        with open(f"{log}.rss") as f:
            rss = int(f.read().split()[-1])
    with open(log, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return wall, usage.ru_utime + usage.ru_stime, rss, digest


print(f"scale {os.environ['STRATA_SCALE']}, {runs} runs each, interleaved; mallocs: "
      + ", ".join(f"{n} ({s or 'libc'})" for n, s in mallocs), flush=True)
results = {}
for program in programs:
    subprocess.run(["bash", script, program, "prepare", f"{work}/{program}"], check=True)
    reference = None
    for i in range(runs):
        for name, so in mallocs:
            wall, cpu, rss, digest = run(program, so, f"{work}/{program}.{name}.out")
            r = results.setdefault((program, name), {"wall": [], "cpu": [], "rss": [], "same": True})
            r["wall"].append(wall)
            r["cpu"].append(cpu)
            r["rss"].append(rss)
            if name == "glibc" or reference is None:
                reference = reference or digest
            r["same"] = r["same"] and digest == reference
        print(f"  {program}: run {i + 1}/{runs} done", flush=True)

names = [n for n, _ in mallocs]
for title, key, scale, unit in (("median wall time", "wall", 1, "s"), ("median CPU time, user + sys", "cpu", 1, "s"),
                                ("peak RSS", "rss", 1 / 1024, "MiB")):
    print(f"\n### Real programs: {title} ({unit}), ratio to mimalloc in parentheses\n")
    print("| program | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for program in programs:
        base = results.get((program, "mimalloc"))
        cells = []
        for n in names:
            r = results[(program, n)]
            v = statistics.median(r[key]) * scale
            cell = f"{v:.2f}" if unit == "s" else f"{v:.1f}"
            if base:
                cell += f" ({v / (statistics.median(base[key]) * scale):.2f}x)"
            cells.append(cell + ("" if r["same"] else " DIFF"))
        print(f"| {program} | " + " | ".join(cells) + " |")
if any(not r["same"] for r in results.values()):
    print("\nDIFF: that malloc changed the program's output (compared with the first malloc's run)")
    sys.exit(1)
PY
