#! /usr/bin/env perl

if ($ARGV[0]) {
	print "Node B2 post script failed\n";
	exit(1);
} else {
	print "Node B2 post script succeeded\n";
}
