#!/bin/sh
# Browser test of the live lab: tests/browser/live.sh URL|STRATA_LAB [SHOT_DIR]
#   URL          a running `strata-lab serve` (http://127.0.0.1:PORT/)
#   STRATA_LAB   the strata-lab binary: started here on a free port and stopped afterwards
#   SHOT_DIR     where the screenshots go (default build/release/live): <demo>.png and overview.png
# Runs every tests/browser/live*.test.mjs against that server.
# Needs node (>= 18), npm and Debian's chromium (/usr/bin/chromium, or CHROMIUM=...); downloads no browser.
set -eu
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
if [ $# -lt 1 ]; then
    echo "usage: $0 URL|STRATA_LAB [SHOT_DIR]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" >/dev/null && pwd)
target=$1
shots=${2:-build/release/live}
case "$shots" in /*) ;; *) shots="$(pwd)/$shots" ;; esac
if [ ! -d "$here/node_modules/playwright-core" ]; then
    export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
    if [ -f "$here/package-lock.json" ]; then
        (cd "$here" && npm ci --no-audit --no-fund)
    else
        (cd "$here" && npm install --no-audit --no-fund)
    fi
fi
server_pid=
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT INT TERM
case "$target" in
http://*|https://*) url=$target ;;
*)
    port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    log=$(mktemp)
    "$target" serve --port "$port" >"$log" 2>&1 &
    server_pid=$!
    url="http://127.0.0.1:$port/"
    i=0
    until node -e 'fetch(process.argv[1]+"api/info").then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$url"; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$server_pid" 2>/dev/null; then
            echo "live.sh: strata-lab serve did not start:" >&2
            cat "$log" >&2
            exit 1
        fi
        sleep 0.1
    done
    ;;
esac
# Every live*.test.mjs, one after the other against the same server: the demos (live.test.mjs) and
# each view's own file.
rc=0
for t in "$here"/live*.test.mjs; do
    echo "+ node $(basename "$t") $url"
    node "$t" "$url" "$shots" || rc=1
done
exit $rc
