#! /usr/bin/env perl

print "Node A succeeded\n";
