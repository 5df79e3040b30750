universe   = scheduler
executable = /bin/sleep
log = job_core_hold_sched.log
output = job_core_hold_sched.out
error = job_core_hold_sched.err
hold	= True
Notification = NEVER
arguments  = 3
queue

