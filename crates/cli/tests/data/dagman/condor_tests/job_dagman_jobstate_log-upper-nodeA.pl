#! /usr/bin/env perl

system("touch job_dagman_jobstate_log-nodeD.fails");

print "Node A job succeeded\n";
