#!/bin/sh
# slopjudge hook wrapper (written by `slopjudge install @HARNESS@`; commit it with the settings).
#
# An agent treats a hook command that cannot start as non-blocking: if the
# settings named a slopjudge that is not installed on this machine, every tool
# call would go through unjudged. So the settings call this file, which finds
# slopjudge the way the README documents:
#   1. $SLOPJUDGE_BIN, when set;
#   2. the project's virtualenv: .venv/bin/slopjudge, then venv/bin/slopjudge (run
#      through the python its launcher names, when it names one);
#   3. python3 -P -m slopjudge, when python3 can import it (not from the project folder);
#   4. slopjudge on PATH, then ~/.local/bin/slopjudge (pipx, pip --user).
# When none is there, it blocks every tool that could change the repository
# (file writes, shell, unknown tools) and the end of the turn, saying how to
# install slopjudge; the session start and read-only tools only warn.
# A slopjudge that starts but ends in anything but a verdict (a crash, a
# signal) blocks too: a guard that could not decide must not let a change by.

if [ "${1-}" != hook ] || [ -z "${2-}" ]; then
    echo "usage: $0 hook start|pre-tool|stop|subagent-stop [--harness NAME]" >&2
    exit 2
fi
point=$2
shift 2  # what is left (--harness NAME) goes to slopjudge as it is

# No subshell and no dirname: this runs before every tool call, and each process started
# beside busy CPUs waits for one (a subshell cost 3 ms there). The folder is entered to
# read its physical path, then left for the one the agent started the hook in; a start
# folder that could not be entered again (deleted, not searchable) keeps the subshell.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
started_in=$PWD
if [ -n "$started_in" ] && [ -d "$started_in" ] && [ -x "$started_in" ] \
        && CDPATH='' cd -P -- "$here/../.." 2>/dev/null; then
    root=$PWD
    if ! CDPATH='' cd -- "$started_in" 2>/dev/null; then
        echo "slopjudge: the hook cannot return to the folder it was started in" \
             "($started_in); blocking, because it could not decide." >&2
        exit 2
    fi
else
    root=$(CDPATH='' cd -P -- "$here/../.." 2>/dev/null && pwd -P) || root=.
fi

found=
venv_python=
if [ -n "${SLOPJUDGE_BIN-}" ] && [ -x "$SLOPJUDGE_BIN" ]; then
    found=$SLOPJUDGE_BIN
fi
for venv in .venv venv; do
    if [ -z "$found" ] && [ -x "$root/$venv/bin/slopjudge" ]; then
        found=$root/$venv/bin/slopjudge
        # Its own python, when the launcher is that virtualenv's (not, say, a link to
        # a slopjudge installed elsewhere, which that python could not import).
        first=
        IFS= read -r first < "$found" 2>/dev/null || :
        case $first in
            "#!$root/$venv/bin/python"*) [ -x "$root/$venv/bin/python" ] \
                && venv_python=$root/$venv/bin/python ;;
            '#!/'*)
                # Another python's launcher (the virtualenv is a link, or was made at
                # another path to the project): that python, when the whole line names
                # one (not a /bin/sh trampoline, not an interpreter with arguments).
                interp=${first#??}
                case ${interp##*/} in
                    python | python[0-9]*) [ -f "$interp" ] && [ -x "$interp" ] \
                        && venv_python=$interp ;;
                esac ;;
        esac
    fi
done
with_python=
if [ -z "$found" ] && command -v python3 >/dev/null 2>&1 \
        && python3 -P -c 'import slopjudge.cli' >/dev/null 2>&1; then
    with_python=1
fi
if [ -z "$found" ] && [ -z "$with_python" ]; then
    found=$(command -v slopjudge 2>/dev/null) || found=
    if [ -z "$found" ] && [ -n "${HOME-}" ] && [ -x "$HOME/.local/bin/slopjudge" ]; then
        found=$HOME/.local/bin/slopjudge
    fi
fi

if [ -n "$found" ] || [ -n "$with_python" ]; then
    if [ -n "$with_python" ]; then
        # -P: not the current folder first on the import path, where the agent can
        # write a package named slopjudge of its own.
        python3 -P -m slopjudge hook "$point" "$@"
    elif [ -n "$venv_python" ]; then
        # The virtualenv's Python itself: the `slopjudge` launcher pip writes imports `re`
        # first, a tenth of a PreToolUse call. -P as above.
        "$venv_python" -P -c 'import sys; from slopjudge.cli import main; sys.exit(main())' \
            hook "$point" "$@"
    else
        "$found" hook "$point" "$@"
    fi
    status=$?
    case $status in
        0 | 2) exit "$status" ;;
    esac
    if [ "$point" = start ]; then
        exit "$status"  # the session start never blocks
    fi
    echo "slopjudge: the hook ended without a verdict (exit status $status: a crash or a" \
         "signal); blocking, because a guard that could not decide must not let this through." \
         "Run \`slopjudge hook $point\` in a terminal to see why." >&2
    exit 2
