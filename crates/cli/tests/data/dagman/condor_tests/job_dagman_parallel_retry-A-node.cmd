universe = scheduler
executable = job_dagman_parallel_retry-A-node.pl
output = job_dagman_parallel_retry-A-node.out
error = job_dagman_parallel_retry-A-node.err
log = job_dagman_parallel_retry-A-node.log
arguments = 0
queue 2
arguments = 1
queue
