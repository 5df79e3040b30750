executable   = job_dagman_default_log-nodeA.pl
universe     = local
output       = job_dagman_default_log-nodeA.out
error        = job_dagman_default_log-nodeA.err
# No log file specified; default should be used.
Notification = NEVER
queue
