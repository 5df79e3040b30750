universe   = vanilla
executable = x_sleep.pl
log = cmd_q_shows-hold.log
output = cmd_q_shows-hold.out
error = cmd_q_shows-hold.err
Notification = NEVER
arguments  = 40
queue

