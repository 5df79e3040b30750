#! /usr/bin/env perl

$nodename = shift;

my $file = "job_dagman_noop_node-$nodename.works";

print "$nodename succeeded\n";