fi

# slopjudge cannot be found: say how to install it (from a slopjudge checkout or wheel,
# as its README does; there is no release on PyPI).
how="slopjudge is not installed where this project's hooks can find it (looked for"
how="$how \$SLOPJUDGE_BIN, $root/.venv/bin/slopjudge, $root/venv/bin/slopjudge,"
how="$how python3 -m slopjudge, slopjudge on PATH). To install it, in a terminal at $root run:"
how="$how python3 -m venv .venv && .venv/bin/pip install /path/to/slopjudge"
how="$how (a slopjudge checkout or wheel), or set SLOPJUDGE_BIN to an installed slopjudge."

json_string() {
    # $1 as a JSON string: backslashes and quotes escaped, control characters dropped.
    printf '%s' "$1" | tr -d '\000-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' \
        | { printf '"'; cat; printf '"'; }
}

case $point in
    start)
        context="slopjudge is NOT running in this session: $how Until it is installed, file"
        context="$context writes, shell commands and the end of each turn are blocked;"
        context="$context tell the person how to install it."
        printf '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":%s}}\n' \
            "$(json_string "$context")"
        echo "slopjudge: WARNING: $how" >&2
        exit 0
        ;;
    pre-tool)
        payload=$(cat)
        # Exactly one top-level "tool_name" key, or the tool is treated as unknown: a
        # nested key of the same name (inside tool_input) must not pass for it.
        names=$(printf '%s\n' "$payload" \
            | grep -o '"tool_name"[[:space:]]*:[[:space:]]*"[^"\\]*"' 2>/dev/null)
        tool=
        if [ -n "$names" ] && [ "$(printf '%s\n' "$names" | wc -l)" -eq 1 ]; then
            tool=$(printf '%s\n' "$names" | sed 's/.*:[[:space:]]*"\([^"]*\)"$/\1/')
        fi
        case $tool in
            Read | Glob | Grep | LS | NotebookRead | WebFetch | WebSearch | TodoWrite \
            | TodoRead | Task | Agent | BashOutput | KillShell | KillBash | ExitPlanMode \
            | AskUserQuestion | ListMcpResourcesTool | ReadMcpResourceTool \
            | update_plan | view_image | read_file | list_dir | grep_files)
                echo "slopjudge: WARNING: $how Read-only tools still run; writes are blocked." >&2
                exit 0
                ;;
        esac
        echo "BLOCKED by slopjudge: ${tool:-this tool} could change the repository and" \
             "cannot be judged. $how Ask the person to install it; do not work around" \
             "this block." >&2
        exit 2
        ;;
    stop | subagent-stop)
        payload=$(cat)
        # One block per turn: at the retry (stop_hook_active) the turn ends, the
        # block standing, so an agent that cannot install slopjudge does not loop.
        if printf '%s\n' "$payload" \
                | grep -q '"stop_hook_active"[[:space:]]*:[[:space:]]*true' 2>/dev/null; then
            echo "slopjudge: WARNING: letting the turn end unjudged; the block stands. $how" >&2
            exit 0
        fi
        reason="BLOCKED by slopjudge: the changes of this turn cannot be judged. $how"
        reason="$reason Tell the person how to install it; change nothing more this turn."
        printf '{"decision":"block","reason":%s}\n' "$(json_string "$reason")"
        exit 0
        ;;
esac
echo "slopjudge: unknown hook point '$point'; expected start, pre-tool, stop or" \
     "subagent-stop. $how" >&2
exit 2
