executable   = ./job_dagman_rescue-A-node.pl
universe     = scheduler
output       = job_dagman_rescue-A-node.out
error        = job_dagman_rescue-A-node.err
log          = job_dagman_rescue-A-node.log
Notification = NEVER
queue
