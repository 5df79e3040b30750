executable		= job_dagman_retry-B-nodeD.pl
arguments		=
universe		= scheduler
notification	= NEVER
output			= job_dagman_retry-B-nodeD.out
error			= job_dagman_retry-B-nodeD.err
log				= job_dagman_retry-B-nodeD.log
queue
