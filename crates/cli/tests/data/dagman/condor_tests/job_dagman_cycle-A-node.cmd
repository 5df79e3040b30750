universe     = vanilla
executable   = ./x_sleep.pl
arguments    = 1
Notification = NEVER
queue
