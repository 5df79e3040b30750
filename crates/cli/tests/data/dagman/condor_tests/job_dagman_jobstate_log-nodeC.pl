#! /usr/bin/env perl

print "Node C job succeeding...\n";
