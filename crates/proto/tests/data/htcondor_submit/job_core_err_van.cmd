universe = vanilla
executable = job_core_err.pl
log = job_core_err_van.log
output = job_core_err_van.out
error = job_core_err_van.err
getenv=true
Notification = NEVER
queue


