#! /usr/bin/env perl

	print "Node B? pre script succeeded\n";
