"""joblib-htcondor (PyPI, written for ``htcondor2``): joblib's
``Parallel`` with its HTCondor backend runs five tasks as five jobs on
the pool. The backend pickles each task into a directory every host
shares and reads the results back from it (the pool's stations are on
this machine, so its file system is shared; the directory is outside
``/tmp``, which each guest has its own of, and writable by the guests'
slot accounts)."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("joblib_htcondor")

SCRIPT = textwrap.dedent(
    """
    import os, sys
    from operator import neg
    from joblib import Parallel, delayed, parallel_config
    from joblib_htcondor import register_htcondor

    register_htcondor()
    with parallel_config(
        backend="htcondor",
        n_jobs=-1,
        request_cpus=1,
        request_memory="256Mb",
        request_disk="100Mb",
        shared_data_dir=sys.argv[1],
        poll_interval=1,
    ):
        out = Parallel()(delayed(neg)(i + 1) for i in range(5))
    print("RESULT", out)
    """
)


@pytest.mark.skip(
    reason="a guest runs as its slot's account, whose files in the shared directory "
    "(task-N_out.pickle, mode 0600) its submitter cannot read: joblib-htcondor assumes "
    "jobs run as the submitting user on a shared file system"
)
def test_joblib_parallel_runs_its_tasks_as_jobs(workdir):
    shared = os.environ.get("GLEANER_SHARED_DIR")
    if not shared:
        pytest.skip("needs GLEANER_SHARED_DIR: a directory outside /tmp every slot account may write")
    with open("run.py", "w") as f:
        f.write(SCRIPT)
    # Files the guests write there must be removable by this user, and
    # theirs by them: no umask.
    done = subprocess.run(
        [sys.executable, "run.py", os.path.join(shared, "joblib")],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=lambda: os.umask(0),
    )
    report = done.stdout + done.stderr
    print(report[-4000:])
    assert done.returncode == 0, report[-4000:]
    assert "RESULT [-1, -2, -3, -4, -5]" in done.stdout, report[-4000:]
