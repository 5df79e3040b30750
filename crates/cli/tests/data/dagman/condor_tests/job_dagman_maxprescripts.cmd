Executable           	= ./job_dagman_maxprescripts-checkin.pl
Universe             	= vanilla
log = job_dagman_maxprescripts.log
Notification         	= NEVER
getenv = CONDOR*,PATH
arguments				= job_dagman_maxprescripts-srvr-log.log
output = job_dagman_maxprescripts.out
error = job_dagman_maxprescripts.err
Queue

