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

units=$(find "$dest" -name 'voclproxyd.service' -o -name 'vocl-name-server.service')
[ "$(echo "$units" | grep -c .)" = 2 ] || fail "the two units not installed: $units"
for u in $units; do
    exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$u")
    conf=$(sed -n 's/^EnvironmentFile=//p' "$u")
    [ -f "$dest$conf" ] || fail "$u: its EnvironmentFile $conf is not installed"
    case $exe in
        */voclproxyd) [ -x "$dest$exe" ] || fail "$u: $exe is not installed" ;;
        */ompi-server) ;; # (Open MPI's)
        *) fail "$u: unexpected ExecStart $exe" ;;
    esac
    echo "$u: runs $exe, settings in $conf"
done
for f in voclproxyd vocl-run libvocl.so voclproxyd.8 libvocl.7 ucx-force-close.so; do
    [ -n "$(find "$dest" -name "$f*" -print -quit)" ] || fail "$f not installed"
done

# The settings file: NAME=value lines that a shell reads as systemd does.
conf=$(find "$dest" -name voclproxyd.conf)
(set -a; . "$conf"; [ -n "$VOCL_NAME_SERVER" ] && [ -n "$VOCL_TOKEN_FILE" ] &&
    [ "${VOCLPROXYD_OPTIONS+set}" = set ]) || fail "$conf lacks a setting"
bad=$(grep -vE '^(#.*|[A-Z_]+=[^ ]*|)$' "$conf" || true)
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
else
    echo "(no systemd-analyze here: the units' syntax is not checked)"
fi
echo PASS
