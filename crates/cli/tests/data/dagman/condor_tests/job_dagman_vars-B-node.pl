#! /usr/bin/env perl

foreach $arg (@ARGV) {
	print "<$arg> ";
}
print "\n";
