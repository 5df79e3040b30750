
Executable           = x_sleep.pl
Universe             = vanilla
log = job_core_copytospool_van.log
output = job_core_copytospool_van.out
error = job_core_copytospool_van.err
hold = true
copy_to_spool = true
arguments = 3600
Notification         = NEVER
getenv               = false
Queue
