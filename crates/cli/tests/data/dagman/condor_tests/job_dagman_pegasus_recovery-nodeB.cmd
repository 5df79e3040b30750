executable   = ./job_dagman_pegasus_recovery-nodeB.pl
universe     = scheduler
output       = job_dagman_pegasus_recovery-nodeB.out
error        = job_dagman_pegasus_recovery-nodeB.err
log          = job_dagman_pegasus_recovery-nodeB.log
Notification = NEVER
queue
