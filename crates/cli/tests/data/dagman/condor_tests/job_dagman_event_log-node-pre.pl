#! /usr/bin/env perl

	print "Node ? pre script succeeded\n";
