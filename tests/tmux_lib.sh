# tmux_lib.sh: the private tmux server the explorer's terminal tests share
# (sourced).  Set TUI_NAME (a short name for the socket and the temporary
# folder) before sourcing; set SESS to the session that screen, keys and
# wait_for look at.  Skips (77) without tmux or a built program.

if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux not installed"
	exit 77
fi
if [ -z "$SHARDLAB" ] || [ ! -x "$SHARDLAB" ]; then
	echo "SKIP: \$SHARDLAB does not name the built program"
	exit 77
fi

SOCK="shardlab-$TUI_NAME-$$"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tui_$TUI_NAME.XXXXXX") || exit 99
SESS=
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() {
	T kill-server >/dev/null 2>&1
	rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

screen() { T capture-pane -p -t "$SESS" 2>/dev/null; }
# procs: the explorer's processes with their state (a hung one shows as such).
procs() {
	ps -eo pid,stat,etime,wchan:24,args 2>/dev/null | grep -e shardlab -e PID |
	    grep -v grep
}
# fail MESSAGE: says why, shows the screen and the explorer's processes (a
# hung one shows its state), and says why again as the last line.
fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	screen
	echo "--- processes:"
	procs
	echo "FAIL: $*"
	exit 1
}
# wait_for TEXT [TENTHS]: until TEXT (a fixed string) is on the screen, 30 s at
# most by default (a loaded machine can be slow to draw).
wait_for() {
	n=0
	while [ "$n" -lt "${2:-300}" ]; do
		screen | grep -F -q -- "$1" && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
# wait_gone TEXT: until TEXT has left the screen.
wait_gone() {
	n=0
	while [ "$n" -lt 300 ]; do
		screen | grep -F -q -- "$1" || return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
keys() { T send-keys -t "$SESS" "$@"; }
# keys_until TEXT KEY...: sends the keys and waits for TEXT.  When it has not
# shown after 30 s, the log says so with the explorer's processes, and the
# keys go once more (a key lost on the way; a hung explorer still fails).
keys_until() {
	text=$1
	shift
	keys "$@"
	wait_for "$text" && return 0
	echo "note: \"$text\" not shown 30 s after keys $*; the processes:"
	procs
	keys "$@"
	wait_for "$text"
}
