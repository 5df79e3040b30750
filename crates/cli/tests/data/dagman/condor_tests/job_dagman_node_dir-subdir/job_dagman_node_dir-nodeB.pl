#! /usr/bin/env perl

print "$ARGV[0]\n";
