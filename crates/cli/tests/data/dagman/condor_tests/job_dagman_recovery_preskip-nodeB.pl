#! /usr/bin/env perl

print "Node B should never run\n";
exit 1
