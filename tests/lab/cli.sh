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

# check WHAT COMMAND...: runs a shell check (status 0 = holds) and reports it.
check() {
    local what=$1
    shift
    if "$@"; then
        echo "ok   $what"
    else
        echo "FAIL: $what"
        failures=$((failures + 1))
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
expect 2 "no allocator matches" -- race --quick --workload w1 --only no-such-allocator
expect 2 "needs a file name" -- showdown --quick --json -

# A shared option a command does not use is refused, naming both (an ignored option would run the
# command with a value other than the one given).
for opt in "--seed 5" "--only malloc" "--workload w1" "--scale 2" "--latency-passes 1" --list; do
    expect 2 "layout does not use ${opt%% *}" -- layout --entities 1000 $opt
done
for opt in "--only malloc" "--workload w1" "--scale 2" "--latency-passes 1" --list; do
    expect 2 "showdown does not use ${opt%% *}" -- showdown --quick --set 1 $opt
done
expect 2 "replay does not use --seed" -- replay no-such.st --seed 3
expect 2 "versus-malloc does not use --only" -- versus-malloc --only malloc
expect 2 "report does not use --json" -- report --quick --json "$work/x.json" -o "$work/x.html"
expect 2 "report --from does not use --only" -- report --from "$work/missing.json" --only malloc
expect 2 "report --from does not use --workload" -- report --from "$work/missing.json" --workload w1
# ... and one that applies is used: layout --repeats sets its runs (best of N).
"$lab" layout --entities 1000 --repeats 7 >"$work/out" 2>/dev/null
check "layout --repeats 7 runs each loop 7 times" grep -q "best of 7 runs" "$work/out"
"$lab" layout --quick --entities 1000 >"$work/out" 2>/dev/null
check "layout --quick alone: best of 2 runs" grep -q "best of 2 runs" "$work/out"

# The layout verdict and caption are computed: one entity loads one line either way (it said
# "SoA loads 1x fewer bytes"; the caption always said "SoA 1").
"$lab" layout --entities 1 >"$work/out" 2>/dev/null
check "layout --entities 1: SoA loads as many bytes as AoS" \
    grep -q "touch-one-field: SoA loads as many bytes as AoS and runs" "$work/out"
"$lab" layout --entities 1 --json - >"$work/out" 2>/dev/null
check "layout --entities 1: caption says SoA 16 loaded bytes per used byte" \
    grep -q "touch-one-field: AoS 16, SoA 16\." "$work/out"
"$lab" layout --entities 16 --json - >"$work/out" 2>/dev/null
check "layout --entities 16: caption says SoA 1 loaded byte per used byte" \
    grep -q "touch-one-field: AoS 16, SoA 1\." "$work/out"
"$lab" layout --entities 17 >"$work/out" 2>/dev/null
check "layout --entities 17: SoA loads 8.50x fewer bytes" grep -q "SoA loads 8.50x fewer bytes than AoS" "$work/out"

# run is the race on frame_scratch alone.
"$lab" run --quick --only arena --latency-passes 0 >"$work/out" 2>/dev/null
check "run races frame_scratch alone" \
    bash -c "grep -q '^== frame_scratch' '$work/out' && ! grep -q '^== bimodal' '$work/out'"

# showdown: the 32-byte particle has no seed columns (the seed measured only the 24-byte one), and
# the header names the AoS-vs-SoA pass's own run count (at least 3).
"$lab" showdown --quick --set 1 >"$work/sd.txt" 2>/dev/null
no_published_for_padded() {
    awk '/particle 32 B/ { p = 1 } p && /^\| design/ { print; exit }' "$work/sd.txt" >"$work/head32"
    [[ -s $work/head32 ]] && ! grep -q "pub\." "$work/head32" &&
        awk '/particle 24 B/ { p = 1 } p && /^\| design/ { print; exit }' "$work/sd.txt" | grep -q "pub. churn"
}
check "showdown: no published columns beside the 32-byte particle" no_published_for_padded
check "showdown --quick: the header says AoS vs SoA is best of 3" \
    grep -q "best of 1 run (AoS vs SoA: best of 3)" "$work/sd.txt"

: >"$work/empty.json"
echo '{"other": 1}' >"$work/other.json"
expect 2 "not a race or replay --json document" -- report --from "$work/empty.json" -o "$work/r.html"
expect 2 "not a race or replay --json document" -- report --from "$work/other.json" -o "$work/r.html"
expect 2 "cannot read" -- report --from "$work/missing.json" -o "$work/r.html"
"$lab" "${quick[@]}" --json "$work/race.json" >/dev/null 2>&1
expect 0 "" -- report --from "$work/race.json" -o "$work/r.html"

# report --rss: strata-mt --jsonl's phase lines become the "RSS over time" section (other workloads'
# lines are skipped); a file that is missing, not JSON lines, or without a phase line is refused
# before anything races.
cat >"$work/phase.jsonl" <<'EOF'
{"malloc":"glibc","workload":"local","threads":4,"ns_per_op":20.5,"peak_rss_kib":4000}
{"malloc":"glibc","workload":"phase","threads":1,"phase_mib":64,"grown_rss_kib":68000,"shrunk_rss_kib":60000,"rss_frames_kib":[60000,59000,58000],"final_rss_kib":58000,"end_frame":false}

{"malloc":"strata","workload":"phase","threads":1,"phase_mib":64,"grown_rss_kib":67000,"shrunk_rss_kib":30000,"rss_frames_kib":[20000,12000,9000],"final_rss_kib":9000,"end_frame":true}
EOF
expect 0 "" -- report --quick --workload w1 --only tlsf --latency-passes 0 --rss "$work/phase.jsonl" -o "$work/rss.html"
expect 0 "" -- report --from "$work/race.json" --rss "$work/phase.jsonl" -o "$work/rss-from.html"
embeds_phase_lines() {
    grep -q '"rss":\[{"malloc":"glibc","workload":"phase".*{"malloc":"strata","workload":"phase"' "$1" &&
        grep -q "RSS over time (phase workload)" "$1" && ! grep -q '"workload":"local"' "$1"
}
check "report --rss embeds the phase lines (glibc, strata), not the others" embeds_phase_lines "$work/rss.html"
check "report --from --rss embeds the phase lines" embeds_phase_lines "$work/rss-from.html"
no_rss() { ! grep -q '"rss":' "$work/r.html"; }
check "report without --rss: no rss data" no_rss
echo 'malloc=glibc workload=phase' >"$work/notjson.jsonl"
echo '{"malloc":"glibc","workload":"phase","rss_frames_kib":[1,2' >"$work/cut.jsonl"
head -n 1 "$work/phase.jsonl" >"$work/nophase.jsonl"
expect 2 "report --rss: cannot read .*missing.jsonl" -- report --quick --workload w1 --rss "$work/missing.jsonl" -o "$work/x.html"
expect 2 "notjson.jsonl:1: not a JSON object" -- report --quick --workload w1 --rss "$work/notjson.jsonl" -o "$work/x.html"
expect 2 "cut.jsonl:1: not a JSON object" -- report --from "$work/race.json" --rss "$work/cut.jsonl" -o "$work/x.html"
expect 2 "no phase workload line" -- report --from "$work/race.json" --rss "$work/nophase.jsonl" -o "$work/x.html"

# replay --max-ops 0 replayed nothing and printed a result for it (0 ops, ns/op 0.0, frag 0%).
expect 2 "must be at least 1" -- replay no-such.st --max-ops 0

# Every --workload is checked before anything races (w1 raced, then 'nosuch' threw its results away).
expect 2 "unknown workload 'nosuch'" -- race --quick --workload bimodal --workload nosuch --only malloc
nothing_raced() { ! grep -q "== bimodal" "$work/out"; }
check "an unknown workload stops the race before the first one runs" nothing_raced
# A repeated --workload is raced once.
"$lab" race --quick --workload bimodal --workload w3 --workload bimodal --only malloc --json - >"$work/dup.json" 2>/dev/null
raced_once() {
    [[ $(grep -o '"name":"bimodal"' "$work/dup.json" | wc -l) -eq 1 ]] &&
        grep -q '"name":"bimodal".*"name":"w3"' "$work/dup.json"
}
check "a repeated --workload is raced once, in the order first given" raced_once

# --quick lowers only the defaults: given values win (race overrode them with 1, 1, 0.05).
knobs=(--workload bimodal --only malloc --scale 0.01 --seed 7 --repeats 2 --latency-passes 2)
# ran_with TITLE PASSES: the race JSON in $work/knobs.json names these knobs in its title, and its
# rows ran PASSES latency passes.
ran_with() { grep -q "$1" "$work/knobs.json" && grep -q "\"passes\":$2," "$work/knobs.json"; }
"$lab" race --quick "${knobs[@]}" --json - >"$work/knobs.json" 2>/dev/null
check "race --quick keeps an explicit --scale, --seed, --repeats, --latency-passes" \
    ran_with "scale 0.01, seed 7, repeats 2, latency passes 2" 2
"$lab" race --quick --workload bimodal --only malloc --json - >"$work/knobs.json" 2>/dev/null
check "race --quick alone: scale 0.05, one pass of each kind" \
    ran_with "scale 0.05, seed 42, repeats 1, latency passes 1" 1
# The default race runs at scale 0.5, --full at 1; --full and --quick exclude each other, and
# commands without a scale refuse --full. The JSON ends with the summary (strata vs malloc vs peer).
"$lab" race --workload bimodal --only 'malloc,size_class,*malloc' --repeats 1 --latency-passes 1 \
    --json - >"$work/knobs.json" 2>/dev/null
check "race alone: scale 0.5" ran_with "scale 0.5, seed 42" 1
has_summary() { grep -q '"summary":\[{"workload":"bimodal","strata":"size_class"' "$work/knobs.json"; }
check "race --json: a summary row per workload" has_summary
"$lab" race --full --workload bimodal --only malloc --repeats 1 --latency-passes 1 --json - \
    >"$work/knobs.json" 2>/dev/null
check "race --full: scale 1" ran_with "scale 1, seed 42" 1
expect 2 "excludes" -- race --full --quick --workload bimodal --only malloc
expect 2 "replay does not use --full" -- replay --full "$work/none.st"
"$lab" race --quick --workload w1 --only '*' >"$work/out" 2>/dev/null
one_skip_line() { [[ $(grep -c "skipped" "$work/out") -le 1 ]]; }
check "race: the skipped allocators of a workload on one line" one_skip_line
# report passes them on to its race (it took and ignored them).
"$lab" report --quick "${knobs[@]}" -o "$work/knobs.html" >/dev/null 2>&1
check "report passes --scale, --seed, --repeats, --latency-passes to its race" \
    grep -q "scale 0.01, seed 7, repeats 2, latency passes 2" "$work/knobs.html"

# The plots, checked in node (no browser): the histogram's axis and tooltips, "not measured"
# without latency data, log-scale bars (tests/lab/report_plots.mjs, tests/lab/report_fixture.json).
here="$(dirname "${BASH_SOURCE[0]}")"
if command -v node >/dev/null 2>&1; then
    "$lab" report --from "$here/report_fixture.json" -o "$work/fixture.html" >/dev/null 2>&1
    for page in "$work/fixture.html" "$work/r.html" "$work/knobs.html" "$work/rss.html" "$work/rss-from.html"; do
        check "report plots: $(basename "$page")" node "$here/report_plots.mjs" "$page"
    done
else
    echo "skip report plot checks (no node)"
fi

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

# replay --quick lowers only the defaults too (it capped an explicit --latency-passes at 1).
if [[ -f $trace ]] && "$lab" replay "$trace" --quick --latency-passes 2 --max-ops 2000 --only tlsf --json - \
    >"$work/knobs.json" 2>"$work/err"; then
    check "replay --quick keeps an explicit --latency-passes" ran_with "strata-lab replay" 2
elif [[ -f $trace ]] && ! grep -q "without trace support" "$work/err"; then
    echo "FAIL: strata-lab replay --quick failed:"
    sed 's/^/    /' "$work/err" | head -5
    failures=$((failures + 1))
fi

# A section header is not cut (a long trace name plus its recorded command line lost the line
# after it in a 256-byte buffer).
if [[ -f $trace ]]; then
    long="$work/$(printf 'openttd_server_recording_%.0s' 1 2 3 4 5 6)x.st"
    ln -s "$(realpath "$trace")" "$long"
    if "$lab" replay "$long" --max-ops 20000 --only tlsf --latency-passes 1 >"$work/out" 2>"$work/err"; then
        whole_header() {
            grep -q "^== $(basename "$long"): recorded: .*openttd" "$work/out" &&
                grep -q "^   20,000 memory ops, peak live" "$work/out"
        }
        check "a long trace name keeps its whole section header" whole_header
    elif ! grep -q "without trace support" "$work/err"; then
        echo "FAIL: strata-lab replay of a long trace name failed:"
        sed 's/^/    /' "$work/err" | head -5
        failures=$((failures + 1))
    fi
fi

if [[ $failures -ne 0 ]]; then
    echo "strata-lab command-line checks: $failures failed"
    exit 1
fi
echo "strata-lab command-line checks: ok"
