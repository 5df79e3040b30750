#! /usr/bin/env perl

print "Node $ARGV[0] succeeded\n";
