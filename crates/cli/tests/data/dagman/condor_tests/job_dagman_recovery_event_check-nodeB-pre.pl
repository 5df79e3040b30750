#! /usr/bin/env perl

print "Node B2 pre script succeeded\n";
