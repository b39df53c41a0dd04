#!/usr/bin/env bash
# one_dies.sh - one end of a migration killed (kill -9) while the buffers'
# bytes travel (cases.c --target-dies / --source-dies: a buffer of 512 MiB).
#   one_dies.sh VOCL_RUN VOCL_CTL CASES target|source
# target: the migration fails, saying so, and the application goes on with
# everything on the source.  source (with failover on): the migration ends
# saying that the session went on on its target by failover, and the
# application goes on there with its buffer whole.
set -uo pipefail
vocl_run=$1 ctl=$2 prog=$3 which=$4
. "$(dirname "$0")/../reliability/common.sh"
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; cat "$tmp/ans" "$tmp/out" "$tmp/err" 2>/dev/null | tail -n 20; exit 1; }
export VOCL_CTL_DIR=$tmp/ctl
mkdir -m 700 "$VOCL_CTL_DIR"

# Rank 0: the program; ranks 1 and 2: the proxies of its devices; rank 3:
# the spare, the migration's target.  512 MiB take about a second to move
# (three with failover, through this process); a sanitizer's build (slower
# by VOCL_TEST_TIME_SCALE, and slower still at filling them) moves a share.
mib=$((512 / ${VOCL_TEST_TIME_SCALE:-1}))
case "$which" in
    target) opts=() victim_rank=3 ;;
    source) opts=(--failover) victim_rank=1 ;;
    *) echo "usage: one_dies.sh VOCL_RUN VOCL_CTL CASES target|source" >&2; exit 2 ;;
esac
"$vocl_run" -n 3 -d 1 --spare 1 "${opts[@]}" -- "$prog" "--$which-dies" "$mib" "$tmp" \
    >"$tmp/out" 2>"$tmp/err" &
job=$!
await "$tmp/ready" 120 || fail "the program never got ready"
app=$(basename "$(find "$VOCL_CTL_DIR" -name '[0-9]*.sock' | head -n 1)" .sock)
victim=$(rank_pid "$victim_rank" voclproxyd)
[ -n "$victim" ] || fail "no proxy of rank $victim_rank"
"$ctl" migrate "$app" 0 2 >"$tmp/ans" 2>&1 &
asked=$!
sleep 0.2
kill -9 "$victim"
wait "$asked"
rc=$?
cat "$tmp/ans"
grep -q '^ok objects=' "$tmp/ans" && fail "the migration ended before the kill: give it more bytes"
if [ "$which" = target ]; then
    [ "$rc" = 1 ] && grep -q 'everything stays on proxy 0' "$tmp/ans" ||
        fail "the migration did not fail as it should (vocl-ctl's status $rc)"
else
    [ "$rc" = 0 ] &&
        grep -q 'proxy 0 died amid the migration; its session went on on proxy 2 by failover' \
            "$tmp/ans" || fail "vocl-ctl did not say that the session went on on the target (status $rc)"
    grep -q 'its session goes on on spare proxy 2 (rank 3)' "$tmp/err" ||
        fail "libvocl did not say where the session went on"
fi
touch "$tmp/go"
await_job 120 || fail "the job did not end"
wait "$job" || fail "the job failed (status $?)"
if [ "$which" = target ]; then
    grep -q 'cases: target-dies: the source kept everything' "$tmp/out" ||
        fail "the program did not go on on the source"
    echo "the target died amid the migration; the program went on on the source"
else
    grep -q 'cases: source-dies: the buffer went on whole' "$tmp/out" ||
        fail "the program did not go on whole on the target"
    ! grep -q 'nobody waits for' "$tmp/err" ||
        fail "replies nobody waited for: the target mixed two sessions"
    echo "the source died amid the migration; the session went on whole on the target"
fi
