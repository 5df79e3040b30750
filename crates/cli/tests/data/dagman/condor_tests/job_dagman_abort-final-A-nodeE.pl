#!/usr/bin/env perl

print "  DAG_STATUS=$ARGV[2]\n";
print "  FAILED_COUNT=$ARGV[3]\n";

print "$ARGV[0]\n";

exit($ARGV[1]);
