Executable           	= ./x_dagman_node-ret.pl
Universe             	= vanilla
log = job_dagman_maxprescripts-node.log
Notification         	= NEVER
getenv = CONDOR*,PATH
output = job_dagman_maxprescripts-node.out
error = job_dagman_maxprescripts-node.err
Queue

