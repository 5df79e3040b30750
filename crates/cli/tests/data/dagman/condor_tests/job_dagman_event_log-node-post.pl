#! /usr/bin/env perl

	print "Node ? post script succeeded\n";
