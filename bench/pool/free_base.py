"""Prints a loopback port P such that P .. P+SPAN-1 are all free now:
`glean up --port P` listens on a range from its base (the coordinator, then
each station), and a free first port alone may run into another program's."""
import random
import socket
import sys

SPAN = int(sys.argv[1]) if len(sys.argv) > 1 else 10


def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


for _ in range(500):
    base = random.randrange(20000, 60000)
    if all(free(p) for p in range(base, base + SPAN)):
        print(base)
        sys.exit(0)
sys.exit("no free range of ports found")
