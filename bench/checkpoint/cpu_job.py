#!/usr/bin/env python3
"""CPU-bound self-checkpointing job for the leverage benchmark.

    cpu_job.py CPU_SECS EVERY_SECS STATE_BYTES

Burns CPU_SECS of CPU time in total; every EVERY_SECS of CPU it saves its
state (a counter plus STATE_BYTES of payload) to cpu_job.state and exits
with 85, so the station ships it home and restarts the job. At the end it
writes the CPU seconds it used over all runs to cpu_job.result.
"""
import json
import os
import sys
import time

cpu_total, every, nbytes = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
state = {"cpu": 0.0, "x": 1}
if os.path.exists("cpu_job.state"):
    with open("cpu_job.state", "rb") as f:
        state = json.loads(f.readline())
t0 = time.process_time()
x = state["x"]
while True:
    for _ in range(20000):
        x = (x * 31 + 7) % 1000003
    used = time.process_time() - t0
    if state["cpu"] + used >= cpu_total:
        with open("cpu_job.result", "w") as f:
            f.write(f"{state['cpu'] + used:.3f}\n")
        print(f"done x={x}")
        sys.exit(0)
    if used >= every:
        state = {"cpu": state["cpu"] + used, "x": x}
        with open("cpu_job.state.tmp", "wb") as f:
            f.write((json.dumps(state) + "\n").encode())
            f.write(b"\0" * nbytes)
        os.replace("cpu_job.state.tmp", "cpu_job.state")
        sys.exit(85)
