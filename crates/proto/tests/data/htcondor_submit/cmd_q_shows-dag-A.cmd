executable = cmd_q_shows-dag.sh
universe = vanilla
arguments = $(JOB) 120
output = cmd_q_shows-dag-A.out
error = cmd_q_shows-dag-A.out
log = cmd_q_shows-dag.log
queue
