#! /usr/bin/env perl

print "Job fails...\n";

exit 1;
