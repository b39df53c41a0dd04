# watchdog.sh - sourced by the daemon tests (daemon.sh, users.sh).
#
# watchdog PID SECONDS FILE: once PID has run SECONDS, the threads' stacks
# of its programs (PID and its descendants that have no child: the program
# under runuser, env or a subshell) go to FILE, where gdb is, and PID and
# its descendants are killed.  Ends with PID.  The test then fails with
# FILE's lines: where the program waited, not only "exit 124".

descendants() {
    local c
    for c in $(pgrep -P "$1"); do
        echo "$c"
        descendants "$c"
    done
}

watchdog() {
    local i p tree
    for ((i = 0; i < $2 * 10; i++)); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    tree="$1 $(descendants "$1")"
    {
        for p in $tree; do
            [ -z "$(pgrep -P "$p")" ] || continue
            echo "$(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | cut -c1-160): still running after $2 s"
            ! command -v gdb >/dev/null ||
                timeout 30 gdb -p "$p" -batch -ex 'thread apply all bt 20' 2>/dev/null |
                    grep -E '^(Thread|#)' | cut -c1-200
        done
    } >"$3.part"
    mv "$3.part" "$3"
    kill -9 $tree 2>/dev/null || true
}

# hung_stacks DIR: the stacks of every program that hung (DIR/*.hung).
hung_stacks() {
    local h
    for h in "$1"/*.hung; do [ -e "$h" ] && echo "--- $h" && cat "$h"; done
    return 0
}
