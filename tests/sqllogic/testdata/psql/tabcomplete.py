"""Drives psql's tab completion through a pseudo-terminal.

Usage: tabcomplete.py HOST PORT INPUT WANT. Starts psql, types INPUT and
two tabs, and reads the terminal until WANT appears (exit 0, printing what
psql showed) or 20 seconds pass (exit 1).
"""
import os
import pty
import select
import sys
import time

host, port, text, want = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.environ.update({"PSQLRC": "/dev/null", "PAGER": "", "LC_ALL": "C", "LANG": "C", "TERM": "dumb"})
    os.execvp("psql", ["psql", "-X", "-h", host, "-p", port, "-U", "streamdb", "streamdb"])


def read_until(marker, seconds):
    out = b""
    end = time.time() + seconds
    while time.time() < end and marker not in out:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out


read_until(b"=#", 20)
os.write(fd, text.encode() + b"\t\t")
out = read_until(want.encode(), 20)
os.write(fd, b"\x03\\q\n")
read_until(b"\xff", 1)
print(out.decode(errors="replace").replace("\r", ""))
sys.exit(0 if want.encode() in out else 1)
