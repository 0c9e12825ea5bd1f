#!/usr/bin/env bash
# How tools/lab/data/openttd-server.st was made: 12 seconds of an OpenTTD dedicated server (Debian
# package `openttd` + `openttd-opengfx`), a new game (default settings) from seed 1, recorded with
# strata's LD_PRELOAD recorder. SIGINT makes the server save nothing and exit cleanly, so the
# trace ends complete.
#
#   bash tools/lab/data/make-default-trace.sh [BUILD_DIR]      (default build/release)
set -euo pipefail
unset CDPATH # a cd into a relative path would echo it, or go elsewhere
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." >/dev/null && pwd)"
build="${1:-$root/build/release}"
out="$root/tools/lab/data/openttd-server.st"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
# A private HOME keeps the server from reading or writing the user's OpenTTD config and saves.
HOME="$home" timeout -s INT 12 "$build/tools/lab/strata-lab" record -o "$out" -- \
    /usr/games/openttd -D 127.0.0.1:39790 -g -G 1 -x -c "$home/openttd.cfg" || true
ls -l "$out"*
"$build/tools/trace/strata-trace-info" "$out"
