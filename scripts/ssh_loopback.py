"""What one SSH call costs and how well `clock_offset` measures, against an sshd on this machine.

Starts /usr/sbin/sshd inside a network namespace of its own (as tests/integration/test_ssh.py does: own host
key, a generated client key, no PAM), then times `calls` `SshHost.check()` calls and prints `offsets`
`clock_offset(host)` results (the true offset is 0: the same clock on both ends). Needs root, iproute2
and openssh-server; removes everything it made.

Run: PYTHONPATH=src .venv/bin/python scripts/ssh_loopback.py [calls] [offsets]
"""

import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pgarena.system import netns
from pgarena.system.ssh.clock import clock_offset
from pgarena.system.ssh.host import SshHost

SSHD = Path("/usr/sbin/sshd")


def main(calls: int = 10, offsets: int = 5) -> None:
    reason = netns.available() or (None if SSHD.exists() else f"{SSHD} is missing (apt-get install openssh-server)")
    if reason:
        sys.exit(f"cannot measure here: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="pgarena-ssh-"))
    made_privsep = not Path("/run/sshd").exists()
    try:
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / key)], check=True)
        (tmp / "authorized_keys").write_text((tmp / "client_key.pub").read_text())
        if made_privsep:
            Path("/run/sshd").mkdir(mode=0o755)
        with netns.namespaces(["stack"], host_link=True) as topology:
            address = topology.addresses["stack"]
            (tmp / "known_hosts").write_text(f"{address} " + (tmp / "host_key.pub").read_text())
            (tmp / "sshd_config").write_text(
                f"ListenAddress {address}\nHostKey {tmp / 'host_key'}\nAuthorizedKeysFile {tmp / 'authorized_keys'}\n"
                "UsePAM no\nStrictModes no\nPidFile none\nPermitRootLogin prohibit-password\n")
            sshd = subprocess.Popen(netns.exec_prefix(topology, "stack") + [
                str(SSHD), "-D", "-e", "-f", str(tmp / "sshd_config")], stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 10
                while True:
                    try:
                        socket.create_connection((address, 22), timeout=1).close()
                        break
                    except OSError:
                        if time.monotonic() > deadline or sshd.poll() is not None:
                            sys.exit("sshd did not start")
                        time.sleep(0.05)
                host = SshHost(f"root@{address}", identity_file=tmp / "client_key", config_file=Path("/dev/null"),
                               options={"UserKnownHostsFile": str(tmp / "known_hosts"),
                                        "StrictHostKeyChecking": "yes"})
                took = []
                for _ in range(calls):
                    started = time.perf_counter()
                    host.check()
                    took.append(time.perf_counter() - started)
                print(f"check(): median {statistics.median(took) * 1000:.0f} ms, min {min(took) * 1000:.0f} ms, "
                      f"max {max(took) * 1000:.0f} ms ({calls} calls, one connection each)")
                for _ in range(offsets):
                    started = time.perf_counter()
                    offset, uncertainty = clock_offset(host)
                    print(f"clock_offset(): {offset * 1e6:+.0f} µs ± {uncertainty * 1e6:.0f} µs "
                          f"(took {(time.perf_counter() - started) * 1000:.0f} ms)")
            finally:
                sshd.terminate()
                sshd.wait(timeout=10)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if made_privsep:
            shutil.rmtree("/run/sshd", ignore_errors=True)


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
