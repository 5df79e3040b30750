#! /usr/bin/env perl

print "@ARGV\n";
