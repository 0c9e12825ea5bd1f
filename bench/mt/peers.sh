#!/usr/bin/env bash
# bench/mt/peers.sh: strata-mt's multi-threaded workloads under every Debian malloc and under
# libstrata_malloc.so, one process per (malloc, workload) so each peak RSS is that workload's alone.
#
#   bash bench/mt/peers.sh [BUILD_DIR] [strata-mt args...]      (default BUILD_DIR: build/release)
#   MT_WORKLOADS=suite ROUNDS=3 bash bench/mt/peers.sh           (the whole suite, three rounds)
#
# Environment: STRATA_MALLOC=path overrides where libstrata_malloc.so is looked for (default: the
# first libstrata_malloc.so* under BUILD_DIR). MT_WORKLOADS picks the workloads, separated by spaces
# or commas (default "local prodcons larson"); any strata-mt workload goes, and three names expand:
# "default" (local prodcons larson), "suite" (every workload but growbuf and phase: local prodcons handoff
# larson relay big tight falseshare threadchurn bigloop realloc leaky trickle xchurn32k tilesim rts) and
# "all" (suite + growbuf + phase; growbuf takes mimalloc about 2.5 minutes at five repeats).
# A --workload LIST among the strata-mt args is taken the same way (it wins over MT_WORKLOADS).
# ROUNDS=N (default 1) runs the whole set N times, interleaved: round by round, each round's malloc
# order rotated by one, and the tables report the medians over the rounds.
# Output: strata-mt's lines as they come, then ratio tables (bench/mt/ratios.py): ns/op and peak
# RSS relative to mimalloc and glibc, page faults per million operations, and a summary of strata
# against the best peer and mimalloc per workload.
# MT_JSONL=path keeps a copy of strata-mt's JSONL (one line per run; else a temporary file, removed at
# exit), e.g. for `strata-lab report --rss path` after MT_WORKLOADS=phase (docs/lab-report.md).
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." >/dev/null && pwd)"
source "$root/bench/preload.sh"
build="${1:-$root/build/release}"
shift || true
bin="$build/bench/mt/strata-mt"
[[ -x "$bin" ]] || { echo "peers.sh: $bin not built (cmake --build --preset release --target strata-mt)" >&2; exit 2; }
lib=/usr/lib/x86_64-linux-gnu
strata="${STRATA_MALLOC:-$(find "$build" -name 'libstrata_malloc.so*' -type f 2>/dev/null | sort | head -n 1)}"
[[ -z "$strata" ]] || strata="$(realpath "$strata")"
out="$(mktemp -t strata-mt.XXXXXX.jsonl)"
trap 'rm -f "$out"' EXIT

# The workload list: --workload among the args, else MT_WORKLOADS; the group names expanded.
wanted="${MT_WORKLOADS:-default}"
args=()
while (($#)); do
    case "$1" in
    --workload) [[ $# -ge 2 ]] || { echo "peers.sh: --workload needs a value" >&2; exit 2; }
        wanted="$2"; shift 2 ;;
    --workload=*) wanted="${1#--workload=}"; shift ;;
    *) args+=("$1"); shift ;;
    esac
done
suite="local prodcons handoff larson relay big tight falseshare threadchurn bigloop realloc leaky trickle xchurn32k tilesim rts"
workloads=()
for w in ${wanted//,/ }; do
    case "$w" in
    default) workloads+=(local prodcons larson) ;;
    suite) workloads+=($suite) ;;
    all) workloads+=($suite growbuf phase) ;;
    *) workloads+=("$w") ;;
    esac
done
rounds="${ROUNDS:-1}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "peers.sh: ROUNDS must be a positive integer" >&2; exit 2; }

names=(glibc mimalloc jemalloc tcmalloc tbbmalloc strata)
declare -A peers=(
    [glibc]=""
    [mimalloc]="$lib/libmimalloc.so.2"
    [jemalloc]="$lib/libjemalloc.so.2"
    [tcmalloc]="$lib/libtcmalloc_minimal.so.4"
    [tbbmalloc]="$lib/libtbbmalloc_proxy.so.2"
    [strata]="$strata"
)
for ((round = 0; round < rounds; ++round)); do
    ((rounds == 1)) || echo "== round $((round + 1)) of $rounds"
    # This round's malloc order: the list rotated by the round number.
    order=("${names[@]:round % ${#names[@]}}" "${names[@]:0:round % ${#names[@]}}")
    for w in "${workloads[@]}"; do
        for name in "${order[@]}"; do
            so="${peers[$name]}"
            if [[ "$name" != glibc && ( -z "$so" || ! -e "$so" ) ]]; then
                echo "== $name: ${so:-libstrata_malloc.so (not built)} missing, skipped"
                continue
            fi
            if [[ -n "$so" ]] && ! strata_replaces_malloc "$so"; then
                echo "== $name: $so does not replace malloc under LD_PRELOAD, skipped"
                continue
            fi
            LD_PRELOAD="$so" "$bin" --workload "$w" --label "$name" --jsonl "$out" "${args[@]}" | tail -n +2
        done
    done
done
if [[ -n "${MT_JSONL:-}" ]]; then
    cp "$out" "$MT_JSONL"
    echo "peers.sh: the JSONL is in $MT_JSONL"
fi
echo
python3 "$root/bench/mt/ratios.py" "$out"
