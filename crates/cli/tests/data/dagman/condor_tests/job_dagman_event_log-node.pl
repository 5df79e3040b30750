#! /usr/bin/env perl

print "Node ? succeeded\n";
