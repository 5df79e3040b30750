#!/usr/bin/env python3
"""The pool benchmark's HyperQueue part (bench/pool/run.sh): the same jobs
on HyperQueue (PyPI `hyperqueue`, its server and workers in this process
through `hyperqueue.cluster.LocalCluster`), one worker of one core per
Gleaner station.

    hq_bench.py WORKDIR STATIONS JOBS LAT_JOBS

Prints one line: `HQ <lat p50> <lat p99> <total s> <jobs/s> <version>`.

Submit→running: each latency job is `/bin/date +%s.%N` writing its start
time; the time is taken just before the job is submitted. Throughput: one
job of JOBS `/bin/date +%s.%N` tasks (each writing when it ran), from just
before submitting it until the last task ran (the client's own wait polls
once a second, which would add up to a second).
"""

import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

from hyperqueue import Job
from hyperqueue.cluster import LocalCluster, WorkerConfig


def pctl(xs, q):
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1))] if xs else float("nan")


def main():
    work, stations, jobs, lat_jobs = Path(sys.argv[1]), *map(int, sys.argv[2:5])
    work.mkdir(parents=True, exist_ok=True)
    with LocalCluster(server_dir=str(work / "server")) as cluster:
        for _ in range(stations):
            cluster.start_worker(WorkerConfig(cores=1))
        client = cluster.client()
        # Workers registered: a first job runs.
        warm = Job()
        warm.program(["/bin/true"], stdout=None, stderr=None)
        client.wait_for_jobs([client.submit(warm)])

        lats = []
        for i in range(lat_jobs):
            out = work / f"lat.{i}"
            job = Job()
            job.program(["/bin/date", "+%s.%N"], stdout=str(out), stderr=None)
            t0 = time.time()
            client.wait_for_jobs([client.submit(job)])
            lats.append(float(out.read_text().strip()) - t0)

        job = Job()
        outs = work / "many"
        outs.mkdir(exist_ok=True)
        for i in range(jobs):
            job.program(["/bin/date", "+%s.%N"], stdout=str(outs / str(i)), stderr=None)
        t0 = time.time()
        client.wait_for_jobs([client.submit(job)])
        last = max(float(p.read_text().strip()) for p in outs.iterdir())
        total = last - t0
    print(
        f"HQ {pctl(lats, 0.5):.3f} {pctl(lats, 0.99):.3f} {total:.3f} "
        f"{jobs / total:.1f} {version('hyperqueue')}"
    )


if __name__ == "__main__":
    os.environ.setdefault("RUST_LOG", "error")
    main()
