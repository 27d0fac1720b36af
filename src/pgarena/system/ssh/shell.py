"""What pgarena runs on an SSH host: POSIX shell scripts, how their arguments are quoted, and the parsing of
what they print (the other modules of system/ssh send them; docs/hosts.md describes them).

Every script is sent as `/bin/sh -c SCRIPT pgarena-ssh ARG...`, each word quoted once with `shlex.quote` for
the host's login shell, which parses ssh's command string (`$SHELL -c STRING` on the server); values reach
the script as positional parameters or as `export NAME='value'` lines, never spliced into its code unquoted.
A started process is found by its token (`TOKEN_VARIABLE` in /proc/PID/environ, inherited by every
descendant) and by its session while the session's leader carries the token (`MEMBERS_SH`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

TOKEN_VARIABLE = "PGARENA_SSH_TOKEN"
"""Environment variable carrying a started process's token to it and all its descendants (the scripts spell
it out)."""

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def remote_command(script: str, *args: str) -> str:
    """The command string for ssh that runs the POSIX `script` with positional parameters `args`: each word
    quoted once for the remote login shell, which parses the string (`$SHELL -c STRING` on the server)."""
    return shlex.join(["/bin/sh", "-c", script, "pgarena-ssh", *args])


def env_exports(env: Mapping[str, str] | None) -> str:
    """`export NAME='value'` lines for a script (ValueError for a name that is not a shell variable name)."""
    lines = []
    for name, value in (env or {}).items():
        if not _ENV_NAME_RE.match(name):
            raise ValueError(f"environment variable name {name!r}: letters, digits and '_' only, not first a digit")
        lines.append(f"export {name}={shlex.quote(str(value))}")
    return "\n".join(lines)


# Every live process started under token $1, and the session $2 (may be empty) when its leader is one of them.
# Zombies are left out (their /proc/PID/environ is empty; a session member in state Z is skipped).
MEMBERS_SH = r"""
members() {
  _tok=$(grep -lzxF "PGARENA_SSH_TOKEN=$1" /proc/[0-9]*/environ 2>/dev/null | sed -e 's#^/proc/##' -e 's#/environ$##')
  _all=$_tok
  _sid=
  if [ -n "$2" ]; then case " $(echo $_tok) " in *" $2 "*) _sid=$2 ;; esac; fi
  if [ -n "$_sid" ]; then
    for _d in /proc/[0-9]*; do
      { read -r _line < "$_d/stat"; } 2>/dev/null || continue
      set -- ${_line##*) }
      if [ "$1" != Z ] && [ "$4" = "$_sid" ]; then _all="$_all ${_d#/proc/}"; fi
    done
  fi
  for _p in $_all; do echo "$_p"; done | sort -un
}
"""

# $1 state folder (relative: to the login's home), $2 id: the files of one started process and its session id
# (from the pid file).
PRELUDE_SH = r"""
state=$1; id=$2; shift 2
case $state in /*) ;; *) state="$HOME/$state" ;; esac
pidfile="$state/$id.pid"; exitfile="$state/$id.exit"; log="$state/$id.log"
pgid=$(cat -- "$pidfile" 2>/dev/null)
"""

CHECK_SH = r"""
echo pgarena-ok
for tool in setsid timeout grep sed sort cat; do command -v "$tool" >/dev/null 2>&1 || echo "missing $tool"; done
[ -r /proc/self/stat ] || echo "missing /proc"
if command -v rsync >/dev/null 2>&1; then echo rsync; fi
"""

ENVIRONMENT_SH = r"""
section() { printf '\n@@pgarena %s\n' "$1"; }
section hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname
section cpu_model; sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1
section machine; uname -m
section cpu_count; getconf _NPROCESSORS_ONLN 2>/dev/null || nproc
section memory_kib; sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo
section kernel; uname -r
section os; ( . /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" ); uname -s
"""

# A version command: its stdout, else its stderr (as system/process.first_line does locally); nothing if the
# program is not there.
VERSION_SH = r"""
section "toolchain {index}"
if command -v {program} >/dev/null 2>&1; then
  out=$(timeout {timeout} {argv} </dev/null 2>/dev/null)
  [ -n "$(printf %s "$out" | tr -d '[:space:]')" ] || out=$(timeout {timeout} {argv} </dev/null 2>&1 >/dev/null)
  printf '%s\n' "$out"
fi
"""

RUN_SH = r"""
cwd=$1; limit=$2; shift 2
if [ -n "$cwd" ]; then cd -- "$cwd" || exit 125; fi
command -v timeout >/dev/null 2>&1 || { echo "pgarena: no 'timeout' command on this host" >&2; exit 127; }
@EXPORTS@
exec timeout -k @KILL_AFTER@ "$limit" "$@"
"""

START_SH = PRELUDE_SH + r"""
cwd=$1; command=$2
command -v setsid >/dev/null 2>&1 || { echo "pgarena: no 'setsid' command on this host" >&2; exit 127; }
mkdir -p -- "$state" || exit 125
cd -- "$cwd" || exit 125
@EXPORTS@
export PGARENA_SSH_TOKEN="$id"
printf '$ %s\n' "$command" >> "$log"
setsid /bin/sh -c 'echo $$ > "$1.tmp" && mv -f -- "$1.tmp" "$1" || exit 125
/bin/sh -c "$3"; code=$?; echo $code > "$2.tmp" && mv -f -- "$2.tmp" "$2"' pgarena-run "$pidfile" "$exitfile" \
  "$command" < /dev/null >> "$log" 2>&1 &
i=0
while [ ! -s "$pidfile" ]; do
  [ $i -lt 200 ] || { echo "pgarena: the started command wrote no pid file within 10 s" >&2; exit 1; }
  sleep 0.05; i=$((i + 1))
done
cat -- "$pidfile"
"""

STATUS_SH = MEMBERS_SH + PRELUDE_SH + r"""
echo "members $(members "$id" "$pgid" | wc -l)"
[ -s "$exitfile" ] && echo "exit $(cat -- "$exitfile")"
exit 0
"""

USAGE_SH = MEMBERS_SH + PRELUDE_SH + r"""
echo "clock $(getconf CLK_TCK) $(getconf PAGESIZE)"
for p in $(members "$id" "$pgid"); do
  { read -r line < "/proc/$p/stat"; } 2>/dev/null || continue
  set -- ${line##*) }
  echo "proc $p $1 ${12} ${13} ${14} ${15} ${22}"
done
"""

STOP_SH = MEMBERS_SH + PRELUDE_SH + r"""
tries=$1
m=$(members "$id" "$pgid"); found=$(echo $m | wc -w); killed=0
if [ -n "$m" ]; then
  kill -TERM $m 2>/dev/null
  i=0
  while [ $i -lt "$tries" ] && [ -n "$(members "$id" "$pgid")" ]; do sleep 0.1; i=$((i + 1)); done
  m=$(members "$id" "$pgid")
  if [ -n "$m" ]; then
    killed=$(echo $m | wc -w)
    kill -KILL $m 2>/dev/null
    i=0
    while [ $i -lt 20 ] && [ -n "$(members "$id" "$pgid")" ]; do sleep 0.1; i=$((i + 1)); done
  fi
fi
echo "stopped $found $killed $(members "$id" "$pgid" | wc -l)"
"""

LOG_SH = PRELUDE_SH + r"""
[ -f "$log" ] && tail -c "+$1" -- "$log"
exit 0
"""

CLEAN_SH = PRELUDE_SH + r"""
rm -f -- "$pidfile" "$pidfile.tmp" "$exitfile" "$exitfile.tmp" "$log"
rmdir -- "$state" 2>/dev/null
exit 0
"""


def parse_sections(text: str) -> dict[str, str]:
    """Name → text of the `@@pgarena NAME` sections a remote script printed."""
    sections: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if line.startswith("@@pgarena "):
            name = line.removeprefix("@@pgarena ").strip()
            sections[name] = ""
        elif name is not None:
            sections[name] += line + "\n"
    return {key: value.strip() for key, value in sections.items()}


@dataclass(frozen=True)
class RemoteUsage:
    """CPU seconds used so far and summed resident memory now of a remote process tree.

    `cpu_seconds` = Σ over its live processes of user + system time, plus what their exited and reaped
    children used (cutime + cstime), from /proc/PID/stat: two readings' difference is the CPU of the time
    between them. `rss_bytes` = Σ resident set size (RSS, so a page shared by workers counts once per worker)."""

    cpu_seconds: float
    rss_bytes: int
    processes: int


def parse_usage(text: str) -> RemoteUsage | None:
    """The usage `USAGE_SH` printed (None if it printed no clock line: not measured)."""
    ticks = page = None
    cpu_ticks = rss_pages = processes = 0
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["clock"] and len(fields) == 3:
            ticks, page = int(fields[1]), int(fields[2])
        elif fields[:1] == ["proc"] and len(fields) == 8:
            cpu_ticks += sum(int(value) for value in fields[3:7])
            rss_pages += int(fields[7])
            processes += 1
    if not ticks or not page:
        return None
    return RemoteUsage(cpu_seconds=cpu_ticks / ticks, rss_bytes=rss_pages * page, processes=processes)
