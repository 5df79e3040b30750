universe   = vanilla
executable = x_dumpcore.exe
output = job_core_corefiles_van.out
error = job_core_corefiles_van.err
log = job_core_corefiles_van.log
coresize = 400000
should_transfer_files   = YES
when_to_transfer_output = ON_EXIT_OR_EVICT
Notification = NEVER
queue

