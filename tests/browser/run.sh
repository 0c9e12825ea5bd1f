#!/bin/sh
# Browser test of a strata-lab HTML report: tests/browser/run.sh REPORT.html [SCREENSHOT.png]
# Needs node (>= 18), npm and Debian's chromium (/usr/bin/chromium, or CHROMIUM=...); downloads no browser.
set -eu
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
if [ $# -lt 1 ]; then
    echo "usage: $0 REPORT.html [SCREENSHOT.png]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" >/dev/null && pwd)
report=$(realpath "$1")
shot=${2:-${SCREENSHOT:-build/report-screenshot.png}}
case "$shot" in /*) ;; *) shot="$(pwd)/$shot" ;; esac
if [ ! -d "$here/node_modules/playwright-core" ]; then
    export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
    if [ -f "$here/package-lock.json" ]; then
        (cd "$here" && npm ci --no-audit --no-fund)
    else
        (cd "$here" && npm install --no-audit --no-fund)
    fi
fi
exec node "$here/report.test.mjs" "$report" "$shot"
