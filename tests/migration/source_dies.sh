#!/usr/bin/env bash
# source_dies.sh - the source of a migration killed (kill -9) while the
# buffers' bytes travel, with failover on: the migration ends, saying that
# the session went on on its target by failover, and the application goes
# on there with its buffer whole (cases.c --source-dies, 512 MiB).
#   source_dies.sh VOCL_RUN VOCL_CTL CASES
set -uo pipefail
vocl_run=$1 ctl=$2 prog=$3
. "$(dirname "$0")/../reliability/common.sh"
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; cat "$tmp/ans" "$tmp/out" "$tmp/err" 2>/dev/null | tail -n 20; exit 1; }
export VOCL_CTL_DIR=$tmp/ctl
mkdir -m 700 "$VOCL_CTL_DIR"

# Rank 0: the program; ranks 1 and 2: the proxies of its devices; rank 3:
# the spare, the migration's target.  (As target_dies.sh: 512 MiB take about
# a second to move, a sanitizer's build moves a share.)
mib=$((512 / ${VOCL_TEST_TIME_SCALE:-1}))
"$vocl_run" -n 3 -d 1 --spare 1 --failover -- "$prog" --source-dies "$mib" "$tmp" \
    >"$tmp/out" 2>"$tmp/err" &
job=$!
await "$tmp/ready" 120 || fail "the program never got ready"
app=$(basename "$(find "$VOCL_CTL_DIR" -name '[0-9]*.sock' | head -n 1)" .sock)
source=$(rank_pid 1 voclproxyd)
[ -n "$source" ] || fail "no proxy of rank 1"
"$ctl" migrate "$app" 0 2 >"$tmp/ans" 2>&1 &
asked=$!
sleep 0.2
kill -9 "$source"
wait "$asked"
rc=$?
cat "$tmp/ans"
grep -q '^ok objects=' "$tmp/ans" && fail "the migration ended before the kill: give it more bytes"
[ "$rc" = 0 ] && grep -q 'proxy 0 died amid the migration; its session went on on proxy 2 by failover' \
    "$tmp/ans" || fail "vocl-ctl did not say that the session went on on the target (status $rc)"
grep -q 'its session goes on on spare proxy 2 (rank 3)' "$tmp/err" ||
    fail "libvocl did not say where the session went on"
touch "$tmp/go"
await_job 120 || fail "the job did not end"
wait "$job" || fail "the job failed (status $?)"
grep -q 'cases: source-dies: the buffer went on whole' "$tmp/out" ||
    fail "the program did not go on whole on the target"
! grep -q 'nobody waits for' "$tmp/err" || fail "replies nobody waited for: the target mixed two sessions"
echo "the source died amid the migration; the session went on whole on the target"
