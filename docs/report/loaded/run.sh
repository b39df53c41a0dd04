#!/bin/sh
# The migration, reliability and daemon suites beside a CPU hog (issue 61):
# stress-ng keeps every core busy while meson runs each suite ROUNDS times.
# A test that depends on when a kill lands, or on a sleep, fails here.
#
#   docs/report/loaded/run.sh [BUILD_DIR] [ROUNDS] [SUITE...]   (as root:
#   the daemon suite makes users of its own; SUITEs: those three)
set -u
build=${1:-build}
rounds=${2:-5}
shift 2 2>/dev/null || shift $#
suites=${*:-migration reliability daemon}
here=$(dirname "$0")
commit=$(git rev-parse --short HEAD)
out=$here/results-$commit.txt
command -v stress-ng >/dev/null || { echo "run.sh: needs stress-ng (apt-get install stress-ng)" >&2; exit 2; }

stress-ng --cpu "$(nproc)" --timeout 4h --quiet &
hog=$!
trap 'kill $hog 2>/dev/null' EXIT INT TERM

{
    echo "# $(date -u +%FT%TZ) at $(git rev-parse --short HEAD), $(nproc) cores,"
    echo "# stress-ng --cpu $(nproc) beside meson's default parallelism"
} > "$out"
fails=0
for r in $(seq "$rounds"); do
    for suite in $suites; do
        t0=$(date +%s)
        meson test -C "$build" --suite "$suite" --no-rebuild --print-errorlogs \
            > "$here/$commit-round-$r-$suite.log" 2>&1
        rc=$?
        load=$(cut -d' ' -f1 /proc/loadavg)
        sum=$(grep -E '^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass): ' \
              "$here/$commit-round-$r-$suite.log" | tr -s ' ' | tr '\n' ' ')
        printf 'round %d %-12s rc %d  %4d s  load %s  %s\n' "$r" "$suite" "$rc" \
            $(( $(date +%s) - t0 )) "$load" "$sum" | tee -a "$out"
        if [ $rc -ne 0 ]; then
            fails=$((fails + 1))
            grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$here/$commit-round-$r-$suite.log" | sort -u | tee -a "$out"
        else
            rm -f "$here/$commit-round-$r-$suite.log"
        fi
    done
done
echo "# $fails failed suite runs of $((rounds * $(echo $suites | wc -w)))" | tee -a "$out"
[ $fails -eq 0 ]
