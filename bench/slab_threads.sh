#!/usr/bin/env bash
# bench/slab_threads.sh: threaded 96-byte churn, strata::magazine_cache against every Debian malloc.
#
#   bash bench/slab_threads.sh [BUILD_DIR] [ROUNDS]        (defaults: build/release, 3)
#
# Each malloc replaces malloc process-wide, so each runs in its own process under LD_PRELOAD;
# strata's contender runs in a process of its own without a preload. ROUNDS alternates the processes
# (glibc, mimalloc, ..., strata, then again) so drift on a shared machine hits everyone alike; the
# table shows the best (lowest) ns/item per contender over rounds, each round's figure being the mean
# over its 5 iterations (Google Benchmark reports one record per run).
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." >/dev/null && pwd)"
source "$root/bench/preload.sh"
build="${1:-$root/build/release}"
rounds="${2:-3}"
bin="$build/bench/strata_bench_slab_threads"
[[ -x "$bin" ]] || { echo "slab_threads.sh: $bin not built (--target strata_bench_slab_threads)" >&2; exit 2; }
lib=/usr/lib/x86_64-linux-gnu
out="$(mktemp -d -t strata-slab-threads.XXXXXX)"
trap 'rm -rf "$out"' EXIT

run() { # label preload filter
    local label="$1" so="$2" filter="$3" r="$4"
    if [[ -n "$so" && ! -e "$so" ]]; then echo "$label: $so missing, skipped" >&2; return; fi
    if [[ -n "$so" ]] && ! strata_replaces_malloc "$so"; then
        echo "$label: $so does not replace malloc under LD_PRELOAD, skipped" >&2
        return
    fi
    LD_PRELOAD="$so" "$bin" --benchmark_filter="$filter" --benchmark_format=json \
        --benchmark_out="$out/$label.$r.json" --benchmark_out_format=json >/dev/null
}
for r in $(seq 1 "$rounds"); do
    run glibc "" '^malloc/' "$r"
    run mimalloc "$lib/libmimalloc.so.2" '^malloc/' "$r"
    run jemalloc "$lib/libjemalloc.so.2" '^malloc/' "$r"
    run tcmalloc "$lib/libtcmalloc_minimal.so.4" '^malloc/' "$r"
    run tbbmalloc "$lib/libtbbmalloc_proxy.so.2" '^malloc/' "$r"
    run strata "" '^slab_magazines/' "$r"
done

python3 - "$out" <<'EOF'
import glob, json, os, sys
best = {}  # (label, workload) -> ns per item
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    label = os.path.basename(path).split(".")[0]
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        work = b["name"].split("/", 1)[1].split("/manual_time")[0].rsplit("/iterations", 1)[0]
        ns = 1e9 / b["items_per_second"]
        key = (label, work)
        best[key] = min(best.get(key, ns), ns)
labels = ["strata", "glibc", "mimalloc", "jemalloc", "tcmalloc", "tbbmalloc"]
works = sorted({w for _, w in best})
print("| workload | " + " | ".join(l + (" (magazines)" if l == "strata" else "") for l in labels)
      + " | strata / fastest malloc |")
print("|---" * (len(labels) + 2) + "|")
for w in works:
    row = [best.get((l, w)) for l in labels]
    mallocs = [v for l, v in zip(labels, row) if l != "strata" and v is not None]
    ratio = row[0] / min(mallocs) if row[0] and mallocs else None
    cells = [f"{v:.2f}" if v is not None else "-" for v in row]
    print(f"| {w} | " + " | ".join(cells) + (f" | {ratio:.2f}x |" if ratio else " | - |"))
print("\nns per item (own: per free+allocate pair over both threads; xfer: per object handed over),"
      " the best over rounds of each process's mean over its 5 iterations.")
EOF
