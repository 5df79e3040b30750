universe   = vanilla
executable = x_sleep.pl
log = cmd_q_shows-analyze.log
output = cmd_q_shows-analyze.out
error = cmd_q_shows-analyze.err
Notification = NEVER
requirements = false
arguments  = 0
queue

