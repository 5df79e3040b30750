universe   = vanilla
executable = x_simpletest.pl
log = x_simpletest.log
output = x_simpletest.out
error = x_simpletest.err
Notification = NEVER
arguments  = 0
queue

