# This is supposed to cause condor_submit to fail.
queue
