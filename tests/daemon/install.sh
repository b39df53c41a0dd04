#!/usr/bin/env bash
# install.sh - `meson install` into a scratch DESTDIR, as a packager would:
# the programs, the man pages and the daemon's systemd units and settings
# file land where the units say, the units name what was installed, the
# settings file is valid shell, and systemd-analyze (where there is one)
# finds nothing wrong in the units but the paths DESTDIR moved.
#   install.sh BUILD-DIR
set -euo pipefail
build=$1
fail() { echo "FAIL: $*"; exit 1; }
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1 ||
    { cat "$dest.log"; rm -f "$dest.log"; fail "meson install"; }
rm -f "$dest.log"

units=$(find "$dest" -name 'voclproxyd.service')
[ "$(echo "$units" | grep -c .)" = 1 ] || fail "the unit is not installed: $units"
for u in $units; do
    exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$u")
    conf=$(sed -n 's/^EnvironmentFile=//p' "$u")
    [ -f "$dest$conf" ] || fail "$u: its EnvironmentFile $conf is not installed"
    case $exe in
        */voclproxyd) [ -x "$dest$exe" ] || fail "$u: $exe is not installed" ;;
        *) fail "$u: unexpected ExecStart $exe" ;;
    esac
    echo "$u: runs $exe, settings in $conf"
done
for f in voclproxyd vocl-run libvocl.so voclproxyd.8 libvocl.7 ucx-force-close.so ucx-pingpong; do
    [ -n "$(find "$dest" -name "$f*" -print -quit)" ] || fail "$f not installed"
done
# The service's user, for systemd-sysusers.
grep -qx 'u vocl - "VOCL proxy daemon" /var/lib/vocl' "$(find "$dest" -path '*sysusers.d/vocl.conf')" ||
    fail "no sysusers file for the user vocl"
# The example programs (generic names: gemm, nbody) are not in a bin/.
for f in gemm nbody transpose smithwaterman; do
    where=$(find "$dest" -name "$f" -type f)
    [ -n "$where" ] && ! echo "$where" | grep -q '/bin/' || fail "$f installed at '$where'"
    echo "$where" | grep -q '/libexec/vocl/examples/' || fail "$f not under libexec/vocl/examples"
done

# The settings file: NAME=value lines that a shell reads as systemd does.
conf=$(find "$dest" -name voclproxyd.conf)
(set -a; . "$conf"; [ -n "$VOCL_TOKEN_FILE" ] &&
    [ "${VOCLPROXYD_OPTIONS+set}" = set ]) || fail "$conf lacks a setting"
bad=$(grep -vE '^(#.*|[A-Z_]+=("[^"]*"|[^ "]*)|)$' "$conf" || true)
[ -z "$bad" ] || fail "$conf: not NAME=value: $bad"

# The installed daemon knows the options the settings file speaks of.  (Its
# help goes to a file: grep -q would stop reading at the match, and the
# rest of a help longer than stdio's buffer would end voclproxyd with
# SIGPIPE, which pipefail takes for a failure.)
"$(find "$dest" -name voclproxyd -type f)" --help >"$dest/help.txt" ||
    fail "the installed voclproxyd --help failed"
grep -q -- --max-session-host "$dest/help.txt" ||
    fail "the installed voclproxyd lacks --max-session-host"

if command -v systemd-analyze >/dev/null; then
    out=$(cd "$dest" && systemd-analyze verify --man=no $units 2>&1 || true)
    # Paths under DESTDIR are not yet where the units name them.
    left=$(echo "$out" | grep -v 'is not executable: No such file' | grep . || true)
    [ -z "$left" ] || fail "systemd-analyze verify: $left"
    echo "systemd-analyze verify: clean"
    # Hardened: the exposure systemd-analyze gives it is 5.0 or better.
    score=$(systemd-analyze security --offline=true $units 2>&1 |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    [ -n "$score" ] || fail "systemd-analyze security gave no score"
    awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }' || fail "systemd-analyze security: $score, over 5.0"
    echo "systemd-analyze security: $score"
else
    echo "(no systemd-analyze here: the units' syntax is not checked)"
fi
echo PASS
