executable   = ./job_dagman_retry_recovery-nodeA.pl
universe     = scheduler
output       = job_dagman_retry_recovery-nodeA.out
error        = job_dagman_retry_recovery-nodeA.err
log          = job_dagman_retry_recovery.log
Notification = NEVER
queue
