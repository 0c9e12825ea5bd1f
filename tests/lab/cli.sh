#!/usr/bin/env bash
# strata-lab's answers to bad command lines: each must exit with its documented status and say why,
# never run with a silently changed value. Usage: tests/lab/cli.sh path/to/strata-lab
set -uo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
lab=${1:?usage: cli.sh path/to/strata-lab}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect STATUS PATTERN -- ARGS...: runs the lab, checks the exit status and that stderr matches.
expect() {
    local want=$1 pattern=$2
    shift 3
    "$lab" "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [[ $got -ne $want ]] || { [[ -n $pattern ]] && ! grep -qE -- "$pattern" "$work/err"; }; then
        echo "FAIL: strata-lab $* -> status $got (want $want), stderr:"
        sed 's/^/    /' "$work/err" | head -5
        failures=$((failures + 1))
    else
        echo "ok   strata-lab $*"
    fi
}

quick=(race --quick --workload w1 --only tlsf --latency-passes 0)
expect 2 "whole number" -- "${quick[@]}" --seed -1
expect 2 "whole number" -- "${quick[@]}" --seed 99999999999999999999999
expect 2 "whole number" -- "${quick[@]}" --seed 0x10
expect 0 "" -- "${quick[@]}" --seed 18446744073709551615
# Counts refuse the same forms before a trace is even opened (they wrapped: -1 meant "everything").
for bad in -1 0x10 1180591620717411303424; do
    expect 2 "a count is a whole number" -- replay no-such.st --max-ops "$bad"
    expect 2 "a count is a whole number" -- replay no-such.st --hold-ops "$bad"
done
expect 2 "a count is a whole number" -- run --warmup -1
expect 2 "no allocator matches" -- race --quick --workload w1 --only no-such-allocator
expect 2 "needs a file name" -- showdown --quick --json -

: >"$work/empty.json"
echo '{"other": 1}' >"$work/other.json"
expect 2 "not a race or replay --json document" -- report --from "$work/empty.json" -o "$work/r.html"
expect 2 "not a race or replay --json document" -- report --from "$work/other.json" -o "$work/r.html"
expect 2 "cannot read" -- report --from "$work/missing.json" -o "$work/r.html"
"$lab" "${quick[@]}" --json "$work/race.json" >/dev/null 2>&1
expect 0 "" -- report --from "$work/race.json" -o "$work/r.html"

# A streamed replay with no latency pass says so (it claimed "one latency pass").
trace="$(dirname "${BASH_SOURCE[0]}")/../../tools/lab/data/openttd-server.st"
if [[ -f $trace ]] && "$lab" replay "$trace" --stream --only tlsf --latency-passes 0 --max-ops 20000 \
    >"$work/out" 2>"$work/err"; then
    if grep -q "no latency pass" "$work/out" && ! grep -q "one latency pass" "$work/out"; then
        echo "ok   strata-lab replay --stream --latency-passes 0 says there is no latency pass"
    else
        echo "FAIL: strata-lab replay --stream --latency-passes 0 does not say there is no latency pass"
        failures=$((failures + 1))
    fi
elif [[ -f $trace ]] && ! grep -q "without trace support" "$work/err"; then
    echo "FAIL: strata-lab replay --stream failed:"
    sed 's/^/    /' "$work/err" | head -5
    failures=$((failures + 1))
fi

if [[ $failures -ne 0 ]]; then
    echo "strata-lab command-line checks: $failures failed"
    exit 1
fi
echo "strata-lab command-line checks: ok"
