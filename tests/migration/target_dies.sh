#!/usr/bin/env bash
# target_dies.sh - the target of a migration killed (kill -9) while the
# buffers' bytes travel: the migration fails, saying so, and the
# application goes on with everything on the source (cases.c,
# --target-dies: a buffer of 512 MiB).
#   target_dies.sh VOCL_RUN VOCL_CTL CASES
set -uo pipefail
vocl_run=$1 ctl=$2 prog=$3
. "$(dirname "$0")/../reliability/common.sh"
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; cat "$tmp/out" "$tmp/err" 2>/dev/null | tail -n 20; exit 1; }
export VOCL_CTL_DIR=$tmp/ctl
mkdir -m 700 "$VOCL_CTL_DIR"

# Rank 0: the program; ranks 1 and 2: the proxies of its devices; rank 3: the spare.
# 512 MiB take about a second to move; a sanitizer's build (slower by
# VOCL_TEST_TIME_SCALE, and slower still at filling them) moves a share.
mib=$((512 / ${VOCL_TEST_TIME_SCALE:-1}))
"$vocl_run" -n 3 -d 1 --spare 1 -- "$prog" --target-dies "$mib" "$tmp" >"$tmp/out" 2>"$tmp/err" &
job=$!
await "$tmp/ready" 120 || fail "the program never got ready"
app=$(basename "$(find "$VOCL_CTL_DIR" -name '[0-9]*.sock' | head -n 1)" .sock)
spare=$(rank_pid 3 voclproxyd)
[ -n "$spare" ] || fail "no spare proxy (rank 3)"
"$ctl" migrate "$app" 0 2 >"$tmp/ans" 2>&1 &
asked=$!
sleep 0.2 # (the bytes take about a second)
kill -9 "$spare"
wait "$asked"
rc=$?
cat "$tmp/ans"
[ "$rc" = 1 ] && grep -q 'everything stays on proxy 0' "$tmp/ans" ||
    fail "the migration did not fail as it should (vocl-ctl's status $rc)"
touch "$tmp/go"
await_job 60 || fail "the job did not end"
wait "$job"
grep -q 'the source kept everything' "$tmp/out" || fail "the program did not go on on the source"
echo "the target died amid the migration; the program went on on the source"
