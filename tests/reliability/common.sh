# common.sh - sourced by the reliability suite's scripts: find the ranks of a
# running VOCL job, wait for gate files, check output.  The script sets $job
# (the vocl-run process) before it calls rank_pid.

descendants() {
    local c
    for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done
}

# The process of the job with this MPI rank and name.
rank_pid() { # RANK NAME
    local p
    for p in $(descendants "$job"); do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] || continue
        tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | grep -qx "PMI_RANK=$1" && { echo "$p"; return; }
    done
}

# Waits for a file, at most SECONDS.
await() { # FILE SECONDS
    local i
    for ((i = 0; i < $2 * 10; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done
    echo "$(basename "$0"): no $1 after $2 s" >&2
    return 1
}

# The stacks of the job's processes' threads, on stderr (where gdb is): what
# a job that a test gives up on was waiting for.
job_stacks() {
    command -v gdb >/dev/null || return 0
    local p
    for p in $(descendants "$job"); do
        echo "--- process $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | cut -c1-160)"
        timeout 20 gdb -p "$p" -batch -ex 'thread apply all bt 16' 2>/dev/null | grep -E '^(Thread|#)'
    done >&2
}

# Waits at most SECONDS for the job to end by itself; fails if it does not
# (with the job's stacks).
await_job() { # SECONDS
    local i
    for ((i = 0; i < $1 * 10; i++)); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$job" 2>/dev/null; then
        echo "$(basename "$0"): the job still runs after $1 s; its stacks:" >&2
        job_stacks
        return 1
    fi
}

# At least COUNT lines of FILE match PATTERN; otherwise says so and sets fail.
fail=0
expect() { # FILE PATTERN COUNT
    local n
    n=$(grep -c -E -- "$2" "$1")
    [ "$n" -ge "$3" ] || { echo "$(basename "$0"): expected $3 lines matching '$2', found $n" >&2; fail=1; }
}
