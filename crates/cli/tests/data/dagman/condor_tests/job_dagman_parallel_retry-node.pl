#! /usr/bin/env perl

sleep($ARGV[0]);
exit (1);
