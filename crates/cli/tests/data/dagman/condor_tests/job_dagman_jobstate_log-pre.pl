#! /usr/bin/env perl

print "$ARGV[0] pre script\n";

