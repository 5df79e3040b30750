#! /usr/bin/env perl

print "Node B* succeeded\n";
