#! /usr/bin/env perl

if ($ARGV[0]) {
	print "Node B? post script failed\n";
} else {
	print "Node B? post script succeeded\n";
}

exit($ARGV[0]);
