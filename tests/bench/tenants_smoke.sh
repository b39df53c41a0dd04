#!/usr/bin/env bash
# tenants_smoke.sh TOOL VOCL_RUN: vocl-bench-tenants with a short kernel and
# a small build runs natively and through a proxy, and prints a row for each
# of A's phases with three runs; B read in every run while A was idle, while
# A's write waited for its kernel, and while A was stopped; through the proxy
# none of B's reads waited for the stopped A.
set -uo pipefail
out=$("$1" --vocl-run "$2" --kernel-seconds 0.3 --build-functions 20) || {
    echo "tenants: the tool failed" >&2; exit 1; }
printf '%s\n' "$out"
fail=0
for phase in idle build user-event kernel kernel-write stopped idle-after; do
    row=$(printf '%s\n' "$out" | grep -E "^$phase +[0-9.]+ \|") ||
        { echo "tenants: no row for phase $phase" >&2; fail=1; continue; }
    [ "$(grep -o '|' <<< "$row" | wc -l)" -eq 3 ] ||
        { echo "tenants: phase $phase has not three runs: $row" >&2; fail=1; }
    # B reads while A waits for its write behind its kernel, or is
    # stopped: a proxy that waits for either serves B nothing meanwhile.
    case $phase in idle | idle-after | kernel-write | stopped)
        # Reads counted in each run: the first number after each '|'.
        for n in $(awk -F'|' '{for (i = 2; i <= NF; i++) {split($i, f, " "); print f[1]}}' <<< "$row"); do
            [ "$n" -gt 0 ] || { echo "tenants: no reads while A was $phase: $row" >&2; fail=1; }
        done ;;
    esac
done
# A stopped for 1 s: through the proxy B never waits for it (a proxy that
# waited for A to take its replies, or its read's chunks, held B for the
# whole second): B's longest time without a read is under half of it.
gap=$(printf '%s\n' "$out" | awk -F'|' '/^stopped +[0-9.]+ \|/ {split($4, f, " "); print f[5]}')
awk -v g="${gap:-1e9}" 'BEGIN { exit !(g < 500000) }' ||
    { echo "tenants: B waited ${gap:-?} us while A was stopped (bound 500000)" >&2; fail=1; }
exit $fail
