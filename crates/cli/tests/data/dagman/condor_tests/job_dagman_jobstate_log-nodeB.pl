#! /usr/bin/env perl

print "Node B job succeeding...\n";
