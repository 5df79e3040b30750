executable           	= /bin/echo
arguments		= OK
universe             	= scheduler
notification         	= NEVER
#getenv = CONDOR*,PATH
output			= job_dagman_gt1957.out
error			= job_dagman_gt1957.err
log			= job_dagman_gt1957.dag.nodes.log
queue
