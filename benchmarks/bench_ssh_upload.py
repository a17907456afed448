"""Upload speed to a board: the transport's piecewise send against paramiko's own sendall.

    python benchmarks/bench_ssh_upload.py [--sizes 10,40]

Starts its own OpenSSH server on 127.0.0.1 (tests/fakes/sshd.py) and sends N MiB of random bytes
to ``cat > /dev/null`` on one connection, each size both ways, side by side. A batch of cases
goes to the board as one such upload; paramiko's sendall copies the rest of its buffer after
every 32 KiB packet, so its time grows with the square of the size.
Not a timed test: it prints numbers and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import paramiko

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.sshd import SshServer  # noqa: E402

from harness.boards.inventory import load_board  # noqa: E402
from harness.boards.settings import SshSettings  # noqa: E402
from harness.boards.ssh import send_all  # noqa: E402
from harness.vendors.rknn.runtimes import RUNTIMES  # noqa: E402


def upload_seconds(
    transport: paramiko.Transport, data: bytes, send: Callable[[paramiko.Channel, bytes], None]
) -> float:
    channel = transport.open_session()
    channel.exec_command("cat > /dev/null")
    started = time.perf_counter()
    send(channel, data)
    channel.shutdown_write()
    if channel.recv_exit_status() != 0:
        raise SystemExit("cat on the server failed")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,40", help="MiB to send, comma-separated")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-ssh-upload-") as folder:
        server = SshServer(Path(folder) / "sshd")
        server.start()
        try:
            board = load_board(server.board_file(Path(folder) / "boards"), RUNTIMES)
            ssh = board.transport
            assert isinstance(ssh, SshSettings)
            client = paramiko.SSHClient()
            client.load_host_keys(str(ssh.known_hosts))
            client.connect(
                ssh.host, port=ssh.port, username=ssh.user, key_filename=str(server.user_key)
            )
            transport = client.get_transport()
            assert transport is not None
            print(f"{'MiB':>5} {'paramiko sendall':>17} {'send_all':>11} {'ratio':>7}")
            for size in sizes:
                data = os.urandom(size * 2**20)
                naive = upload_seconds(transport, data, paramiko.Channel.sendall)
                pieces = upload_seconds(transport, data, send_all)
                print(
                    f"{size:5} {size / naive:11.1f} MiB/s {size / pieces:5.1f} MiB/s "
                    f"{naive / pieces:6.1f}x"
                )
            client.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
