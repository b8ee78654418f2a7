"""Write numbered lines as fast as the pty takes them, recording in a shared memory
map how many `os.write` calls have returned: after a SIGKILL the map still says which
lines the process had handed to the terminal."""

import mmap
import os
import struct
import sys
import time

path = sys.argv[1]
with open(path, "wb") as fh:
    fh.write(b"\0" * 8)
fd = os.open(path, os.O_RDWR)
mm = mmap.mmap(fd, 8)
i = 0
while True:
    i += 1
    os.write(1, b"count %d %s\n" % (i, b"=" * (i % 97)))
    mm[:8] = struct.pack("<q", i)
    if i % 2000 == 0:
        # at most ~40k lines/s: even a slow start of the watcher on a loaded machine
        # finds line 1 still in the pane's scrollback (history-limit 100000)
        time.sleep(0.05)
