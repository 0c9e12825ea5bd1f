#!/usr/bin/env bash
# bench/realtrace/peers.sh: recorded traces of real programs replayed through every malloc.
#
#   bash bench/realtrace/peers.sh [BUILD_DIR] [RUNS]        (defaults: build/release, 3)
#
# Traces: the lab's embedded OpenTTD server trace, plus two recorded here under libstrata_trace.so
# (sqlite3 running a generated script, python3 running a generated workload). Each is replayed by
# strata-replay-malloc under glibc, mimalloc, jemalloc, tcmalloc, tbbmalloc and libstrata_malloc.so
# (LD_PRELOAD); RUNS runs each, median time and median peak RSS. Prints a table with ratios vs
# mimalloc (target: peak RSS <= 1.2x mimalloc).
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." >/dev/null && pwd)"
source "$root/bench/preload.sh"
build="$(realpath "${1:-$root/build/release}")"
runs="${2:-3}"
bin="$build/bench/realtrace/strata-replay-malloc"
lab="$build/tools/lab/strata-lab"
for f in "$bin" "$lab"; do
    [[ -x "$f" ]] || { echo "peers.sh: $f not built (cmake --build $build --target strata-replay-malloc strata-lab)" >&2; exit 2; }
done
lib=/usr/lib/x86_64-linux-gnu
work="$(mktemp -d -t strata-realtrace.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# --- traces -------------------------------------------------------------------------------------
traces=("$root/tools/lab/data/openttd-server.st")
python3 - "$work/db.sql" <<'PY'
import random, sys
r = random.Random(7)
with open(sys.argv[1], "w") as f:
    f.write("create table t(id integer primary key, name text, v real, tag text);\nbegin;\n")
    for i in range(60000):
        f.write("insert into t(name, v, tag) values('%s', %f, '%s');\n" % (
            "n%08d" % r.randrange(10**8), r.random() * 1000, r.choice("abcdefgh") * r.randrange(1, 40)))
    f.write("commit;\ncreate index t_name on t(name);\ncreate index t_tag on t(tag, v);\n")
    f.write("select tag, count(*), avg(v) from t group by tag order by tag;\n")
    f.write("select a.name, b.name from t a join t b on a.tag = b.tag and a.id + 1 = b.id order by a.v limit 20;\n")
    f.write("update t set v = v * 2 where id % 3 = 0;\ndelete from t where id % 7 = 0;\nvacuum;\n")
PY
if command -v sqlite3 >/dev/null; then
    "$lab" record -o "$work/sqlite3.st" -- sqlite3 "$work/db.sqlite" ".read $work/db.sql" >/dev/null
    traces+=("$work/sqlite3.st")
fi
cat >"$work/work.py" <<'PY'
import json, re, random
r = random.Random(11)
docs = [{"id": i, "name": "item%05d" % i, "tags": [r.choice("xyzw") * r.randrange(1, 9) for _ in range(r.randrange(1, 6))],
         "score": r.random()} for i in range(40000)]
text = json.dumps(docs)
back = json.loads(text)
index = {}
for d in back:
    for t in d["tags"]:
        index.setdefault(t, []).append(d["id"])
words = re.findall(r"item\d+", text)
print(len(text), len(back), len(index), len(words), sum(len(v) for v in index.values()))
PY
# PYTHONMALLOC=malloc: CPython otherwise serves small objects from its own mmap arenas (pymalloc).
PYTHONMALLOC=malloc "$lab" record -o "$work/python3.st" -- /usr/bin/python3 "$work/work.py" >/dev/null
traces+=("$work/python3.st")

# --- the mallocs --------------------------------------------------------------------------------
declare -a names=(glibc mimalloc jemalloc tcmalloc tbbmalloc strata)
declare -A so=(
    [glibc]=""
    [mimalloc]="$lib/libmimalloc.so.2"
    [jemalloc]="$lib/libjemalloc.so.2"
    [tcmalloc]="$lib/libtcmalloc_minimal.so.4"
    [tbbmalloc]="$lib/libtbbmalloc_proxy.so.2"
    [strata]="$build/tools/malloc/libstrata_malloc.so"
)
out="$work/results.jsonl"
for t in "${traces[@]}"; do
    for name in "${names[@]}"; do
        s="${so[$name]}"
        if [[ -n "$s" && ! -e "$s" ]]; then echo "== $name: $s missing, skipped" >&2; continue; fi
        if [[ -n "$s" ]] && ! strata_replaces_malloc "$s"; then
            echo "== $name: $s does not replace malloc under LD_PRELOAD, skipped" >&2
            continue
        fi
        for ((i = 0; i < runs; ++i)); do
            LD_PRELOAD="$s" "$bin" "$t" --label "$name" >>"$out"
        done
    done
done

python3 - "$out" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(os.path.basename(r["trace"]), {}).setdefault(r["label"], []).append(r)
for trace, labels in by.items():
    first = next(iter(labels.values()))[0]
    print("\n### %s: %s ops, peak live %.1f MiB\n" % (trace, format(first["ops"], ","), first["peak_live_bytes"] / 2**20))
    print("| malloc | ns/op (writes included) | x mimalloc | peak RSS MiB | x mimalloc | page faults |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    med = {}
    for l, rs in labels.items():
        med[l] = (statistics.median(r["ns_per_op"] for r in rs),
                  statistics.median(r["peak_rss_kib"] for r in rs) / 1024,
                  statistics.median(r["minor_faults"] for r in rs))
    base = med.get("mimalloc")
    for l, (ns, rss, flt) in med.items():
        xr = "%.2f" % (ns / base[0]) if base else "-"
        xm = "%.2f" % (rss / base[1]) if base else "-"
        print("| %s | %.1f | %s | %.1f | %s | %d |" % (l, ns, xr, rss, xm, flt))
print("\npeak RSS is the whole process's (the replayer's tables and the trace decoder included, on the"
      "\nmalloc under test); ns/op includes writing every block once.")
PY
