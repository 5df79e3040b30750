executable   = ./job_dagman_retry_recovery-nodeB.pl
universe     = scheduler
output       = job_dagman_retry_recovery-nodeB.out
error        = job_dagman_retry_recovery-nodeB.err
log          = job_dagman_retry_recovery.log
Notification = NEVER
queue
