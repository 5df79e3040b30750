#! /usr/bin/env perl

print "$ARGV[0] post script\n";

