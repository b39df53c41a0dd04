#!/usr/bin/env bash
# errors.sh - failure modes a user meets first: each must give one clear
# message quickly, never hang.
#   errors.sh LIBVOCL VOCLPROXYD PROGRAM
set -euo pipefail
lib=$1 proxyd=$2 prog=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# No vocl-run: no proxies, so no platform and one line saying what to do.
start=$(date +%s)
rc=0
LD_PRELOAD=$lib timeout 20 "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -ne 124 ] || fail "hangs without proxies"
[ "$rc" -ne 0 ] || fail "succeeds without any device"
grep -q 'no proxies: run the application with vocl-run' "$tmp/err" || fail "no message: $(cat "$tmp/err")"
echo "no proxies: exit $rc after $(( $(date +%s) - start )) s with: $(grep libvocl "$tmp/err" | head -1)"

# Daemon mode: the daemon makes its token file (in a HOME of the test's
# own) and listens (on loopback, a port the kernel picks); SIGTERM ends it.
export UCX_NET_DEVICES=lo HOME=$tmp/home
mkdir "$HOME"
timeout 30 "$proxyd" --listen --address 127.0.0.1 --port 0 --port-file "$tmp/port" \
    >"$tmp/out" 2>"$tmp/err" & d=$!
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "voclproxyd --listen did not listen: $(cat "$tmp/err")"
listened=$(cat "$tmp/port")
kill -TERM "$d"
rc=0
wait "$d" || rc=$?
[ "$rc" -eq 0 ] || fail "voclproxyd --listen: exit $rc after SIGTERM: $(cat "$tmp/err")"
echo "voclproxyd --listen: listened on $listened, exit 0 after SIGTERM"
[ ! -e "$tmp/port" ] || fail "the stopped daemon left its port file"
[ "$(stat -c %a "$HOME/.vocl/token")" = 600 ] || fail "the new token file is not private"
[ "$(stat -c %a "$HOME/.vocl")" = 700 ] || fail "the token's directory is not private"
grep -q "made a new token in $HOME/.vocl/token" "$tmp/err" || fail "no word of the new token"

# A token file others may read is refused, by the proxy and by a client.
cp "$HOME/.vocl/token" "$tmp/open"
chmod 644 "$tmp/open"
rc=0
timeout 30 "$proxyd" --listen --token-file "$tmp/open" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "token file $tmp/open: .*chmod 600" "$tmp/err" ||
    fail "--listen with an open token file: rc $rc: $(cat "$tmp/err")"
echo "voclproxyd --listen, open token: exit $rc: $(grep -v 'note:' "$tmp/err" | head -1)"

port=127.0.0.1:1
rc=0
VOCL_CONNECT=$port VOCL_TOKEN_FILE=$tmp/open LD_PRELOAD=$lib timeout 30 "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "token file $tmp/open: .*chmod 600" "$tmp/err" ||
    fail "client with an open token file: rc $rc: $(cat "$tmp/err")"
echo "VOCL_CONNECT, open token: exit $rc: $(grep libvocl "$tmp/err" | head -1)"

# With the token, a daemon that is not there (a closed port): told at once.
rc=0
start=$(date +%s)
VOCL_CONNECT=$port LD_PRELOAD=$lib timeout 30 "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -ne 124 ] || fail "client in daemon mode hangs"
[ "$rc" -ne 0 ] && grep -q "proxy $port: cannot connect to $port " "$tmp/err" ||
    fail "VOCL_CONNECT to a closed port: rc $rc: $(cat "$tmp/err")"
[ $(($(date +%s) - start)) -le 3 ] || fail "VOCL_CONNECT to a closed port took $(($(date +%s) - start)) s"
echo "VOCL_CONNECT to a closed port: exit $rc: $(grep libvocl "$tmp/err" | head -1)"
# A port that is not one: a clear error, nothing connected.
rc=0
VOCL_CONNECT=127.0.0.1:notaport LD_PRELOAD=$lib timeout 30 "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "'notaport' is not a port" "$tmp/err" ||
    fail "VOCL_CONNECT with a bad port: rc $rc: $(cat "$tmp/err")"

# Bad vocl-run usage: exit 2 with a message, nothing started.
rc=0
"$(dirname "$lib")/../tools/vocl-run" -n x -- true 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q 'needs a number' "$tmp/err" || fail "vocl-run -n x: rc $rc"
echo "vocl-run -n x: exit 2: $(cat "$tmp/err")"

# Bad proxy options: exit 2 with a message naming the value, nothing served.
for bad in "--poll-us x" "--poll-us -1" "--poll-us 2000000"; do
    rc=0
    timeout 30 "$proxyd" $bad >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 2 ] && grep -q "0..1000000 microseconds, not '${bad#--poll-us }'" "$tmp/err" ||
        fail "voclproxyd $bad: rc $rc: $(cat "$tmp/err")"
done
rc=0
VOCL_POLL_US=fast timeout 30 "$proxyd" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "VOCL_POLL_US must be 0..1000000 microseconds, not 'fast'" "$tmp/err" ||
    fail "VOCL_POLL_US=fast: rc $rc: $(cat "$tmp/err")"
echo "voclproxyd --poll-us x: exit 2: $(head -1 "$tmp/err")"
