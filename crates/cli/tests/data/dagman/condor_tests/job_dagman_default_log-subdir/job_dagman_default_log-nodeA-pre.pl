#! /usr/bin/env perl

	print "Node A pre script succeeded\n";
