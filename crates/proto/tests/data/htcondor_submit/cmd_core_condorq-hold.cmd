universe   = vanilla
executable = x_sleep.pl
log = cmd_core_condorq-hold.log
output = cmd_core_condorq-hold.out
error = cmd_core_condorq-hold.err
Notification = NEVER
arguments  = 40
queue

