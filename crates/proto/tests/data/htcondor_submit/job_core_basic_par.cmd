universe   = parallel
executable = /bin/sleep
output = job_core_basic_par4814.out
error = job_core_basic_par4814.err
log = job_core_basic_par4814.log
arguments = 30
Notification = NEVER
machine_count = 4
queue

