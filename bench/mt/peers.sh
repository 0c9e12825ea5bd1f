#!/usr/bin/env bash
# bench/mt/peers.sh: strata-mt's multi-threaded workloads under every Debian malloc and under
# libstrata_malloc.so, one process per (malloc, workload) so each peak RSS is that workload's alone.
#
#   bash bench/mt/peers.sh [BUILD_DIR] [strata-mt args...]      (default BUILD_DIR: build/release)
#
# Environment: STRATA_MALLOC=path overrides where libstrata_malloc.so is looked for (default: the
# first libstrata_malloc.so* under BUILD_DIR); MT_WORKLOADS="local prodcons larson" narrows the set.
# Output: strata-mt's lines as they come, then ratio tables (bench/mt/ratios.py): ns/op and peak
# RSS relative to mimalloc and glibc, page faults per million operations.
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

names=(glibc mimalloc jemalloc tcmalloc tbbmalloc strata)
declare -A peers=(
    [glibc]=""
    [mimalloc]="$lib/libmimalloc.so.2"
    [jemalloc]="$lib/libjemalloc.so.2"
    [tcmalloc]="$lib/libtcmalloc_minimal.so.4"
    [tbbmalloc]="$lib/libtbbmalloc_proxy.so.2"
    [strata]="$strata"
)
for w in ${MT_WORKLOADS:-local prodcons larson}; do
    for name in "${names[@]}"; do
        so="${peers[$name]}"
        if [[ "$name" != glibc && ( -z "$so" || ! -e "$so" ) ]]; then
            echo "== $name: ${so:-libstrata_malloc.so (not built)} missing, skipped"
            continue
        fi
        if [[ -n "$so" ]] && ! strata_replaces_malloc "$so"; then
            echo "== $name: $so does not replace malloc under LD_PRELOAD, skipped"
            continue
        fi
        LD_PRELOAD="$so" "$bin" --workload "$w" --label "$name" --jsonl "$out" "$@" | tail -n +2
    done
done
echo
python3 "$root/bench/mt/ratios.py" "$out"
