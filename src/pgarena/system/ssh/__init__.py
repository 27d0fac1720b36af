"""SSH hosts: a stack built and run on another machine over plain OpenSSH (the `ssh`, `scp` and `rsync` clients).

The modules: `transport` (the connection, one command, `run`), `files` (copying), `process` (a started
process and the state file), `host` (`SshHost`, `start`, `reap_state_file`), `clock` (the clock offset) and
`shell` (the POSIX scripts sent to the host).

What pgarena does on a host (docs/hosts.md has the user's view):

- **Logs in with a key only**: every call is `ssh -o BatchMode=yes`, so ssh never prompts; a host that wants
  a password, or whose host key is unknown, is an `SshError` naming the destination and what ssh printed.
  Host keys are checked as the user's ssh configuration says (`StrictHostKeyChecking`, `UserKnownHostsFile`;
  `options` adds `-o` options, e.g. a known_hosts file of the run's own). Each connection gives up after
  `connect_timeout_s` and a dead one is noticed within `ServerAliveInterval × ServerAliveCountMax`; every call
  also has a local deadline after which the ssh client is killed.
- **Copies a stack folder** (`copy_folder`) with rsync when both ends have it (`--delete`, incremental), scp of
  a filtered copy otherwise, leaving out what pgarena's own .gitignore and the stack's .gitignore call build
  output (`DEFAULT_EXCLUDES`, `stack_excludes`).
- **Runs commands** (`run`, for builds) under the remote GNU `timeout`, so a build is bounded even if pgarena
  dies; **starts the stack** (`start`) under `setsid` in a session of its own whose leader's pid (= its process
  group and session id) goes to a pid file in `remote_state_dir`, with a random token in its environment
  (`PGARENA_SSH_TOKEN`) that every descendant inherits. `RemoteProcess.stop` sends SIGTERM, then SIGKILL, to
  every process carrying the token or belonging to that session, over a new connection, so it works even when
  the connection that started it is gone; the token (checked in /proc/PID/environ) keeps a reused pid from
  ever being signalled.
- **Leaves nothing running**: started processes are recorded in a local state file (`state_file`, e.g.
  `run_dir/ssh.json`) before they start; `reap_state_file` stops what a crashed run left on each host and fetches
  its log. The copied stack folder stays (the next copy is then incremental); pid, exit and log files are
  removed when the process is stopped.

The remote host must be Linux (/proc) with a POSIX login shell and GNU coreutils/grep (`setsid`, `timeout`,
`grep -z`): `check` says what is missing. Commands are sent as one string that the remote login shell parses
(that is how ssh works), built with `shlex.quote` for every argument and value; the scripts themselves are in
ssh/shell.py.

Clock offset (`clock.clock_offset`) is Cristian's method (F. Cristian, "Probabilistic clock synchronization",
Distributed Computing 3, 1989): over one connection, several round trips each read the remote
`date +%s.%N`; the remote reading happened somewhere between sending the request and reading the answer, so
for the shortest round trip the offset is remote − midpoint, give or take half that round trip.
"""
