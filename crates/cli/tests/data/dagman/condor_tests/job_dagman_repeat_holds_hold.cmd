executable = x_sleep.pl
arguments = 60
universe = vanilla
output = job_dagman_repeat_holds_hold.out
error = job_dagman_repeat_holds_hold.err
log = job_dagman_repeat_holds_hold.log
queue 5
