executable   = ./job_dagman_rescue-A-nodeUA.pl
universe     = scheduler
output       = job_dagman_rescue-A-nodeUA.out
error        = job_dagman_rescue-A-nodeUA.err
log          = job_dagman_rescue-A-nodeU.log
Notification = NEVER
queue
