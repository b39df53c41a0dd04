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
