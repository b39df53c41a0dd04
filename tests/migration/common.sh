# common.sh - sourced by the migration suite's scripts (with
# ../reliability/common.sh): what a run printed that must not change, and
# when its application has begun.

# The fields of FILE's RESULT lines that do not measure time.
kept() { # FILE
    grep -oE '(^| )(app|precision|size|devices|items|selected|ids_hash|hist_hash|checksum|verified)=[^ ]+' "$1" |
        tr -d ' ' | tr '\n' ' '
}

# The control socket of the job's application ($job: the vocl-run process)
# once it appears in $VOCL_CTL_DIR, that is at its first OpenCL call;
# nothing if the job ends first or SECONDS pass.
ctl_socket() { # SECONDS
    local sock= i
    for ((i = 0; i < $1 * 100; i++)); do
        sock=$(find "$VOCL_CTL_DIR" -name '*.sock' | head -n 1)
        [ -n "$sock" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.01
    done
    echo "$sock"
}

# The program run once under vocl-run with OPTIONS and nothing done to it:
# what it printed that must not change, in $want, which must say
# verified=yes ($vocl_run, $tmp and fail() are the script's).
plain_run() { # OPTIONS... -- PROGRAM [ARGS...]
    timeout 300 "$vocl_run" "$@" >"$tmp/plain" 2>"$tmp/err" || fail "the plain run failed"
    want=$(kept "$tmp/plain")
    [[ "$want" == *verified=yes* ]] || fail "the plain run did not verify: $want"
}

# A scratch folder in $tmp, removed at exit with every process the script
# started; the control sockets in it (VOCL_CTL_DIR); fail MESSAGE says why,
# with the end of the last run's stderr, and exits.  (Needs
# ../reliability/common.sh.)
scratch() {
    tmp=$(mktemp -d)
    trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT
    export VOCL_CTL_DIR=$tmp/ctl
    mkdir -m 700 "$VOCL_CTL_DIR"
    fail() { echo "FAILED: $*"; tail -n 20 "$tmp/err" 2>/dev/null; exit 1; }
}
