Executable           	= ./x_dagman_node-ret.pl
Universe             	= vanilla
log = job_dagman_basic-node.log
Notification         	= NEVER
getenv = CONDOR*,PATH
output = job_dagman_basic-node.out
error = job_dagman_basic-node.err
Queue

