executable = /bin/bash
output = job_dagman_always_run_post-E_A.out
error = job_dagman_always_run_post-E_A.err
arguments = "-c 'echo ''OK we are running''; exit 0'"
queue
