executable		= job_dagman_retry-B-nodeB.pl
arguments		=
universe		= scheduler
notification	= NEVER
output			= job_dagman_retry-B-nodeB.out
error			= job_dagman_retry-B-nodeB.err
log				= job_dagman_retry-B-nodeB.log
queue
