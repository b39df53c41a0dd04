#!/usr/bin/env bash
# soak.sh - CLIENTS application ranks run mixed traffic (soak.c) on 2 proxies
# x 2 devices for SECONDS; the proxies' state before and after must match.
#   soak.sh VOCL_RUN PROGRAM CLIENTS SECONDS
# The state is taken with SIGUSR1 (voclproxyd(8)) while every client waits at
# a gate holding nothing: once after a warm-up cycle on every device (PoCL
# compiles and allocates what it keeps for good in the first), once after the
# soak.  Objects and bytes held must be the same; resident memory may grow by
# at most VOCL_SOAK_SLACK_KB (default 8192) KiB; -1: not compared (under
# AddressSanitizer, whose allocator keeps freed memory in quarantine).
set -uo pipefail
vocl_run=$1 prog=$2 clients=$3 secs=$4
slack=${VOCL_SOAK_SLACK_KB:-8192}
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT
proxies=2

"$vocl_run" -a "$clients" -n "$proxies" -d 2 -- "$prog" "$secs" "$tmp/gate" > "$tmp/out" 2> "$tmp/err" &
job=$!

# Every client at gate NAME; then the state of every proxy (the Nth time).
at_gate() { # NAME N TIMEOUT
    local r p n
    for ((r = 0; r < clients; r++)); do
        await "$tmp/gate.$1.$r" "$3" || { cat "$tmp/out" "$tmp/err"; exit 1; }
    done
    for ((r = clients; r < clients + proxies; r++)); do
        p=$(rank_pid "$r" voclproxyd)
        [ -n "$p" ] || { echo "soak: no proxy rank $r" >&2; exit 1; }
        kill -USR1 "$p"
        for ((n = 0; n < 100; n++)); do
            [ "$(grep -c "^voclproxyd\[$r\]: state:" "$tmp/err")" -ge "$2" ] && break
            sleep 0.1
        done
    done
}

at_gate warm 1 120
touch "$tmp/gate.start"
at_gate done 2 $((secs + 120))
touch "$tmp/gate.end"
await_job 60 || exit 1
wait "$job"
status=$?
cat "$tmp/out"
grep -v -e "info:" -e ": state:" "$tmp/err" >&2
[ "$status" -eq 0 ] || { echo "soak: the job failed ($status)" >&2; fail=1; }
expect "$tmp/out" '^soak rank [0-9]+: [1-9][0-9]* cycles .* verified$' "$clients"

# proxy rank: sessions, objects, bytes, resident KiB; before and after.
echo "proxy  sessions  objects  bytes  resident KiB (before -> after)"
for ((r = clients; r < clients + proxies; r++)); do
    mapfile -t st < <(sed -n "s/^voclproxyd\[$r\]: state: \([0-9]*\) sessions, \([0-9]*\) objects, \([0-9]*\) bytes of memory objects, resident \([0-9]*\) KiB$/\1 \2 \3 \4/p" "$tmp/err")
    if [ "${#st[@]}" -ne 2 ]; then
        echo "soak: proxy rank $r reported its state ${#st[@]} times, not 2" >&2
        fail=1
        continue
    fi
    read -r s0 o0 b0 k0 <<< "${st[0]}"
    read -r s1 o1 b1 k1 <<< "${st[1]}"
    echo "$r      $s0 -> $s1    $o0 -> $o1    $b0 -> $b1    $k0 -> $k1 ($((k1 - k0)) KiB)"
    if [ "$o0" != "$o1" ] || [ "$b0" != "$b1" ] || [ "$s0" != "$s1" ]; then
        echo "soak: proxy rank $r: sessions, objects or bytes differ" >&2
        fail=1
    fi
    if [ "$slack" -ge 0 ] && [ $((k1 - k0)) -gt "$slack" ]; then
        echo "soak: proxy rank $r grew by $((k1 - k0)) KiB (more than $slack)" >&2
        fail=1
    fi
done
[ "$slack" -ge 0 ] || echo "soak: resident memory not compared (VOCL_SOAK_SLACK_KB=-1)"
exit $fail
